"""MRIndex: record blocks (+ in-link anchor text) -> field postings with positions.

Input: the manifest (one record block a line, ``mapreduce.record_job``) and,
optionally, MRLinkGraph's output as a second input file, of which it reads
the ``@anchor`` lines (in-link anchor text) and skips the adjacency rows.

The mapper analyses each document with ``services.text.analysis.analyze`` (the
analyzer queries use) into its six fields (``mapreduce.postings``) and
combines in memory across the documents its task reads: one row per
distinct term per flush, holding that term's postings in column form, never
a row per token or per (term, document). The buffer is flushed when it holds
``FLUSH_TOKENS`` tokens (checked after each block), so a task's memory stays
bounded. The reducer joins a term's pieces into one posting list, ascending
by document (``mapreduce.postings_join.join_pieces``); its length is the
term's document frequency.

With ``--map-only`` (a full build on this machine's runners: ``services.indexing.build``)
the job has no reducer: each map task's file is its output, every flush's terms in byte
order, and the publisher joins each term's pieces itself (``services.indexing.job_pieces``),
sums the vocabulary and language counts and merges a document's page and anchor lengths
(``merge_lengths``). It saves the shuffle's sort of every row, the split and the reducers,
whose output the publisher read again anyway (docs/benchmarks.md, "Issue 31: a map-only
index job"). On EMR the reducer stays: there the sort and the joins run on the cluster's
nodes, and its output is one row a term, fetched from S3 as parts.

Rows are raw bytes (mrjob's BytesProtocol: no JSON to write or parse), two
kinds told apart by the key's tag::

    t:flow  ->  <base64 regions of the term's postings>            (mapreduce.postings_wire)
    l:7     ->  m,<title>,<body>,<url>,<meta>,<nav> | a,<anchor>   (map output: page or anchor lengths)
    l:7     ->  <title>,<body>,<anchor>,<url>,<meta>,<nav>          (job output)
    g:de    ->  <pages>                                             (pages analyzed in German)

Terms are runs of word characters, so no key holds a tab; keys sort as bytes
(the shuffle's sort), which puts terms in the segment's UTF-8 order.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import pybase64
from mrjob.protocol import BytesProtocol
from mrjob.step import MRStep

from mapreduce.errors import DuplicateDocumentError
from mapreduce.mr_linkgraph import ANCHOR_LINE, parse_anchor_line
from mapreduce.postings import PostingBuffer
from mapreduce.postings_join import join_pieces
from mapreduce.record_job import RecordBlockJob
from mapreduce.task_progress import TaskProgress

TERM = "t"
LENGTH = "l"
FORMS = "f"
VOCABULARY = "v"  # a written form -> documents holding it (did you mean, completions)
LANGUAGE = "g"  # an analysis (services.text.analysis.languages) -> pages analyzed so
TERM_KEY, LENGTH_KEY, FORMS_KEY, VOCABULARY_KEY, LANGUAGE_KEY = b"t:", b"l:", b"f:", b"v:", b"g:"
PAGE, ANCHORS = b"m", b"a"
# Counter of the out-links of the records indexed: none, and the build needs no link graph
# (services.indexing.link_probe).
OUT_LINKS = ("links", "out")
FLUSH_TOKENS = 8_000_000  # rough tokens (~ words, stop words included): ~ 2 blocks of 10,000 short pages


def duplicate_document(doc: int) -> DuplicateDocumentError:
    return DuplicateDocumentError(
        f"doc_num {doc} occurs in two records: the manifest must list each record block "
        "once, and each document must live in exactly one block"
    )


def merge_lengths(doc: int, values: Iterable[bytes]) -> list[int]:
    """One document's field lengths from its page row and (optionally) its anchor rows."""
    page: list[int] | None = None
    anchor = 0
    for value in values:
        tag, *numbers = value.split(b",")
        if tag == PAGE:
            if page is not None:  # two map tasks read it
                raise duplicate_document(doc)
            page = [int(x) for x in numbers]
        else:
            anchor += int(numbers[0])
    if page is None:  # anchors of a document whose record the manifest does not list
        return [0, 0, anchor, 0, 0, 0]
    title, body, url, meta, nav = page
    return [title, body, anchor, url, meta, nav]


class MRIndex(RecordBlockJob):
    """Field postings with positions (input: manifest, plus MRLinkGraph output when given)."""

    INTERNAL_PROTOCOL = BytesProtocol
    OUTPUT_PROTOCOL = BytesProtocol

    def configure_args(self) -> None:
        super().configure_args()
        self.add_passthru_arg(
            "--map-only",
            action="store_true",
            default=False,
            help="no reducer: each map task's output is the job's; the publisher joins the pieces",
        )
        self.add_passthru_arg(
            "--progress-dir",
            default="",
            help="a folder where each task writes the records it has read so far (mapreduce.task_progress)",
        )
        self.add_passthru_arg(
            "--compiled-tokens",
            action="store_true",
            default=False,
            help="number rough tokens with the numba kernel (where its cache outlives the job)",
        )

    def steps(self) -> list[MRStep]:
        if self.options.map_only:
            return [
                MRStep(mapper_init=self.mapper_init, mapper=self.mapper_terms, mapper_final=self.mapper_final)
            ]
        return [
            MRStep(
                mapper_init=self.mapper_init,
                mapper=self.mapper_terms,
                mapper_final=self.mapper_final,
                reducer=self.reducer_postings,
                reducer_final=self.flush_counts,
            )
        ]

    def mapper_init(self) -> None:
        self.buffer = PostingBuffer(compiled=self.options.compiled_tokens)
        self.pages: set[int] = set()  # doc_nums this task indexed (a duplicate is an error)
        self.progress = TaskProgress(self.options.progress_dir or None)

    def mapper_terms(self, _key: None, line: str) -> Iterator[tuple[bytes, bytes]]:
        if line.startswith(ANCHOR_LINE):
            self.buffer.add_anchor(*parse_anchor_line(line))
        elif line.partition("\t")[2].startswith("["):
            pass  # an adjacency row of the link graph's output (a manifest line has doc_nums)
        else:
            links = 0
            for record in self.block_records(line):
                if record.doc_num in self.pages:  # the buffer would merge the two silently
                    raise duplicate_document(record.doc_num)
                self.pages.add(record.doc_num)
                self.buffer.add(record)
                links += len(record.links)
            if links:
                self.increment_counter(*OUT_LINKS, links)
            self.progress.records(len(self.pages))
        if self.buffer.tokens >= FLUSH_TOKENS:
            yield from self._drain()

    def mapper_final(self) -> Iterator[tuple[bytes, bytes]]:
        yield from self._drain()
        self.progress.records(len(self.pages), final=True)

    def _drain(self) -> Iterator[tuple[bytes, bytes]]:
        for analysis, pages in self.buffer.languages.items():
            yield LANGUAGE_KEY + analysis.encode("ascii"), b"%d" % pages
        postings, lengths = self.buffer.drain()
        for doc, (title, body, anchor, url, meta, nav) in lengths.items():
            key = b"%s%d" % (LENGTH_KEY, doc)
            if title is not None:  # a page has all five
                yield key, b"%s,%d,%d,%d,%d,%d" % (PAGE, title, body or 0, url or 0, meta or 0, nav or 0)
            if anchor is not None:
                yield key, b"%s,%d" % (ANCHORS, anchor)
        for doc, forms in postings.forms.items():  # one per page: anchors have none
            yield b"%s%d" % (FORMS_KEY, doc), pybase64.b64encode(forms)
        for form, held in postings.vocabulary.items():
            yield VOCABULARY_KEY + form.encode("utf-8"), b"%d" % held
        for term, text in postings.encoded():
            yield TERM_KEY + term.encode("utf-8"), text
        self.increment_counter("index", "postings", int(postings.docs.shape[0]))

    def reducer_postings(self, key: bytes, values: Iterable[bytes]) -> Iterator[tuple[bytes, bytes]]:
        if key.startswith(TERM_KEY):
            self.count("index", "terms")
            yield key, join_pieces(list(values))
        elif key.startswith((VOCABULARY_KEY, LANGUAGE_KEY)):
            yield key, b"%d" % sum(int(v) for v in values)
        elif key.startswith(FORMS_KEY):
            pieces = list(values)
            if len(pieces) > 1:  # two map tasks indexed the page
                raise duplicate_document(int(key[len(FORMS_KEY) :]))
            yield key, pieces[0]
        else:
            lengths = merge_lengths(int(key[len(LENGTH_KEY) :]), values)
            yield key, b"%d,%d,%d,%d,%d,%d" % tuple(lengths)


if __name__ == "__main__":
    MRIndex.run()
