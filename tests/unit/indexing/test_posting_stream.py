"""PostingStream packs each range on a thread of its own: a range's packing error still
reaches the caller, named, and nothing waits forever."""

from __future__ import annotations

import numpy as np
import pytest

from services.indexing.index_rows import IndexColumns
from services.indexing.posting_stream import PostingStream


def one_range(
    stream: PostingStream, docs: list[int], title: list[int], body: list[int], positions: list[int]
) -> None:
    tfs = np.zeros((len(docs), 6), dtype=np.uint16)
    tfs[:, 0], tfs[:, 1] = title, body
    counts = np.array([t + b for t, b in zip(title, body, strict=True)], dtype=np.uint32)
    stream.add(
        [b"w%d" % len(stream._terms)],
        np.array([len(docs)]),
        np.array(docs, np.uint32),
        tfs,
        counts,
        np.array(positions, np.uint32),
    )


def test_a_packing_error_reaches_the_caller_and_the_thread_ends() -> None:
    stream = PostingStream(np.ones((6, 3), dtype=np.float64), 3)
    one_range(stream, [0, 2], [1, 0], [0, 2], [0, 3, 9])
    # Three positions for a title + body frequency of 4: the build lost some.
    tfs = np.zeros((1, 6), dtype=np.uint16)
    tfs[0, 1] = 4
    stream.add(
        [b"x"],
        np.array([1]),
        np.array([1], np.uint32),
        tfs,
        np.array([3], np.uint32),
        np.arange(3, dtype=np.uint32),
    )
    with pytest.raises(ValueError, match="has 3 positions but title \\+ body frequency 4"):
        stream.finish(IndexColumns(), np.full(3, 1 / 3), {})
    assert not any(thread.is_alive() for thread in stream._pack_pool._threads)  # shut down, even so


def test_ranges_pack_in_order_whatever_the_thread() -> None:
    """Many small ranges, each packed while the next is scored: the packed positions are
    the ranges' in order (their block offsets count every position once)."""
    stream = PostingStream(np.ones((6, 40), dtype=np.float64), 40)
    total = 0
    for n in range(30):
        docs = list(range(n % 7, 40, 7))
        body = [1 + (d + n) % 3 for d in docs]
        positions = [p for b in body for p in range(b)]
        total += len(positions)
        one_range(stream, docs, [0] * len(docs), body, positions)
    arrays = stream.finish(IndexColumns(), np.full(40, 1 / 40), {})
    assert int(arrays["pos_block_offsets"][-1]) == total
    assert arrays["df"].shape == (30,)
