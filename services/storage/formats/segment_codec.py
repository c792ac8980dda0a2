"""A segment's arrays as the build makes them ("plain") and as the current format stores them.

The build works on plain arrays: each term's documents, one column per field frequency, the
positions with an offset per posting, the forward index's term ids and frequencies as they
are. ``compact_segment`` turns those into the stored contract
(``services.storage.formats.segment.SEGMENT_ARRAYS``), which packs each term's documents in
blocks read in place (``services.storage.formats.doc_blocks``), bit-packs the field
frequencies and positions (``services.storage.formats.bitpack``; where a posting's positions
start is not stored: they are as many as its title and body words), codes the forward index
entry by entry (``services.storage.formats.forward_index``: feedback reads it whole for ten
documents a query), and ``expand_segment`` gives the plain arrays back, exactly. The
incremental merge never expands its base: it reads it a term range at a time
(``posting_runs``) and packs its postings as it goes (``PostingsPacker``, the same bytes
``compact_segment`` writes). The readers here (``field_tfs``, ``position_lists``) and
``forward_index.forward_lists`` decode only the rows asked for.

What stays plain: the impacts (one byte each, every query reads them), offsets and the
per-document columns; docs/benchmarks.md ("Issue 31: compact segments" and after) has what
each choice costs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from services.compiled import as_mapped, compiled_on_first_use
from services.storage.formats import bitpack
from services.storage.formats.bitpack import BLOCK
from services.storage.formats.doc_blocks import DOC_ARRAYS, DocBlocks, pack_docs
from services.storage.formats.forward_index import CODED_ARRAYS, compact_forward, forward_lists_reference
from services.storage.formats.segment import (
    POSTING_COLUMNS,
    SEGMENT_ARRAYS,
    TF_FIELDS,
    segment_dtypes,
)

# Plain arrays that the stored segment holds packed instead (format 8's arrays, dtypes).
PLAIN_ONLY: dict[str, np.dtype] = {
    "post_docs": np.dtype(np.uint32),  # each term's documents, ascending
    **{f"tf_{f}": np.dtype(np.uint16) for f in TF_FIELDS},  # clipped field frequencies, per posting
    "pos_offsets": np.dtype(np.uint64),  # posting p's positions are positions[off[p]:off[p+1]]
    "positions": np.dtype(np.uint32),  # ascending term positions in title + body
    "fwd_terms": np.dtype(np.uint32),  # forward index: term ids, ascending per document
    "fwd_tfs": np.dtype(np.uint16),  # their title + body + meta frequencies
}
PACKED_ONLY = frozenset(
    {"pos_block_offsets", *DOC_ARRAYS}
    | set(CODED_ARRAYS)
    | {f"{name}{part}" for name in ("post_packed", "pos_packed") for part in ("", "_starts", "_widths")}
)


def plain_dtypes() -> dict[str, np.dtype]:
    """The plain arrays' names and dtypes (what ``segment_arrays`` gives, ``expand_segment`` gives back)."""
    stored = {name: dtype for name, dtype in segment_dtypes().items() if name not in PACKED_ONLY}
    return {**stored, **PLAIN_ONLY}


_COLUMNS = len(POSTING_COLUMNS)
# A posting's positions are as many as its title and body frequencies together: where they
# start is the sum of those before it in its block (no column of its own since format 12).
_TITLE, _BODY = POSTING_COLUMNS.index("title"), POSTING_COLUMNS.index("body")
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
    out.update(pack_docs(plain["post_docs"], plain["post_offsets"]))
    return out


class PostingsPacker:
    """The packed posting arrays of a segment (``post_packed``, ``pos_block_offsets``,
    ``pos_packed`` and their starts and widths) given a run of postings at a time, in posting
    order: a merge (``services.indexing.segment_merge``) writes them term range by term range
    without holding every posting's plain columns; ``compact_segment`` gives them all at once.
    Either way the arrays are the same, byte for byte."""

    def __init__(self) -> None:
        # Two halves with no state in common, so two threads may fill them at once (a build
        # packs the positions beside the frequencies: ``posting_stream``): the frequencies'
        # columns, and the positions with their blocks' offsets.
        self._post = bitpack.PackedAppender(_COLUMNS)
        self._frequency_rows = 0
        self._pos = bitpack.PackedAppender(1)
        self._postings = 0
        self._positions = 0
        self._block_offsets: list[np.ndarray] = []

    def add(self, tfs: Mapping[str, np.ndarray], counts: np.ndarray, positions: np.ndarray) -> None:
        """Postings: each field's frequencies (``TF_FIELDS``), the number of positions of each
        and their positions concatenated (ascending per posting): ``add_positions`` and then
        ``add_frequencies``."""
        self.add_positions(tfs, counts, positions)
        self.add_frequencies(tfs)

    def add_positions(self, tfs: Mapping[str, np.ndarray], counts: np.ndarray, positions: np.ndarray) -> None:
        """The positions of postings (``counts`` each, concatenated, ascending per posting)
        whose frequencies are ``tfs``. A posting's positions are
        its title and body words, as many as those two frequencies: past a clipped frequency
        (``mapreduce.postings_wire.TF_MAX``, a word 65,535 times in one field) the rest are
        dropped, and fewer than the frequencies say is an error (the build lost some).
        Packed ``_PACK_RUN`` at a time: a build adds all its postings at once, and the int64
        temporaries stay small."""
        counts = np.asarray(counts, dtype=np.int64)
        positions = np.asarray(positions)
        words = np.asarray(tfs["title"]).astype(np.int64) + np.asarray(tfs["body"])
        if counts.shape[0] and bool((counts != words).any()):
            if bool((counts < words).any()):
                at = int(np.flatnonzero(counts < words)[0])
                raise ValueError(
                    f"posting {self._postings + at} has {int(counts[at])} positions but title + body "
                    f"frequency {int(words[at])}: the build's positions and frequencies disagree"
                )
            positions = positions[bitpack.ranges(np.cumsum(counts) - counts, words)]
            counts = words
        at = 0
        for lo in range(0, counts.shape[0], _PACK_RUN):
            run = counts[lo : lo + _PACK_RUN]
            end = at + int(run.sum())
            self._add_positions_run(run, positions[at:end])
            at = end

    def add_frequencies(self, tfs: Mapping[str, np.ndarray]) -> None:
        """The field frequencies of the postings (``TF_FIELDS``), in the order of their
        positions' (``add_positions``)."""
        rows = int(np.asarray(tfs[POSTING_COLUMNS[0]]).shape[0])
        for lo in range(0, rows, _PACK_RUN):
            self._post.add([tfs[name][lo : lo + _PACK_RUN] for name in POSTING_COLUMNS])
        self._frequency_rows += rows

    def _add_positions_run(self, counts: np.ndarray, positions: np.ndarray) -> None:
        rows = np.arange(self._postings, self._postings + counts.shape[0], dtype=np.int64)
        offsets = self._positions + np.cumsum(counts) - counts  # each posting's first position
        self._block_offsets.append(offsets[(rows & (BLOCK - 1)) == 0].astype(np.uint64))
        self._pos.add([bitpack.gaps(positions, counts)])
        self._postings += counts.shape[0]
        self._positions += int(counts.sum())

    def finish(self) -> dict[str, np.ndarray]:
        """The arrays, in the order ``compact_segment`` stores them."""
        if self._frequency_rows != self._postings:
            raise ValueError(
                f"{self._frequency_rows} postings' frequencies but {self._postings} postings' positions "
                "were packed: every posting needs both"
            )
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
    order, ascending per posting), both int64: where each row's positions start is its
    block's start plus the title and body frequencies of the rows before it there (compiled,
    ``_row_positions``: summed once per block for rows ascending within it, as a phrase's
    rows are per term), then only those positions are decoded."""
    rows = np.asarray(rows, dtype=np.int64)
    if rows.shape[0] == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    starts, counts = _row_positions(
        arrays["post_packed"],
        arrays["post_packed_starts"],
        arrays["post_packed_widths"],
        arrays["pos_block_offsets"],
        rows,
        _COLUMNS,
    )
    deltas = _unpack(arrays, "pos_packed", 1, 0, bitpack.ranges(starts, counts))
    return counts, bitpack.ungap(deltas, counts)


def warm_position_lists() -> None:
    """Load (or compile) ``position_lists``' kernel for a memory-mapped segment's arrays
    (``services.compiled.as_mapped``): one posting of two positions."""
    words, starts, widths = bitpack.pack(
        [np.array([1 if c in (_TITLE, _BODY) else 0]) for c in range(_COLUMNS)]
    )
    mapped = {
        "post_packed": as_mapped(words),
        "post_packed_starts": as_mapped(starts),
        "post_packed_widths": as_mapped(widths),
        "pos_block_offsets": as_mapped(np.array([0, 2], np.uint64)),
        **dict(
            zip(
                ("pos_packed", "pos_packed_starts", "pos_packed_widths"),
                map(as_mapped, bitpack.pack([np.array([3, 4])])),
                strict=True,
            )
        ),
    }
    counts, positions = position_lists(mapped, np.zeros(1, np.int64))
    if counts.tolist() != [2] or positions.tolist() != [3, 7]:
        raise RuntimeError(f"position_lists warm-up read {counts.tolist()} {positions.tolist()}")


def position_lists_reference(
    arrays: Mapping[str, np.ndarray], rows: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``position_lists`` in numpy (every row's whole block decoded): what the compiled one is
    tested against."""
    rows = np.asarray(rows, dtype=np.int64)
    if rows.shape[0] == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    blocks, which = np.unique(rows >> 7, return_inverse=True)
    postings = posting_count(arrays)
    every = (blocks[:, None] * BLOCK + np.arange(BLOCK)).reshape(-1)
    title, body = _unpack_columns(arrays, [_TITLE, _BODY], np.minimum(every, postings - 1))
    words = np.where(every < postings, title.astype(np.int64) + body, 0).reshape(-1, BLOCK)
    before = np.cumsum(words, axis=1) - words  # positions of the block's rows before each
    j = rows & (BLOCK - 1)
    counts = words[which, j]
    starts = arrays["pos_block_offsets"][rows >> 7].astype(np.int64) + before[which, j]
    deltas = _unpack(arrays, "pos_packed", 1, 0, bitpack.ranges(starts, counts))
    return counts, bitpack.ungap(deltas, counts)


@compiled_on_first_use
def _row_positions(words, starts, widths, block_starts, rows, columns):  # type: ignore[no-untyped-def]
    """(where each row's positions start, how many): the title (column 0) and body (column 1)
    frequencies of the rows before it in its block, summed on from the row before when
    that one is in the same block and not after it. A value is read with a 64-bit window
    of two words (``bitpack``'s layout)."""
    n = rows.shape[0]
    first = np.empty(n, dtype=np.int64)
    count = np.empty(n, dtype=np.int64)
    block = np.int64(-1)
    at_row = np.int64(0)
    running = np.int64(0)
    title_bit = np.int64(0)
    body_bit = np.int64(0)
    title_w = np.int64(0)
    body_w = np.int64(0)
    for x in range(n):
        r = rows[x]
        b = r >> 7
        if b != block or r < at_row:
            block = b
            at_row = b << 7
            running = np.int64(0)
            title_bit = np.int64(starts[b]) * 32
            title_w = np.int64(widths[b * columns])
            body_w = np.int64(widths[b * columns + 1])
            body_bit = title_bit + 128 * title_w
        while True:
            j = at_row & 127
            bit = title_bit + j * title_w
            at = bit >> 5
            window = (np.int64(words[at]) | (np.int64(words[at + 1]) << 32)) >> (bit & 31)
            words_here = window & ((np.int64(1) << title_w) - 1)
            bit = body_bit + j * body_w
            at = bit >> 5
            window = (np.int64(words[at]) | (np.int64(words[at + 1]) << 32)) >> (bit & 31)
            words_here += window & ((np.int64(1) << body_w) - 1)
            if at_row == r:
                first[x] = np.int64(block_starts[b]) + running
                count[x] = words_here
                break
            running += words_here
            at_row += 1
    return first, count


def posting_count(arrays: Mapping[str, np.ndarray]) -> int:
    """The number of postings of a segment (where its last term's end)."""
    offsets = arrays["post_offsets"]
    return int(offsets[-1]) if offsets.shape[0] else 0


def position_offsets(arrays: Mapping[str, np.ndarray], lo: int, hi: int) -> np.ndarray:
    """Where the positions of postings ``lo .. hi`` start (``hi``'s: where ``hi - 1``'s end),
    int64: their block's start (``pos_block_offsets``) plus the title and body frequencies
    of the rows before them in the block."""
    first = lo - (lo & (BLOCK - 1))
    title = field_tfs_range(arrays, "title", first, hi).astype(np.int64)
    words = title + field_tfs_range(arrays, "body", first, hi)
    rows = np.arange(first, hi + 1, dtype=np.int64)
    running = np.concatenate([[0], np.cumsum(words)])  # positions of rows first .. r - 1
    block_first = rows - (rows & (BLOCK - 1))  # each row's block's first row (>= first)
    within = running - running[block_first - first]
    block_starts = arrays["pos_block_offsets"]  # hi at the end of the postings: its block's + all
    offsets: np.ndarray = block_starts[rows >> 7].astype(np.int64) + within
    return offsets[lo - first :]


def _unpack_columns(
    arrays: Mapping[str, np.ndarray], wanted: Sequence[int], rows: np.ndarray
) -> list[np.ndarray]:
    return bitpack.unpack_columns(
        arrays["post_packed"],
        arrays["post_packed_starts"],
        arrays["post_packed_widths"],
        _COLUMNS,
        wanted,
        rows,
    )


def field_tfs_many(
    arrays: Mapping[str, np.ndarray], fields: Sequence[str], rows: np.ndarray
) -> list[np.ndarray]:
    """The frequencies of several fields at postings ``rows``, in ``fields``' order (uint32)."""
    wanted = sorted(POSTING_COLUMNS.index(f) for f in fields)
    got = dict(zip(wanted, _unpack_columns(arrays, wanted, rows), strict=True))
    return [got[POSTING_COLUMNS.index(f)] for f in fields]


def expand_segment(arrays: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The plain arrays of a stored segment (``compact_segment``'s input, exactly)."""
    out = {name: np.asarray(array) for name, array in arrays.items() if name not in PACKED_ONLY}
    postings = posting_count(arrays)
    out["post_docs"] = DocBlocks.of(arrays).range_docs(0, arrays["post_offsets"].shape[0] - 1)
    for field in TF_FIELDS:
        out[f"tf_{field}"] = field_tfs_range(arrays, field, 0, postings)
    words = out["tf_title"].astype(np.uint64) + out["tf_body"]
    pos_offsets = np.concatenate([np.zeros(1, np.uint64), np.cumsum(words, dtype=np.uint64)])
    out["pos_offsets"] = pos_offsets
    counts = np.diff(pos_offsets.astype(np.int64))
    deltas = _unpack_range(arrays, "pos_packed", 1, 0, 0, int(pos_offsets[-1]))
    out["positions"] = bitpack.ungap(deltas, counts).astype(np.uint32)
    _, terms, tfs = forward_lists_reference(arrays, np.arange(arrays["fwd_offsets"].shape[0] - 1))
    out["fwd_terms"] = terms.astype(np.uint32)
    out["fwd_tfs"] = tfs.astype(np.uint16)
    return out
