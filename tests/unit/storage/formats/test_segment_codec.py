"""The stored segment's packed columns (services.storage.formats.segment_codec): what the build
makes comes back exactly, and the readers decode only the rows asked for, right (the forward
index's own coding: test_forward_index.py)."""

from __future__ import annotations

import numpy as np
import pytest

from services.storage.formats.bitpack import BLOCK
from services.storage.formats.forward_index import compact_forward, forward_lists
from services.storage.formats.segment import TF_FIELDS
from services.storage.formats.segment_codec import (
    PostingsPacker,
    compact_segment,
    expand_segment,
    field_tfs,
    field_tfs_many,
    field_tfs_range,
    position_lists,
)

TF_MAX = 65535  # mapreduce.postings_wire.TF_MAX: frequencies are clipped to uint16


def plain(postings: int, docs: int, seed: int) -> dict[str, np.ndarray]:
    """The packed columns' plain arrays, hostile where they can be: clipped frequencies,
    postings without positions, positions up to 2**32 - 1, documents without terms."""
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {"post_docs": rng.integers(0, max(docs, 1), postings).astype(np.uint32)}
    for f in TF_FIELDS:
        out[f"tf_{f}"] = rng.integers(0, 4, postings).astype(np.uint16)
    if postings:
        out["tf_body"][rng.integers(0, postings, 3)] = TF_MAX
    counts = rng.choice([0, 1, 2, 7], postings)
    if postings:
        counts[-1] = 2  # its positions: 0 and 2**32 - 1, the largest gap there is
    positions: list[int] = []
    for n in counts[:-1].tolist():
        positions += sorted(rng.choice(2**32 - 1, n, replace=False).tolist()) if n else []
    if postings:
        positions += [0, 2**32 - 1]
    out["pos_offsets"] = np.concatenate([[0], np.cumsum(counts)]).astype(np.uint64)
    out["positions"] = np.array(positions, dtype=np.uint32)
    per_doc = rng.choice([0, 1, 5, 300], docs)
    terms = [np.sort(rng.choice(2**32 - 1, n, replace=False)) for n in per_doc.tolist()]
    out["fwd_offsets"] = np.concatenate([[0], np.cumsum(per_doc)]).astype(np.uint64)
    out["fwd_terms"] = np.concatenate([np.zeros(0, np.int64), *terms]).astype(np.uint32)
    out["fwd_tfs"] = rng.integers(1, TF_MAX + 1, int(per_doc.sum())).astype(np.uint16)
    return out


@pytest.mark.parametrize(
    ("postings", "docs"), [(0, 0), (1, 1), (BLOCK - 1, 3), (BLOCK, 5), (BLOCK + 1, 2), (1000, 40)]
)
def test_compact_then_expand_gives_the_plain_arrays_back(postings: int, docs: int) -> None:
    before = plain(postings, docs, postings)
    after = expand_segment(compact_segment(before))
    assert sorted(after) == sorted(before)
    for name, array in before.items():
        assert after[name].dtype == array.dtype and after[name].tolist() == array.tolist(), name


def test_the_readers_decode_any_rows() -> None:
    before = plain(1000, 40, 3)
    stored = compact_segment(before)
    rng = np.random.default_rng(4)
    rows = np.concatenate([[999, 0, 999], rng.integers(0, 1000, 60)])
    for f in TF_FIELDS:
        assert field_tfs(stored, f, rows).tolist() == before[f"tf_{f}"][rows].tolist()
        assert field_tfs_range(stored, f, 130, 700).tolist() == before[f"tf_{f}"][130:700].tolist()
    title, nav = field_tfs_many(stored, ["title", "nav"], rows)
    assert (
        title.tolist() == before["tf_title"][rows].tolist()
        and nav.tolist() == before["tf_nav"][rows].tolist()
    )
    counts, got = position_lists(stored, rows)
    offsets = before["pos_offsets"].astype(np.int64)
    assert counts.tolist() == (offsets[rows + 1] - offsets[rows]).tolist()
    want = [p for r in rows.tolist() for p in before["positions"][offsets[r] : offsets[r + 1]].tolist()]
    assert got.tolist() == want
    docs = np.array([39, 0, 7, 7])
    n, terms, tfs = forward_lists(stored, docs)
    fwd = before["fwd_offsets"].astype(np.int64)
    assert n.tolist() == (fwd[docs + 1] - fwd[docs]).tolist()
    assert terms.tolist() == [
        t for d in docs.tolist() for t in before["fwd_terms"][fwd[d] : fwd[d + 1]].tolist()
    ]
    assert tfs.tolist() == [t for d in docs.tolist() for t in before["fwd_tfs"][fwd[d] : fwd[d + 1]].tolist()]
    empty = np.zeros(0, np.int64)
    assert position_lists(stored, empty)[1].shape == (0,) and forward_lists(stored, empty)[1].shape == (0,)


def test_positions_out_of_order_are_refused() -> None:
    before = plain(3, 1, 0)
    before["pos_offsets"] = np.array([0, 2, 2, 2], np.uint64)
    before["positions"] = np.array([9, 4], np.uint32)
    with pytest.raises(ValueError, match="ascending"):
        compact_segment(before)


@pytest.mark.parametrize(("postings", "docs"), [(0, 0), (BLOCK + 1, 2), (1000, 40)])
@pytest.mark.parametrize("run", [1, 7, BLOCK, 333])
def test_postings_packed_a_run_at_a_time_are_stored_as_compact_segment_stores_them(
    postings: int, docs: int, run: int
) -> None:
    """The merge packs its postings term range by term range (PostingsPacker) and its forward
    index a few documents at a time (compact_forward): the stored arrays are the same bytes."""
    before = plain(postings, docs, postings + run)
    want = compact_segment(before)
    packer = PostingsPacker()
    offsets = before["pos_offsets"].astype(np.int64)
    for lo in range(0, postings, run):
        hi = min(lo + run, postings)
        packer.add(
            {f: before[f"tf_{f}"][lo:hi] for f in TF_FIELDS},
            np.diff(offsets[lo : hi + 1]),
            before["positions"][offsets[lo] : offsets[hi]],
        )
    got = {
        **packer.finish(),
        **compact_forward(before["fwd_offsets"], before["fwd_terms"], before["fwd_tfs"], run),
    }
    for name, value in got.items():
        assert value.dtype == want[name].dtype and value.tobytes() == want[name].tobytes(), name
