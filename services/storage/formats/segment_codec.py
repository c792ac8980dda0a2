"""A segment's arrays as the build makes them ("plain") and as format 9 stores them.

The build and the incremental merge work on plain arrays: one column per field
frequency, the positions with an offset per posting, the forward index's term ids
and frequencies as they are. ``compact_segment`` turns those into the stored
contract (``services.storage.formats.segment.SEGMENT_ARRAYS``), which bit-packs the
columns that search reads a few rows at a time (``services.storage.formats.bitpack``),
and ``expand_segment`` gives the plain arrays back, exactly (the merge starts from
them, so a merged segment is a full build's). The readers here (``field_tfs``,
``position_lists``, ``forward_lists``) decode only the rows asked for.

What stays plain: what every query reads whole (document numbers, impacts, offsets,
per-document columns); docs/benchmarks.md ("Issue 31") has what each choice costs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from services.storage.formats import bitpack
from services.storage.formats.bitpack import BLOCK
from services.storage.formats.segment import FORWARD_COLUMNS, POSTING_COLUMNS, TF_FIELDS, segment_dtypes

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
    | {
        f"{name}{part}"
        for name in ("post_packed", "pos_packed", "fwd_packed")
        for part in ("", "_starts", "_widths")
    }
)


def plain_dtypes() -> dict[str, np.dtype]:
    """The plain arrays' names and dtypes (what ``segment_arrays`` and ``merge_segments`` give)."""
    stored = {name: dtype for name, dtype in segment_dtypes().items() if name not in PACKED_ONLY}
    return {**stored, **PLAIN_ONLY}


_COLUMNS = len(POSTING_COLUMNS)
_COUNT = POSTING_COLUMNS.index("positions")  # the posting column holding its number of positions


def compact_segment(plain: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The stored arrays of a segment from its plain arrays."""
    out = {name: np.asarray(array) for name, array in plain.items() if name not in PLAIN_ONLY}
    pos_offsets = np.asarray(plain["pos_offsets"]).astype(np.int64)
    counts = np.diff(pos_offsets)
    postings = counts.shape[0]
    columns = [counts if name == "positions" else np.asarray(plain[f"tf_{name}"]) for name in POSTING_COLUMNS]
    _put(out, "post_packed", bitpack.pack(columns))
    block_firsts = np.concatenate([np.arange(0, postings, BLOCK), [postings]])
    out["pos_block_offsets"] = pos_offsets[block_firsts].astype(np.uint64)
    _put(out, "pos_packed", bitpack.pack([bitpack.gaps(np.asarray(plain["positions"]), counts)]))
    fwd_counts = np.diff(np.asarray(plain["fwd_offsets"]).astype(np.int64))
    term_gaps = bitpack.gaps(np.asarray(plain["fwd_terms"]), fwd_counts)
    _put(out, "fwd_packed", bitpack.pack([term_gaps, np.asarray(plain["fwd_tfs"])]))
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
    order, ascending per posting), both int64. Decodes the position counts of the 128-posting
    blocks the rows are in, then only the rows' positions."""
    rows = np.asarray(rows, dtype=np.int64)
    if rows.shape[0] == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    blocks, which = np.unique(rows >> 7, return_inverse=True)
    block_rows = (blocks[:, None] * BLOCK + np.arange(BLOCK)).reshape(-1)
    per_block = _unpack(arrays, "post_packed", _COLUMNS, _COUNT, block_rows).astype(np.int64)
    per_block = per_block.reshape(-1, BLOCK)
    before = np.cumsum(per_block, axis=1) - per_block
    j = rows & (BLOCK - 1)
    counts = per_block[which, j]
    starts = arrays["pos_block_offsets"][blocks].astype(np.int64)[which] + before[which, j]
    deltas = _unpack(arrays, "pos_packed", 1, 0, bitpack.ranges(starts, counts))
    return counts, bitpack.ungap(deltas, counts)


def forward_lists(
    arrays: Mapping[str, np.ndarray], docs: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(entries of each of ``docs``, their term ids concatenated (ascending per document),
    their title + body + meta frequencies), all int64."""
    docs = np.asarray(docs, dtype=np.int64)
    offsets = arrays["fwd_offsets"]
    starts = offsets[docs].astype(np.int64)
    counts = offsets[docs + 1].astype(np.int64) - starts
    rows = bitpack.ranges(starts, counts)
    gaps, tfs = bitpack.unpack_columns(
        arrays["fwd_packed"],
        arrays["fwd_packed_starts"],
        arrays["fwd_packed_widths"],
        FORWARD_COLUMNS,
        (0, 1),
        rows,
    )
    return counts, bitpack.ungap(gaps, counts), tfs.astype(np.int64)


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
    counts = _unpack_range(arrays, "post_packed", _COLUMNS, _COUNT, 0, postings).astype(np.int64)
    pos_offsets = np.zeros(postings + 1, dtype=np.uint64)
    np.cumsum(counts.astype(np.uint64), out=pos_offsets[1:])
    out["pos_offsets"] = pos_offsets
    deltas = _unpack_range(arrays, "pos_packed", 1, 0, 0, int(pos_offsets[-1]))
    out["positions"] = bitpack.ungap(deltas, counts).astype(np.uint32)
    fwd_counts = np.diff(arrays["fwd_offsets"].astype(np.int64))
    entries = int(arrays["fwd_offsets"][-1])
    term_gaps = _unpack_range(arrays, "fwd_packed", FORWARD_COLUMNS, 0, 0, entries)
    out["fwd_terms"] = bitpack.ungap(term_gaps, fwd_counts).astype(np.uint32)
    out["fwd_tfs"] = _unpack_range(arrays, "fwd_packed", FORWARD_COLUMNS, 1, 0, entries).astype(np.uint16)
    return out
