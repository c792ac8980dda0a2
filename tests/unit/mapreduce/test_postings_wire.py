"""The postings wire format: regions that join as text, and bulk decoding."""

from __future__ import annotations

import numpy as np
import pytest

from mapreduce.postings_join import join_pieces, merge_chunks
from mapreduce.postings_wire import NUM_FIELDS, Chunk, decode_terms, encode_runs
from services.indexing.errors import PublishError
from services.indexing.index_rows import collect_index_rows
from services.indexing.segment_arrays import segment_arrays


def random_chunk(rng: np.random.Generator, docs: range, size: int, narrow: bool = False) -> Chunk:
    """Wide values, or values that fit the narrow layout (tfs and counts < 256, positions
    < 65536), exactly at the limits now and then."""
    picked = np.sort(rng.choice(np.array(docs), size=size, replace=False)).astype(np.uint32)
    counts = rng.integers(0, 5, size=size).astype(np.uint32)
    tf_top, pos_top = (256, 65536) if narrow else (65536, 2**32)
    tfs = rng.integers(0, tf_top, size=(size, NUM_FIELDS)).astype(np.uint16)
    if narrow and size > 1:
        counts[0], tfs[-1, 2] = 255, 255
    positions = rng.integers(0, pos_top, size=int(counts.sum()), dtype=np.uint64)
    if narrow and size > 1:
        positions[0] = 65535
    return Chunk(picked, tfs, counts, positions.astype(np.uint32))


def test_runs_round_trip_through_one_base64_text() -> None:
    rng = np.random.default_rng(3)
    chunks = [random_chunk(rng, range(500), int(rng.integers(1, 40)), narrow=bool(i % 3)) for i in range(60)]
    starts = np.cumsum([0] + [c.docs.shape[0] for c in chunks[:-1]])
    texts = encode_runs(
        np.concatenate([c.docs for c in chunks]),
        np.concatenate([c.tfs for c in chunks]),
        np.concatenate([c.counts for c in chunks]),
        np.concatenate([c.positions for c in chunks]),
        starts,
    )
    assert len(texts) == len(chunks)
    for chunk, text in zip(chunks, texts, strict=True):
        assert b"=" not in text  # whole base64 quanta: texts join
        assert Chunk.decode(text).as_lists() == chunk.as_lists()
        assert text == chunk.encode()
    per_text, docs, tfs, counts, positions = decode_terms(texts)
    assert per_text.tolist() == [c.docs.shape[0] for c in chunks]
    assert docs.tolist() == np.concatenate([c.docs for c in chunks]).tolist()
    assert tfs.tolist() == np.concatenate([c.tfs for c in chunks]).tolist()
    assert positions.tolist() == np.concatenate([c.positions for c in chunks]).tolist()
    assert counts.tolist() == np.concatenate([c.counts for c in chunks]).tolist()
    # Narrow regions take 11 bytes a posting and 2 a position, wide ones 20 and 4.
    wide, narrow = chunks[0], chunks[1]
    for chunk, per_posting, per_position in ((wide, 20, 4), (narrow, 11, 2)):
        used = 8 + per_posting * chunk.docs.shape[0] + per_position * chunk.positions.shape[0]
        assert len(chunk.encode()) * 3 // 4 - used < 12 + 4 + 4  # padding only


def test_one_value_past_the_narrow_limits_makes_a_region_wide() -> None:
    base = dict(docs=np.array([1, 2], np.uint32), counts=np.array([1, 1], np.uint32))
    fits = Chunk(
        tfs=np.array([[255, 1, 0, 0, 0, 0], [1, 0, 0, 0, 0, 0]], np.uint16),
        positions=np.array([0, 65535], np.uint32),
        **base,
    )
    for tfs, positions in (
        ([[256, 1, 0, 0, 0, 0], [1, 0, 0, 0, 0, 0]], [0, 65535]),
        ([[255, 1, 0, 0, 0, 0], [1, 0, 0, 0, 0, 0]], [0, 65536]),
    ):
        past = Chunk(tfs=np.array(tfs, np.uint16), positions=np.array(positions, np.uint32), **base)
        assert len(past.encode()) > len(fits.encode())
        assert Chunk.decode(past.encode()).as_lists() == past.as_lists()
    assert Chunk.decode(fits.encode()).as_lists() == fits.as_lists()


@pytest.mark.parametrize("size", [1, 2, 3, 4, 5, 6, 7, 11, 12, 13])
def test_disjoint_pieces_are_joined_unread_in_document_order(size: int) -> None:
    """Each size puts the last document at another place in a base64 quantum."""
    rng = np.random.default_rng(size)
    pieces = [random_chunk(rng, range(lo, lo + 100), size, narrow=lo > 0) for lo in (300, 0, 100)]
    joined = join_pieces([p.encode() for p in pieces])
    assert joined == b"".join(pieces[i].encode() for i in (1, 2, 0))
    assert Chunk.decode(joined).as_lists() == merge_chunks(pieces).as_lists()


def test_pieces_of_the_same_document_are_merged() -> None:
    page = Chunk(
        np.array([2, 7], np.uint32),
        np.array([[1, 2, 0, 0, 0, 0], [0, 1, 0, 1, 3, 2]], np.uint16),
        np.array([3, 1], np.uint32),
        np.array([0, 4, 9, 5], np.uint32),
    )
    anchors = Chunk(
        np.array([7, 8], np.uint32),
        np.array([[0, 0, 2, 0, 0, 0], [0, 0, 1, 0, 0, 0]], np.uint16),
        np.array([0, 0], np.uint32),
        np.array([], np.uint32),
    )
    merged = Chunk.decode(join_pieces([anchors.encode(), page.encode()]))
    assert merged.as_lists() == [
        [2, 7, 8],
        [1, 0, 0],
        [2, 1, 0],
        [0, 2, 1],
        [0, 1, 0],
        [0, 3, 0],
        [0, 2, 0],
        [3, 1, 0],
        [0, 4, 9, 5],
    ]


def test_truncated_postings_are_refused_by_the_publisher() -> None:
    text = Chunk(
        np.array([0, 1], np.uint32),
        np.ones((2, NUM_FIELDS), np.uint16),
        np.array([1, 1], np.uint32),
        np.array([0, 0], np.uint32),
    ).encode()
    rows = [(["t", "x"], text[:-4]), (["l", 0], [1, 1, 0, 0, 0, 0]), (["l", 1], [1, 1, 0, 0, 0, 0])]
    with pytest.raises(PublishError, match="truncated"):
        segment_arrays(collect_index_rows(rows), np.array([0.5, 0.5]), 2)
