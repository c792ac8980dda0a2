"""A map-only MRIndex's output read back (``mr_index --map-only``, a full build on this
machine's runners): one file a map task, holding for each flush that flush's rows, its terms
in byte order, one *piece* (a row) a term. A term's postings are its pieces joined in document
order, as the reducer would have joined them (``postings_wire.join_decoded``).

``piece_columns`` reads the files once, for every row but the terms' (the lengths of a
document's page and of its anchors merged, the vocabulary and language counts summed, as the
reducer did) and for where each piece lies: its term (an id of the distinct terms), its file,
its place and its size, in compact arrays. Then ``JobPieces`` reads a range of terms at a time
(``segment_stream``), each piece by place: what a build holds is the distinct terms and about
20 bytes a piece, never the pieces' texts (a k-way merge of the files' sorted runs, done by
sorting the places rather than by reading the texts in merged order).

A file whose last row has no newline (a task's output cut short) is refused, naming the file;
so is a piece whose text is not whole base64 regions, or whose regions say more than it holds.
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mapreduce.mr_index import ANCHORS, FORMS, LENGTH_KEY, PAGE, TERM_KEY
from mapreduce.postings_wire import join_decoded, read_regions
from services.indexing.errors import PublishError
from services.indexing.index_rows import IndexColumns, TermPostings, collect_row, parse_other_row, term_ranges

_PIECE_QUANTUM = 16  # a region is whole 12-byte groups: 16 base64 characters each


@dataclass(frozen=True)
class JobPieces:
    """The distinct terms of a map-only job's files, sorted by their UTF-8 bytes, and where
    each one's pieces lie (``piece_bounds[i] .. piece_bounds[i + 1] - 1``: term i's, in the
    order of the files and of the rows)."""

    paths: tuple[Path, ...]
    terms: list[bytes]
    sizes: np.ndarray  # int64: each term's postings text, its pieces' summed
    piece_bounds: np.ndarray  # int64 [terms + 1]
    piece_files: np.ndarray  # int32: an index into ``paths``
    piece_starts: np.ndarray  # int64: where the piece's text starts in its file
    piece_sizes: np.ndarray  # int64: its length in bytes

    def ranges(self, budget: int) -> list[tuple[int, int]]:
        """Term ranges ``[lo, hi)`` of about ``budget`` bytes of postings text each."""
        return term_ranges(self.sizes, budget)

    def texts(self, lo: int, hi: int) -> list[bytes]:
        """The pieces' texts of terms ``lo .. hi - 1``, term by term."""
        a, b = int(self.piece_bounds[lo]), int(self.piece_bounds[hi])
        fds = [os.open(path, os.O_RDONLY) for path in self.paths]
        try:
            return [
                os.pread(fds[f], size, start)
                for f, start, size in zip(
                    self.piece_files[a:b].tolist(),
                    self.piece_starts[a:b].tolist(),
                    self.piece_sizes[a:b].tolist(),
                    strict=True,
                )
            ]
        finally:
            for fd in fds:
                os.close(fd)

    def postings(self, lo: int, hi: int) -> TermPostings:
        """The postings of terms ``lo .. hi - 1``: their pieces read, decoded and joined."""
        texts = self.texts(lo, hi)
        try:
            regions = read_regions(list(texts))
            decoded = regions.docs(), regions.tfs(), regions.counts(), regions.positions()
        except ValueError as exc:  # also binascii.Error
            raise self._unreadable(lo, hi, texts, exc) from exc
        return join_decoded(np.diff(self.piece_bounds[lo : hi + 1]), regions.per_text, *decoded)

    def _unreadable(self, lo: int, hi: int, texts: Sequence[bytes], exc: ValueError) -> PublishError:
        """The error for a range that cannot be decoded, naming the first piece that cannot."""
        first = int(self.piece_bounds[lo])
        for i, text in enumerate(texts):
            try:
                read_regions([text])
            except ValueError as piece_exc:
                at = first + i
                term = self.terms[int(np.searchsorted(self.piece_bounds, at, side="right")) - 1]
                return PublishError(
                    f"{self.paths[int(self.piece_files[at])]}: the postings of term "
                    f"{term.decode('utf-8', 'replace')!r} at byte {int(self.piece_starts[at])} cannot be "
                    f"read ({piece_exc}): the map task's output is damaged or job and publisher "
                    "disagree; build again"
                )
        return PublishError(f"MRIndex postings of terms {lo}..{hi - 1} cannot be read ({exc})")


def piece_columns(paths: Sequence[Path]) -> tuple[IndexColumns, JobPieces]:
    """A map-only job's output files as the columns of every row but the terms' (``chunks``
    left empty) and the terms by where their pieces lie (``JobPieces``)."""
    cols = IndexColumns()
    pages: dict[int, list[int]] = {}  # doc -> title, body, url, meta, nav (its page's row)
    anchors: dict[int, int] = {}  # doc -> anchor length, summed over its anchor rows
    ids: dict[bytes, int] = {}  # distinct term -> id, in order of first sight
    piece_ids, starts, sizes = array("q"), array("q"), array("q")
    per_file: list[int] = []
    for path in paths:
        before = len(piece_ids)
        at = 0
        with Path(path).open("rb") as fh:
            for line in fh:
                if line[-1:] != b"\n":
                    raise PublishError(
                        f"{path}: its last row is cut off (no newline at byte {at + len(line)}): "
                        "the map task's output is truncated; build again"
                    )
                key, tab, value = line.rstrip(b"\r\n").partition(b"\t")
                if key.startswith(TERM_KEY):
                    term = key[len(TERM_KEY) :]
                    if len(value) % _PIECE_QUANTUM:
                        raise PublishError(
                            f"{path}: the postings of term {term.decode('utf-8', 'replace')!r} at byte "
                            f"{at} are {len(value)} characters, not whole regions: the map task's "
                            "output is damaged or job and publisher disagree; build again"
                        )
                    piece_ids.append(ids.setdefault(term, len(ids)))
                    starts.append(at + len(key) + len(tab))
                    sizes.append(len(value))
                elif key.startswith(LENGTH_KEY):
                    _length_row(path, int(key[len(LENGTH_KEY) :]), value, pages, anchors)
                elif key:
                    row, parsed = parse_other_row(key, value, Path(path))
                    if row[0] == FORMS and row[1] in cols.forms:
                        raise PublishError(f"{path}: doc_num {row[1]}'s word forms came from two map tasks")
                    collect_row(cols, row, parsed)
                at += len(line)
        per_file.append(len(piece_ids) - before)
    for doc, (title, body, url, meta, nav) in pages.items():
        cols.lengths[doc] = [title, body, anchors.pop(doc, 0), url, meta, nav]
    for doc, anchor in anchors.items():  # anchors of a document whose record no task read
        cols.lengths[doc] = [0, 0, anchor, 0, 0, 0]
    return cols, _pieces(paths, ids, piece_ids, starts, sizes, per_file)


def _length_row(
    path: Path, doc: int, value: bytes, pages: dict[int, list[int]], anchors: dict[int, int]
) -> None:
    """A map task's lengths row of ``doc``: its page's (``m,...``) or its anchors' (``a,n``)."""
    tag, *numbers = value.split(b",")
    if tag == PAGE and len(numbers) == 5:
        if doc in pages:
            raise PublishError(
                f"doc_num {doc} occurs in two records ({path}): the manifest must list each "
                "record block once, and each document must live in exactly one block"
            )
        pages[doc] = [int(x) for x in numbers]
    elif tag == ANCHORS and len(numbers) == 1:
        anchors[doc] = anchors.get(doc, 0) + int(numbers[0])
    else:
        raise PublishError(
            f"{path}: lengths row of doc_num {doc} is {value[:40]!r}, not a map task's "
            "(m,<five lengths> or a,<anchor length>): job and publisher disagree"
        )


def _pieces(
    paths: Sequence[Path],
    ids: dict[bytes, int],
    piece_ids: array[int],
    starts: array[int],
    sizes: array[int],
    per_file: list[int],
) -> JobPieces:
    """The pieces' places grouped by term, the terms in byte order (each term's pieces in the
    order they were read: by file, then by place)."""
    seen = list(ids)  # id -> term
    ranked = sorted(range(len(seen)), key=seen.__getitem__)
    rank = np.empty(len(seen), dtype=np.int64)
    rank[np.array(ranked, dtype=np.int64)] = np.arange(len(seen), dtype=np.int64)
    piece_rank = rank[np.frombuffer(piece_ids, dtype=np.int64)] if piece_ids else np.zeros(0, np.int64)
    order = np.argsort(piece_rank, kind="stable")
    files = np.repeat(np.arange(len(per_file), dtype=np.int32), per_file)
    piece_sizes = np.frombuffer(sizes, dtype=np.int64)[order] if sizes else np.zeros(0, np.int64)
    bounds = np.concatenate([[0], np.cumsum(np.bincount(piece_rank, minlength=len(seen)))]).astype(np.int64)
    size_ends = np.concatenate([[0], np.cumsum(piece_sizes)])
    return JobPieces(
        paths=tuple(Path(p) for p in paths),
        terms=[seen[i] for i in ranked],
        sizes=(size_ends[bounds[1:]] - size_ends[bounds[:-1]]).astype(np.int64),
        piece_bounds=bounds,
        piece_files=files[order],
        piece_starts=np.frombuffer(starts, dtype=np.int64)[order] if starts else np.zeros(0, np.int64),
        piece_sizes=piece_sizes,
    )
