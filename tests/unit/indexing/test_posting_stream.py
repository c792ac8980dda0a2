"""PostingStream packs each range on a thread of its own: a range's packing error still
reaches the caller, named, and nothing waits forever."""

from __future__ import annotations

import numpy as np
import pytest

from services.indexing.index_rows import IndexColumns
from services.indexing.posting_stream import PostingStream
from services.storage.formats.segment import TF_FIELDS
from services.storage.formats.segment_codec import PostingsPacker


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
    """Many small ranges, each range's positions packed on the thread while its frequencies
    are packed here: the packed arrays are, byte for byte, those of one packer given every
    range in order on one thread."""
    stream = PostingStream(np.ones((6, 40), dtype=np.float64), 40)
    serial = PostingsPacker()
    for n in range(30):
        docs = list(range(n % 7, 40, 7))
        title = [n % 2] * len(docs)
        body = [1 + (d + n) % 3 for d in docs]
        positions = [p + n for t, b in zip(title, body, strict=True) for p in range(t + b)]
        one_range(stream, docs, title, body, positions)
        tfs = np.zeros((len(docs), 6), dtype=np.uint16)
        tfs[:, 0], tfs[:, 1] = title, body
        counts = (tfs[:, 0] + tfs[:, 1]).astype(np.uint32)
        serial.add(dict(zip(TF_FIELDS, tfs.T, strict=True)), counts, np.array(positions, np.uint32))
    arrays = stream.finish(IndexColumns(), np.full(40, 1 / 40), {})
    for name, value in serial.finish().items():
        assert arrays[name].tobytes() == value.tobytes(), name
