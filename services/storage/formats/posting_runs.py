"""A run of postings (a term range's) decoded from a segment's arrays, plain or stored.

The merge (``services.indexing.segment_merge``) reads its parts a term range at a time, so
that only that range's postings are ever decoded: a stored segment's packed field
frequencies and positions (``segment_codec``) are unpacked for the rows asked for, a plain
segment's (a delta the update just built) sliced. Either way the run is what
``segment_codec.expand_segment`` would give for those rows, without expanding the rest.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from services.storage.formats import bitpack
from services.storage.formats.doc_blocks import DocBlocks
from services.storage.formats.segment import POSTING_COLUMNS, TF_FIELDS
from services.storage.formats.segment_codec import position_offsets

_COLUMNS = len(POSTING_COLUMNS)


@dataclass(frozen=True)
class PostingRun:
    """Postings ``lo .. hi - 1`` of a segment: their documents, field frequencies (one column
    per field, ``TF_FIELDS`` order), number of positions and positions (concatenated)."""

    docs: np.ndarray  # uint32
    field_tfs: np.ndarray  # (postings, fields) uint16
    pos_counts: np.ndarray  # int64
    positions: np.ndarray  # uint32


def is_stored(arrays: Mapping[str, np.ndarray]) -> bool:
    """Whether ``arrays`` are a stored segment's (packed) rather than plain ones."""
    return "post_packed" in arrays


def posting_run(
    arrays: Mapping[str, np.ndarray], lo_term: int, hi_term: int, blocks: DocBlocks | None = None
) -> PostingRun:
    """The postings of terms ``lo_term .. hi_term - 1`` of a plain or stored segment; ``blocks``:
    a stored segment's ``DocBlocks.of(arrays)``, made once for every run read from it."""
    lo, hi = int(arrays["post_offsets"][lo_term]), int(arrays["post_offsets"][hi_term])
    if not is_stored(arrays):
        docs = np.array(arrays["post_docs"][lo:hi], dtype=np.uint32)
        offsets = np.asarray(arrays["pos_offsets"][lo : hi + 1]).astype(np.int64)
        tfs = np.stack([np.asarray(arrays[f"tf_{f}"][lo:hi]) for f in TF_FIELDS], axis=1)
        positions = np.array(arrays["positions"][offsets[0] : offsets[-1]], dtype=np.uint32)
        return PostingRun(docs, tfs.astype(np.uint16), np.diff(offsets), positions)
    docs = (blocks or DocBlocks.of(arrays)).range_docs(lo_term, hi_term)
    tfs = np.empty((hi - lo, len(TF_FIELDS)), dtype=np.uint16)
    for f, field in enumerate(TF_FIELDS):
        tfs[:, f] = _unpack_range(arrays, "post_packed", _COLUMNS, POSTING_COLUMNS.index(field), lo, hi)
    offsets = position_offsets(arrays, lo, hi)
    counts = np.diff(offsets)
    deltas = _unpack_range(arrays, "pos_packed", 1, 0, int(offsets[0]), int(offsets[-1]))
    return PostingRun(docs, tfs, counts, bitpack.ungap(deltas, counts).astype(np.uint32))


def _unpack_range(
    arrays: Mapping[str, np.ndarray], name: str, columns: int, column: int, lo: int, hi: int
) -> np.ndarray:
    return bitpack.unpack_range(
        arrays[name], arrays[f"{name}_starts"], arrays[f"{name}_widths"], columns, column, lo, hi
    )
