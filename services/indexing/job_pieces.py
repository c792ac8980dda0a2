"""A map-only MRIndex's output read back (``mr_index --map-only``, a full build on this
machine's runners): one file a map task, holding for each flush that flush's rows, its terms
in byte order, one *piece* (a row) a term. A term's postings are its pieces joined in document
order, as the reducer would have joined them (``postings_join.join_decoded``).

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

import mmap
import os
from array import array
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pybase64

from mapreduce.mr_index import ANCHORS, FORMS_KEY, LANGUAGE_KEY, LENGTH_KEY, PAGE, TERM_KEY, VOCABULARY_KEY
from mapreduce.postings_join import join_decoded
from mapreduce.postings_wire import read_regions
from services.indexing.errors import PublishError
from services.indexing.index_rows import IndexColumns, TermPostings, term_ranges

_PIECE_QUANTUM = 16  # a region is whole 12-byte groups: 16 base64 characters each
# A map task's file (~200 MB at 100,000 documents) is walked mapped; the pages behind the walk
# are given back every 32 MB, or they would count as the build's memory until the file is done.
_RELEASE_BYTES = 32 << 20


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
        with ExitStack() as stack:
            maps = [_mapped(stack, path) for path in self.paths]
            return [
                maps[f][start : start + size]
                for f, start, size in zip(
                    self.piece_files[a:b].tolist(),
                    self.piece_starts[a:b].tolist(),
                    self.piece_sizes[a:b].tolist(),
                    strict=True,
                )
            ]

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


def _mapped(stack: ExitStack, path: Path) -> mmap.mmap | bytes:
    """``path`` mapped for reading until ``stack`` closes (an empty file: no bytes to map)."""
    with path.open("rb") as fh:
        if not os.fstat(fh.fileno()).st_size:
            return b""
        return stack.enter_context(mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ))


def piece_columns(paths: Sequence[Path]) -> tuple[IndexColumns, JobPieces]:
    """A map-only job's output files as the columns of every row but the terms' (``chunks``
    left empty) and the terms by where their pieces lie (``JobPieces``)."""
    rows = _Rows()
    per_file = [rows.read(Path(path)) for path in paths]
    cols = IndexColumns(forms=rows.forms, languages=rows.languages)
    cols.vocabulary = {form.decode("utf-8"): held for form, held in rows.vocabulary.items()}
    for doc, (title, body, url, meta, nav) in rows.pages.items():
        cols.lengths[doc] = [title, body, rows.anchors.pop(doc, 0), url, meta, nav]
    for doc, anchor in rows.anchors.items():  # anchors of a document whose record no task read
        cols.lengths[doc] = [0, 0, anchor, 0, 0, 0]
    return cols, _pieces(paths, rows.ids, rows.piece_ids, rows.starts, rows.sizes, per_file)


class _Rows:
    """The rows of a map-only job's files, gathered (one Python step a row: half a million at
    100,000 documents, so the common rows, pieces and vocabulary, take the shortest path)."""

    def __init__(self) -> None:
        self.ids: dict[bytes, int] = {}  # distinct term (its key, "t:..." ) -> id, in order of first sight
        self.piece_ids, self.starts, self.sizes = array("q"), array("q"), array("q")
        self.pages: dict[int, list[int]] = {}  # doc -> title, body, url, meta, nav (its page's row)
        self.anchors: dict[int, int] = {}  # doc -> anchor length, summed over its anchor rows
        self.forms: dict[int, bytes] = {}
        self.vocabulary: dict[bytes, int] = {}  # written form (UTF-8) -> documents holding it
        self.languages: dict[str, int] = {}

    def read(self, path: Path) -> int:
        """Gather ``path``'s rows; returns its pieces. The file is mapped and walked with
        ``find``: a piece's text (most of the bytes) is never copied, only its place kept, and
        the pages walked are released as it goes (``_RELEASE_BYTES``)."""
        before = len(self.piece_ids)
        with path.open("rb") as fh:
            end = os.fstat(fh.fileno()).st_size
            if not end:
                return 0
            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
                if data[end - 1] != ord("\n"):
                    raise PublishError(
                        f"{path}: its last row is cut off (no newline at byte {end}): the map task's "
                        "output is truncated; build again"
                    )
                self._walk(path, data, end)
        return len(self.piece_ids) - before

    def _walk(self, path: Path, data: mmap.mmap, end: int) -> None:
        ids, vocabulary = self.ids, self.vocabulary
        add_id, add_start, add_size = self.piece_ids.append, self.starts.append, self.sizes.append
        find = data.find
        at = released = 0
        while at < end:
            if at - released >= _RELEASE_BYTES:  # walked pages leave this process's memory
                edge = at // mmap.PAGESIZE * mmap.PAGESIZE
                data.madvise(mmap.MADV_DONTNEED, released, edge - released)
                released = edge
            tab = find(b"\t", at)
            stop = find(b"\n", at)
            if tab < 0 or tab > stop:  # a row without a value: only an empty line is allowed
                if stop > at:
                    raise PublishError(f"{path}: row at byte {at} has no tab: job and publisher disagree")
                at = stop + 1
                continue
            key = data[at:tab]
            kind = key[:2]
            if kind == TERM_KEY:
                size = stop - tab - 1
                if size % _PIECE_QUANTUM:
                    raise _not_whole(path, key, at, size)
                add_id(ids.setdefault(key, len(ids)))
                add_start(tab + 1)
                add_size(size)
            elif kind == VOCABULARY_KEY:
                form = key[2:]
                vocabulary[form] = vocabulary.get(form, 0) + int(data[tab + 1 : stop])
            elif kind == LENGTH_KEY:
                self._length_row(path, int(key[2:]), data[tab + 1 : stop])
            else:
                self._other_row(path, key, data[tab + 1 : stop])
            at = stop + 1

    def _other_row(self, path: Path, key: bytes, value: bytes) -> None:
        if key.startswith(FORMS_KEY):
            doc = int(key[len(FORMS_KEY) :])
            if doc in self.forms:
                raise PublishError(f"{path}: doc_num {doc}'s word forms came from two map tasks")
            self.forms[doc] = pybase64.b64decode(value)
        elif key.startswith(LANGUAGE_KEY):
            name = key[len(LANGUAGE_KEY) :].decode("ascii")
            self.languages[name] = self.languages.get(name, 0) + int(value)
        else:
            raise PublishError(f"{path}: unexpected MRIndex row {key[:40]!r}: job and publisher disagree")

    def _length_row(self, path: Path, doc: int, value: bytes) -> None:
        """A map task's lengths row of ``doc``: its page's (``m,...``) or its anchors' (``a,n``)."""
        tag, *numbers = value.split(b",")
        if tag == PAGE and len(numbers) == 5:
            if doc in self.pages:
                raise PublishError(
                    f"doc_num {doc} occurs in two records ({path}): the manifest must list each "
                    "record block once, and each document must live in exactly one block"
                )
            self.pages[doc] = [int(x) for x in numbers]
        elif tag == ANCHORS and len(numbers) == 1:
            self.anchors[doc] = self.anchors.get(doc, 0) + int(numbers[0])
        else:
            raise PublishError(
                f"{path}: lengths row of doc_num {doc} is {value[:40]!r}, not a map task's "
                "(m,<five lengths> or a,<anchor length>): job and publisher disagree"
            )


def _not_whole(path: Path, key: bytes, at: int, size: int) -> PublishError:
    term = key[len(TERM_KEY) :].decode("utf-8", "replace")
    return PublishError(
        f"{path}: the postings of term {term!r} at byte {at} are {size} characters, not whole "
        "regions: the map task's output is damaged or job and publisher disagree; build again"
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
    seen = [key[len(TERM_KEY) :] for key in ids]  # id -> term
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
