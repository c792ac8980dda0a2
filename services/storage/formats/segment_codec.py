"""A segment's arrays as the build makes them ("plain") and as the current format stores them.

The build works on plain arrays: one column per field frequency, the positions with an
offset per posting, the forward index's term ids and frequencies as they are.
``compact_segment`` turns those into the stored contract
(``services.storage.formats.segment.SEGMENT_ARRAYS``), which bit-packs the field
frequencies and positions (``services.storage.formats.bitpack``), codes the forward index
entry by entry (``services.storage.formats.forward_index``: feedback reads it whole for ten
documents a query), and ``expand_segment`` gives the plain arrays back, exactly. The
incremental merge never expands its base: it reads it a term range at a time
(``posting_runs``) and packs its postings as it goes (``PostingsPacker``, the same bytes
``compact_segment`` writes). The readers here (``field_tfs``, ``position_lists``) and
``forward_index.forward_lists`` decode only the rows asked for.

What stays plain: what every query reads whole (document numbers, impacts, offsets,
per-document columns); docs/benchmarks.md ("Issue 31: compact segments") has what each
choice costs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from services.storage.formats import bitpack
from services.storage.formats.bitpack import BLOCK
from services.storage.formats.forward_index import CODED_ARRAYS, compact_forward, forward_lists_reference
from services.storage.formats.segment import (
    POSTING_COLUMNS,
    SEGMENT_ARRAYS,
    TF_FIELDS,
    segment_dtypes,
)

# Plain arrays that the stored segment holds packed instead (format 8's arrays, dtypes).
PLAIN_ONLY: dict[str, np.dtype] = {
    **{f"tf_{f}": np.dtype(np.uint16) for f in TF_FIELDS},  # clipped field frequencies, per posting
    "pos_offsets": np.dtype(np.uint64),  # posting p's positions are positions[off[p]:off[p+1]]
    "positions": np.dtype(np.uint32),  # ascending term positions in title + body
    "fwd_terms": np.dtype(np.uint32),  # forward index: term ids, ascending per document
    "fwd_tfs": np.dtype(np.uint16),  # their title + body + meta frequencies
}
PACKED_ONLY = frozenset(
    {"pos_block_offsets"}
    | set(CODED_ARRAYS)
    | {f"{name}{part}" for name in ("post_packed", "pos_packed") for part in ("", "_starts", "_widths")}
)


def plain_dtypes() -> dict[str, np.dtype]:
    """The plain arrays' names and dtypes (what ``segment_arrays`` gives, ``expand_segment`` gives back)."""
    stored = {name: dtype for name, dtype in segment_dtypes().items() if name not in PACKED_ONLY}
    return {**stored, **PLAIN_ONLY}


_COLUMNS = len(POSTING_COLUMNS)
_POS = POSTING_COLUMNS.index("pos_start")  # where a posting's positions start, in its block
_PACK_RUN = 1 << 20  # postings packed per pass (bounds the int64 temporaries of a whole build's)


def compact_segment(plain: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The stored arrays of a segment from its plain arrays."""
    out = {name: np.asarray(array) for name, array in plain.items() if name not in PLAIN_ONLY}
    packer = PostingsPacker()
    packer.add(
        {field: np.asarray(plain[f"tf_{field}"]) for field in TF_FIELDS},
        np.diff(np.asarray(plain["pos_offsets"]).astype(np.int64)),
        np.asarray(plain["positions"]),
    )
    out.update(packer.finish())
    out.update(compact_forward(plain["fwd_offsets"], plain["fwd_terms"], plain["fwd_tfs"]))
    return out


class PostingsPacker:
    """The packed posting arrays of a segment (``post_packed``, ``pos_block_offsets``,
    ``pos_packed`` and their starts and widths) given a run of postings at a time, in posting
    order: a merge (``services.indexing.segment_merge``) writes them term range by term range
    without holding every posting's plain columns; ``compact_segment`` gives them all at once.
    Either way the arrays are the same, byte for byte."""

    def __init__(self) -> None:
        self._post = bitpack.PackedAppender(_COLUMNS)
        self._pos = bitpack.PackedAppender(1)
        self._postings = 0
        self._positions = 0
        self._block_first = 0  # where the positions of the unfinished block's first posting start
        self._block_offsets: list[np.ndarray] = []

    def add(self, tfs: Mapping[str, np.ndarray], counts: np.ndarray, positions: np.ndarray) -> None:
        """Postings: each field's frequencies (``TF_FIELDS``), the number of positions of each
        and their positions concatenated (ascending per posting). Packed ``_PACK_RUN`` at a
        time: a build adds all its postings at once, and the int64 temporaries stay small."""
        counts = np.asarray(counts, dtype=np.int64)
        at = 0
        for lo in range(0, counts.shape[0], _PACK_RUN):
            run = counts[lo : lo + _PACK_RUN]
            end = at + int(run.sum())
            self._add_run({f: tfs[f][lo : lo + _PACK_RUN] for f in TF_FIELDS}, run, positions[at:end])
            at = end

    def _add_run(self, tfs: Mapping[str, np.ndarray], counts: np.ndarray, positions: np.ndarray) -> None:
        rows = np.arange(self._postings, self._postings + counts.shape[0], dtype=np.int64)
        offsets = self._positions + np.cumsum(counts) - counts  # each posting's first position
        firsts = offsets[(rows & (BLOCK - 1)) == 0]  # those of the blocks starting in this run
        block = np.cumsum((rows & (BLOCK - 1)) == 0)  # 0: the block a former run started
        in_block = offsets - np.concatenate([[self._block_first], firsts])[block]
        if firsts.shape[0]:
            self._block_first = int(firsts[-1])
        self._block_offsets.append(firsts.astype(np.uint64))
        self._post.add([in_block if name == "pos_start" else tfs[name] for name in POSTING_COLUMNS])
        self._pos.add([bitpack.gaps(positions, counts)])
        self._postings += counts.shape[0]
        self._positions += int(counts.sum())

    def finish(self) -> dict[str, np.ndarray]:
        """The arrays, in the order ``compact_segment`` stores them."""
        out: dict[str, np.ndarray] = {}
        _put(out, "post_packed", self._post.finish())
        out["pos_block_offsets"] = np.concatenate(
            [*self._block_offsets, np.array([self._positions], dtype=np.uint64)]
        )
        _put(out, "pos_packed", self._pos.finish())
        return out


# A document's run in these per-document tables: its offsets array and the arrays it indexes
# (plain names: the forward index before it is packed).
_DOC_RUNS = {
    "fwd_offsets": ("fwd_terms", "fwd_tfs"),
    "form_offsets": ("form_filters",),
    "in_offsets": ("in_docs",),
    "site_name_offsets": ("site_name_terms",),
}


def held_rows(plain: Mapping[str, np.ndarray], holds: np.ndarray) -> dict[str, np.ndarray]:
    """A delta's plain arrays with one per-document row per held document (``holds``,
    ascending), not one per document number (``services.storage.formats.delta``, rows
    "held"): per-document values and runs kept for those rows only, postings unchanged. A
    run of a document not held is dropped; a delta has none (its link job reads its own
    records only)."""
    rows = np.asarray(holds, dtype=np.int64)
    out = dict(plain)
    for name, spec in SEGMENT_ARRAYS.items():
        if spec.per == "doc":
            out[name] = np.asarray(plain[name])[rows]
    for offsets_name, values in _DOC_RUNS.items():
        offsets = np.asarray(plain[offsets_name]).astype(np.int64)
        starts, sizes = offsets[rows], offsets[rows + 1] - offsets[rows]
        kept = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        picked = np.repeat(starts - kept[:-1], sizes) + np.arange(int(kept[-1]), dtype=np.int64)
        out[offsets_name] = kept.astype(np.asarray(plain[offsets_name]).dtype)
        for name in values:
            out[name] = np.asarray(plain[name])[picked]
    return out


def _put(out: dict[str, np.ndarray], name: str, packed: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
    out[name], out[f"{name}_starts"], out[f"{name}_widths"] = packed


def _unpack(
    arrays: Mapping[str, np.ndarray], name: str, columns: int, column: int, rows: np.ndarray
) -> np.ndarray:
    return bitpack.unpack(
        arrays[name], arrays[f"{name}_starts"], arrays[f"{name}_widths"], columns, column, rows
    )


def _unpack_range(
    arrays: Mapping[str, np.ndarray], name: str, columns: int, column: int, lo: int, hi: int
) -> np.ndarray:
    return bitpack.unpack_range(
        arrays[name], arrays[f"{name}_starts"], arrays[f"{name}_widths"], columns, column, lo, hi
    )


def field_tfs_range(arrays: Mapping[str, np.ndarray], field: str, lo: int, hi: int) -> np.ndarray:
    """The ``field`` frequency of postings ``lo .. hi - 1`` (a term's run), uint16."""
    return _unpack_range(arrays, "post_packed", _COLUMNS, POSTING_COLUMNS.index(field), lo, hi).astype(
        np.uint16
    )


def field_tfs(arrays: Mapping[str, np.ndarray], field: str, rows: np.ndarray) -> np.ndarray:
    """The ``field`` frequency (``TF_FIELDS``) of postings ``rows`` (global posting numbers), uint16."""
    values = _unpack(arrays, "post_packed", _COLUMNS, POSTING_COLUMNS.index(field), rows)
    return values.astype(np.uint16)


def position_lists(arrays: Mapping[str, np.ndarray], rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(number of positions of each posting in ``rows``, their positions concatenated in that
    order, ascending per posting), both int64: where each row's positions start and where the
    next row's start, then only those positions."""
    rows = np.asarray(rows, dtype=np.int64)
    if rows.shape[0] == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    postings = int(arrays["post_docs"].shape[0])
    after = rows + 1
    ends_block = ((after & (BLOCK - 1)) == 0) | (after >= postings)  # the next block's first, then
    both = np.concatenate([rows, np.where(ends_block, rows, after)])
    rel = _unpack(arrays, "post_packed", _COLUMNS, _POS, both).astype(np.int64)
    block_starts = arrays["pos_block_offsets"]
    base = block_starts[rows >> 7].astype(np.int64)
    starts = base + rel[: rows.shape[0]]
    ends = np.where(ends_block, block_starts[(rows >> 7) + 1].astype(np.int64), base + rel[rows.shape[0] :])
    counts = ends - starts
    deltas = _unpack(arrays, "pos_packed", 1, 0, bitpack.ranges(starts, counts))
    return counts, bitpack.ungap(deltas, counts)


def field_tfs_many(
    arrays: Mapping[str, np.ndarray], fields: Sequence[str], rows: np.ndarray
) -> list[np.ndarray]:
    """The frequencies of several fields at postings ``rows``, in ``fields``' order (uint32)."""
    wanted = sorted(POSTING_COLUMNS.index(f) for f in fields)
    got = dict(
        zip(
            wanted,
            bitpack.unpack_columns(
                arrays["post_packed"],
                arrays["post_packed_starts"],
                arrays["post_packed_widths"],
                _COLUMNS,
                wanted,
                rows,
            ),
            strict=True,
        )
    )
    return [got[POSTING_COLUMNS.index(f)] for f in fields]


def expand_segment(arrays: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The plain arrays of a stored segment (``compact_segment``'s input, exactly)."""
    out = {name: np.asarray(array) for name, array in arrays.items() if name not in PACKED_ONLY}
    postings = int(arrays["post_docs"].shape[0])
    for field in TF_FIELDS:
        out[f"tf_{field}"] = field_tfs_range(arrays, field, 0, postings)
    in_block = _unpack_range(arrays, "post_packed", _COLUMNS, _POS, 0, postings).astype(np.uint64)
    block_starts = arrays["pos_block_offsets"]
    pos_offsets = np.empty(postings + 1, dtype=np.uint64)
    pos_offsets[:-1] = np.repeat(
        block_starts[:-1], np.diff(np.append(np.arange(0, postings, BLOCK), postings))
    )
    pos_offsets[:-1] += in_block
    pos_offsets[-1] = block_starts[-1]
    out["pos_offsets"] = pos_offsets
    counts = np.diff(pos_offsets.astype(np.int64))
    deltas = _unpack_range(arrays, "pos_packed", 1, 0, 0, int(pos_offsets[-1]))
    out["positions"] = bitpack.ungap(deltas, counts).astype(np.uint32)
    _, terms, tfs = forward_lists_reference(arrays, np.arange(arrays["fwd_offsets"].shape[0] - 1))
    out["fwd_terms"] = terms.astype(np.uint32)
    out["fwd_tfs"] = tfs.astype(np.uint16)
    return out
