"""MRIndex's output read back: the rows of the job's file, gathered into the columns a
segment is built from (``segment_arrays``), or, for a full build, everything but the terms'
postings, which ``JobTerms`` names by where they lie in the file, read a term range at a time
(``segment_stream``): a build then never holds every term's postings text at once.

The row kinds and keys are the job's (``mapreduce.mr_index``); a row this side does not
know means the job and the publisher disagree, and is an error, never skipped.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pybase64

from mapreduce.mr_index import (
    FORMS,
    FORMS_KEY,
    LANGUAGE,
    LANGUAGE_KEY,
    LENGTH,
    LENGTH_KEY,
    TERM,
    TERM_KEY,
    VOCABULARY,
    VOCABULARY_KEY,
)
from mapreduce.postings_wire import read_regions
from services.indexing.errors import PublishError


@dataclass
class IndexColumns:
    """MRIndex output: each term's postings on the wire, and each document's field lengths."""

    chunks: dict[bytes, bytes | str] = field(default_factory=dict)  # UTF-8 term -> wire text
    lengths: dict[int, list[int]] = field(default_factory=dict)
    forms: dict[int, bytes] = field(default_factory=dict)  # doc -> Bloom filter of its word forms
    vocabulary: dict[str, int] = field(default_factory=dict)  # written form -> documents holding it
    languages: dict[str, int] = field(default_factory=dict)  # analysis -> pages analyzed so


def collect_index_rows(rows: Iterable[tuple[Any, Any]]) -> IndexColumns:
    """Gather MRIndex rows (``("t", term) -> wire text``, ``("l", doc) -> field lengths``),
    as ``read_index_rows`` gives them; the texts are decoded all at once by
    ``segment_arrays``."""
    cols = IndexColumns()
    for (kind, name), value in rows:
        if kind == TERM:
            key = name.encode("utf-8")
            if key in cols.chunks:
                raise PublishError(f"term {name!r} came twice from MRIndex: job and publisher disagree")
            cols.chunks[key] = value
        else:
            collect_row(cols, (kind, name), value)
    return cols


def collect_row(cols: IndexColumns, row: tuple[str, Any], value: Any) -> None:
    """One row that is not a term's into ``cols``."""
    kind, name = row
    if kind == LENGTH:
        cols.lengths[int(name)] = value
    elif kind == FORMS:
        cols.forms[int(name)] = value
    elif kind == VOCABULARY:
        cols.vocabulary[name] = cols.vocabulary.get(name, 0) + int(value)
    elif kind == LANGUAGE:
        cols.languages[name] = cols.languages.get(name, 0) + int(value)
    else:
        raise PublishError(f"unexpected MRIndex row kind {kind!r}: job and publisher disagree")


def read_index_rows(path: Path) -> Iterator[tuple[tuple[str, Any], Any]]:
    """MRIndex's output file as ``((kind, name), value)``: ``(("t", term), wire text)`` and
    ``(("l", doc), [title, body, anchor, url, meta, nav])``."""
    term_key = TERM_KEY
    with Path(path).open("rb") as fh:
        for line in fh:
            key, _, value = line.rstrip(b"\r\n").partition(b"\t")
            if key.startswith(term_key):
                yield (TERM, key[len(term_key) :].decode("utf-8")), value
            elif key:
                yield parse_other_row(key, value, path)


def parse_other_row(key: bytes, value: bytes, path: Path) -> tuple[tuple[str, Any], Any]:
    """A row that is not a term's, parsed."""
    if key.startswith(LENGTH_KEY):
        return (LENGTH, int(key[len(LENGTH_KEY) :])), [int(x) for x in value.split(b",")]
    if key.startswith(FORMS_KEY):
        return (FORMS, int(key[len(FORMS_KEY) :])), pybase64.b64decode(value)
    if key.startswith(VOCABULARY_KEY):
        return (VOCABULARY, key[len(VOCABULARY_KEY) :].decode("utf-8")), int(value)
    if key.startswith(LANGUAGE_KEY):
        return (LANGUAGE, key[len(LANGUAGE_KEY) :].decode("ascii")), int(value)
    raise PublishError(f"{path}: unexpected MRIndex row {key[:40]!r}: job and publisher disagree")


@dataclass(frozen=True)
class JobTerms:
    """The terms of an MRIndex output file, sorted by their UTF-8 bytes, and where each one's
    postings text lies in the file: read a range of terms at a time (``texts``), so what a
    build holds of them is the terms and two integers each, not the texts (about 19 bytes a
    posting in base64, 3.7 GB at a million documents)."""

    path: Path
    terms: list[bytes]  # UTF-8, sorted by bytes
    starts: np.ndarray  # int64: where each term's text starts in the file
    sizes: np.ndarray  # int64: its length in bytes

    def texts(self, lo: int, hi: int) -> list[bytes]:
        """The postings texts of terms ``lo .. hi - 1``, in order."""
        fd = os.open(self.path, os.O_RDONLY)
        try:
            return [
                os.pread(fd, size, start)
                for start, size in zip(self.starts[lo:hi].tolist(), self.sizes[lo:hi].tolist(), strict=True)
            ]
        finally:
            os.close(fd)

    def ranges(self, budget: int) -> list[tuple[int, int]]:
        """Term ranges ``[lo, hi)`` of about ``budget`` bytes of postings text each (a term
        above it is a range of its own); none for no terms."""
        return term_ranges(self.sizes, budget)

    def postings(self, lo: int, hi: int) -> TermPostings:
        """The postings of terms ``lo .. hi - 1``, read and decoded."""
        try:
            regions = read_regions(list(self.texts(lo, hi)))
            return regions.per_text, regions.docs(), regions.tfs(), regions.counts(), regions.positions()
        except ValueError as exc:  # also binascii.Error
            raise PublishError(
                f"{self.path}: MRIndex postings cannot be read ({exc}): job and publisher disagree, "
                "or the job output is truncated"
            ) from exc


# (postings per term, docs, field frequencies (postings x fields), position counts, positions)
TermPostings = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


class TermSource(Protocol):
    """A job output's terms in byte order, decoded a range at a time (``segment_stream``):
    ``JobTerms`` (the reducer's output, a row a term) or ``job_pieces.JobPieces`` (a map-only
    job's, a row a term and flush)."""

    @property
    def terms(self) -> list[bytes]: ...

    @property
    def sizes(self) -> np.ndarray: ...  # int64: each term's postings text in bytes

    def ranges(self, budget: int) -> list[tuple[int, int]]: ...

    def postings(self, lo: int, hi: int) -> TermPostings: ...


def term_ranges(sizes: np.ndarray, budget: int) -> list[tuple[int, int]]:
    """Ranges ``[lo, hi)`` of terms of ``sizes`` bytes each, about ``budget`` bytes a range (a
    term above it is a range of its own); none for no terms."""
    ends = np.cumsum(sizes)
    total = int(ends[-1]) if ends.shape[0] else 0
    cuts = np.searchsorted(ends, np.arange(budget, total, max(budget, 1)), side="left") + 1
    edges = np.unique(np.concatenate([[0], cuts, [sizes.shape[0]]])).astype(np.int64).tolist()
    return list(zip(edges[:-1], edges[1:], strict=True)) if sizes.shape[0] else []


def index_columns(path: Path) -> tuple[IndexColumns, JobTerms]:
    """MRIndex's output file as the columns of every row but the terms' (``chunks`` left
    empty), and the terms by where their texts lie (``JobTerms``)."""
    cols = IndexColumns()
    terms: list[bytes] = []
    starts: list[int] = []
    sizes: list[int] = []
    at = 0
    with Path(path).open("rb") as fh:
        for line in fh:
            key, tab, value = line.rstrip(b"\r\n").partition(b"\t")
            if key.startswith(TERM_KEY):
                terms.append(key[len(TERM_KEY) :])
                starts.append(at + len(key) + len(tab))
                sizes.append(len(value))
            elif key:
                collect_row(cols, *parse_other_row(key, value, path))
            at += len(line)
    order = sorted(range(len(terms)), key=terms.__getitem__)
    ordered = [terms[i] for i in order]
    twice = next((a for a, b in zip(ordered, ordered[1:], strict=False) if a == b), None)
    if twice is not None:
        name = twice.decode("utf-8")
        raise PublishError(f"term {name!r} came twice from MRIndex: job and publisher disagree")
    index = np.array(order, dtype=np.int64)
    return cols, JobTerms(
        Path(path),
        ordered,
        np.array(starts, dtype=np.int64)[index] if order else np.zeros(0, np.int64),
        np.array(sizes, dtype=np.int64)[index] if order else np.zeros(0, np.int64),
    )
