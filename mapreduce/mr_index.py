"""MRIndex: record blocks -> postings (term -> [(doc_num, tf), ...]) and doc lengths.

The mapper counts terms per document in memory (in-mapper combining: one
pair per distinct term per document, not one per occurrence), so the
shuffle carries the size of the postings, not the size of the text. The
reducer sorts each term's postings by doc_num; its length is the term's df.

Output (JSON key, JSON value), one job, two kinds of row told apart by a tag:

    ["term", "cat"]  ->  [[0, 2], [7, 1]]      postings, ascending doc_num
    ["len", 7]       ->  12                    number of terms in doc 7

The text indexed per document is ``title + " " + description + " " + text``
through ``services.text.analyze.analyze``, the same analyzer queries use.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator

from mrjob.step import MRStep

from mapreduce.record_job import DuplicateDocumentError, RecordBlockJob
from services.storage.records import Record
from services.text.analyze import analyze

TERM = "term"
LENGTH = "len"


def indexed_text(record: Record) -> str:
    return f"{record.title} {record.description} {record.text}"


def document_terms(record: Record) -> tuple[int, Counter[str]]:
    """(number of terms, term -> tf) of one record."""
    terms = analyze(indexed_text(record))
    return len(terms), Counter(terms)


def sorted_postings(postings: Iterable[tuple[int, int]]) -> list[list[int]]:
    """Postings of one term, ascending doc_num (a doc appears once: checked by the length rows)."""
    return sorted([int(doc), int(tf)] for doc, tf in postings)


def single_length(doc_num: int, lengths: Iterable[int]) -> int:
    values = list(lengths)
    if len(values) != 1:
        raise DuplicateDocumentError(
            f"doc_num {doc_num} occurs in {len(values)} records: the manifest must list each "
            "record block once, and each document must live in exactly one block"
        )
    return values[0]


class MRIndex(RecordBlockJob):
    """Term statistics and postings from record blocks (input: block names, one a line)."""

    def steps(self) -> list[MRStep]:
        return [MRStep(mapper=self.mapper_terms, reducer=self.reducer_postings)]

    def mapper_terms(self, _key: None, line: str) -> Iterator[tuple[list, object]]:
        for record in self.block_records(line):
            length, counts = document_terms(record)
            yield [LENGTH, record.doc_num], length
            for term, tf in counts.items():
                yield [TERM, term], [record.doc_num, tf]
            self.increment_counter("index", "postings", len(counts))

    def reducer_postings(self, key: list, values: Iterable) -> Iterator[tuple[list, object]]:
        kind, name = key
        if kind == TERM:
            self.increment_counter("index", "terms")
            yield key, sorted_postings(values)
        else:
            yield key, single_length(name, values)


if __name__ == "__main__":
    MRIndex.run()
