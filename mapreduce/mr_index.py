"""MRIndex: record blocks (+ in-link anchor text) -> field postings with positions.

Input: the manifest (one record block a line, ``mapreduce.record_job``) and,
optionally, MRLinkGraph's output as a second input file, of which it reads
the ``@anchor`` lines (in-link anchor text) and skips the adjacency rows.

The mapper analyses each document with ``services.text.analyze`` (the
analyzer queries use) into its four fields (``mapreduce.postings``) and
combines in memory across the documents its task reads: one row per
distinct term per flush, holding that term's postings in column form, never
a row per token or per (term, document). The buffer is flushed when it holds
``FLUSH_TOKENS`` tokens (checked after each block), so a task's memory stays
bounded. The reducer
merges a term's chunks into one posting list, ascending by document; its
length is the term's document frequency.

Rows are ujson (mrjob's UltraJSONProtocol: only ints and strings travel, so
nothing is lost), two kinds told apart by a tag::

    ["t", "flow"]  ->  "<base64 of the term's posting columns>"   (mapreduce.postings.Chunk)
    ["l", 7]       ->  [len_title, len_body, len_anchor, len_url]
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from mrjob.protocol import UltraJSONProtocol
from mrjob.step import MRStep

from mapreduce.mr_linkgraph import ANCHOR_LINE, parse_anchor_line
from mapreduce.postings import Chunk, PostingBuffer, merge_chunks
from mapreduce.record_job import DuplicateDocumentError, RecordBlockJob

TERM = "t"
LENGTH = "l"
PAGE, ANCHORS = "m", "a"
FLUSH_TOKENS = 5_000_000  # ~ 10,000 web pages; ~ 400 MB of Python lists at the peak


def duplicate_document(doc: int) -> DuplicateDocumentError:
    return DuplicateDocumentError(
        f"doc_num {doc} occurs in two records: the manifest must list each record block "
        "once, and each document must live in exactly one block")


def merge_lengths(doc: int, values: Iterable[list]) -> list[int]:
    """One document's field lengths from its page row and (optionally) its anchor row."""
    page: list[int] | None = None
    anchor = 0
    for value in values:
        if value[0] == PAGE:
            if page is not None:  # two map tasks read it
                raise duplicate_document(doc)
            page = value[1:]
        else:
            anchor += value[1]
    if page is None:  # anchors of a document whose record the manifest does not list
        return [0, 0, anchor, 0]
    title, body, url = page
    return [title, body, anchor, url]


class MRIndex(RecordBlockJob):
    """Field postings with positions (input: manifest, plus MRLinkGraph output when given)."""

    INTERNAL_PROTOCOL = UltraJSONProtocol
    OUTPUT_PROTOCOL = UltraJSONProtocol

    def steps(self) -> list[MRStep]:
        return [MRStep(mapper_init=self.mapper_init, mapper=self.mapper_terms,
                       mapper_final=self.mapper_final, reducer=self.reducer_postings,
                       reducer_final=self.flush_counts)]

    def mapper_init(self) -> None:
        self.buffer = PostingBuffer()
        self.pages: set[int] = set()  # doc_nums this task indexed (a duplicate is an error)

    def mapper_terms(self, _key: None, line: str) -> Iterator[tuple[list, object]]:
        if line.startswith(ANCHOR_LINE):
            self.buffer.add_anchor(*parse_anchor_line(line))
        elif line.partition("\t")[2].startswith("["):
            pass  # an adjacency row of the link graph's output (a manifest line has doc_nums)
        else:
            for record in self.block_records(line):
                if record.doc_num in self.pages:  # the buffer would merge the two silently
                    raise duplicate_document(record.doc_num)
                self.pages.add(record.doc_num)
                self.buffer.add(record)
        if self.buffer.tokens >= FLUSH_TOKENS:
            yield from self._drain()

    def mapper_final(self) -> Iterator[tuple[list, object]]:
        yield from self._drain()

    def _drain(self) -> Iterator[tuple[list, object]]:
        chunks, lengths = self.buffer.drain()
        for doc, (title, body, anchor, url) in lengths.items():
            if title is not None:
                yield [LENGTH, doc], [PAGE, title, body, url]
            if anchor is not None:
                yield [LENGTH, doc], [ANCHORS, anchor]
        postings = 0
        for term, chunk in chunks:
            postings += chunk.docs.shape[0]
            yield [TERM, term], chunk.encode()
        self.increment_counter("index", "postings", postings)

    def reducer_postings(self, key: list, values: Iterable) -> Iterator[tuple[list, object]]:
        kind, name = key
        if kind == TERM:
            self.count("index", "terms")
            chunks = list(values)
            if len(chunks) == 1:  # the term occurs in one map task's output: nothing to merge
                yield key, chunks[0]
            else:
                yield key, merge_chunks(Chunk.decode(value) for value in chunks).encode()
        else:
            yield key, merge_lengths(name, values)


if __name__ == "__main__":
    MRIndex.run()
