"""The stored segment's packed columns (services.storage.formats.segment_codec): what the build
makes comes back exactly, and the readers decode only the rows asked for, right (the forward
index's own coding: test_forward_index.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from services.storage.formats.bitpack import BLOCK
from services.storage.formats.forward_index import compact_forward, forward_lists
from services.storage.formats.segment import TF_FIELDS, open_segment, write_segment
from services.storage.formats.segment_codec import (
    PostingsPacker,
    _row_positions,
    compact_segment,
    expand_segment,
    field_tfs,
    field_tfs_many,
    field_tfs_range,
    position_lists,
    position_lists_reference,
)

TF_MAX = 65535  # mapreduce.postings_wire.TF_MAX: frequencies are clipped to uint16


def plain(postings: int, docs: int, seed: int) -> dict[str, np.ndarray]:
    """The packed columns' plain arrays, hostile where they can be: clipped frequencies,
    postings without positions (no title or body words), positions up to 2**32 - 1,
    documents without terms."""
    rng = np.random.default_rng(seed)
    # Terms of 1 .. ``docs`` postings (any number of blocks of 128), each one's documents
    # ascending, among them 0 and the last.
    lengths: list[int] = []
    while sum(lengths) < postings:
        lengths.append(min(int(rng.integers(1, max(docs, 1) + 1)), postings - sum(lengths)))
    out: dict[str, np.ndarray] = {
        "post_docs": np.concatenate(
            [np.zeros(0, np.int64)] + [np.sort(rng.choice(max(docs, 1), n, replace=False)) for n in lengths]
        ).astype(np.uint32),
        "post_offsets": np.concatenate([[0], np.cumsum(lengths)]).astype(np.uint64),
    }
    for f in TF_FIELDS:
        out[f"tf_{f}"] = rng.integers(0, 4, postings).astype(np.uint16)
    if postings:
        out["tf_anchor"][rng.integers(0, postings, 3)] = TF_MAX
        out["tf_title"][-1], out["tf_body"][-1] = 1, 1  # its positions: 0 and 2**32 - 1, the largest gap
    # A posting's positions are its title and body words (the stored segment counts on it).
    counts = out["tf_title"].astype(np.int64) + out["tf_body"]
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
    ("postings", "docs"),
    [(0, 0), (1, 1), (BLOCK - 1, 3), (BLOCK, 5), (BLOCK + 1, 2), (1000, 40), (1000, 400)],
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
    for f in TF_FIELDS:
        before[f"tf_{f}"][:] = 0
    before["tf_body"][0] = 2
    before["pos_offsets"] = np.array([0, 2, 2, 2], np.uint64)
    before["positions"] = np.array([9, 4], np.uint32)
    with pytest.raises(ValueError, match="ascending"):
        compact_segment(before)


def test_positions_past_a_clipped_frequency_are_dropped_and_missing_ones_refused() -> None:
    """A word 65,535+ times in one field: its frequency is clipped (postings_wire.TF_MAX) and
    the stored segment keeps as many positions as the clipped title + body frequencies say,
    the first ones; a posting with fewer positions than its frequencies is refused."""
    before = plain(BLOCK + 2, 3, 1)
    row = BLOCK  # the first of the second block: the rows after it start after its positions
    extra = np.arange(TF_MAX + 5, dtype=np.int64) + 10
    offsets = before["pos_offsets"].astype(np.int64)
    before["tf_title"][row], before["tf_body"][row] = 1, TF_MAX
    positions = before["positions"]
    before["positions"] = np.concatenate(
        [positions[: offsets[row]], extra.astype(np.uint32), positions[offsets[row + 1] :]]
    )
    counts = np.diff(offsets)
    counts[row] = extra.shape[0]
    before["pos_offsets"] = np.concatenate([[0], np.cumsum(counts)]).astype(np.uint64)
    stored = compact_segment(before)
    got_counts, got = position_lists(stored, np.array([row, row + 1]))
    assert got_counts.tolist() == [TF_MAX + 1, counts[row + 1]]
    assert got[: TF_MAX + 1].tolist() == extra[: TF_MAX + 1].tolist()
    assert expand_segment(stored)["pos_offsets"][-1] == int(counts.sum()) - 4
    before["tf_title"][row] = 9  # 9 + 65,535 words, 65,540 positions: some lost
    with pytest.raises(ValueError, match=f"posting {row} has {TF_MAX + 5} positions"):
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


def test_the_packers_two_halves_fill_apart_and_give_the_same_bytes() -> None:
    """A build packs the positions on a thread beside the frequencies (posting_stream): the
    halves filled in any interleaving give ``compact_segment``'s bytes; one half short is an
    error at finish, not a segment whose postings and positions disagree."""
    postings, run = 3 * BLOCK + 77, 150
    before = plain(postings, 30, 5)
    want = compact_segment(before)
    offsets = before["pos_offsets"].astype(np.int64)
    ranges = [(lo, min(lo + run, postings)) for lo in range(0, postings, run)]
    packer = PostingsPacker()
    for lo, hi in ranges:  # every range's positions first, then every range's frequencies
        packer.add_positions(
            {f: before[f"tf_{f}"][lo:hi] for f in TF_FIELDS},
            np.diff(offsets[lo : hi + 1]),
            before["positions"][offsets[lo] : offsets[hi]],
        )
    for lo, hi in ranges:
        packer.add_frequencies({f: before[f"tf_{f}"][lo:hi] for f in TF_FIELDS})
    for name, value in packer.finish().items():
        assert value.tobytes() == want[name].tobytes(), name
    short = PostingsPacker()
    short.add_positions({f: before[f"tf_{f}"] for f in TF_FIELDS}, np.diff(offsets), before["positions"])
    short.add_frequencies({f: before[f"tf_{f}"][:-1] for f in TF_FIELDS})
    with pytest.raises(ValueError, match="every posting needs both"):
        short.finish()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_compiled_position_reader_is_the_numpy_one(seed: int) -> None:
    """Rows in any order, repeated, within a block ascending and descending, across blocks,
    the last row: the compiled reader sums each block's frequencies as the numpy one does."""
    before = plain(3 * BLOCK + 5, 20, seed)
    stored = compact_segment(before)
    rng = np.random.default_rng(seed)
    rows = np.concatenate(
        [
            np.arange(BLOCK - 3, BLOCK + 4),
            [3 * BLOCK + 4, 3 * BLOCK + 4, 0, 5, 2, 2],
            rng.integers(0, 3 * BLOCK + 5, 50),
            np.sort(rng.integers(0, 3 * BLOCK + 5, 50)),
        ]
    ).astype(np.int64)
    got, want = position_lists(stored, rows), position_lists_reference(stored, rows)
    assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()
    offsets = before["pos_offsets"].astype(np.int64)
    assert got[0].tolist() == (offsets[rows + 1] - offsets[rows]).tolist()


def test_a_mapped_segment_reads_positions_with_the_signature_the_warm_up_compiled(tmp_path: Path) -> None:
    """The search side's warm-up reads positions from read-only arrays; a segment opened from
    its file is read without compiling the reader again (a query would pay the compile)."""
    from services.search.retrieval.segment import warm_kernels

    warm_kernels()
    warmed = set(map(str, _row_positions.signatures))
    before = plain(BLOCK + 9, 5, 7)
    path = tmp_path / "pos.nseg"
    with path.open("wb") as fh:
        write_segment(fh, {name: np.asarray(a) for name, a in compact_segment(before).items()}, {})
    mapped, _ = open_segment(path)
    rows = np.array([3, BLOCK + 8], np.int64)
    counts, _ = position_lists(mapped, rows)
    offsets = before["pos_offsets"].astype(np.int64)
    assert counts.tolist() == (offsets[rows + 1] - offsets[rows]).tolist()
    assert set(map(str, _row_positions.signatures)) == warmed
