"""The bit-packed blocks of the segment (services.storage.formats.bitpack): round trips,
edges of a block, the widest values, and lists stored as gaps."""

from __future__ import annotations

import numpy as np
import pytest

from services.storage.formats import bitpack
from services.storage.formats.bitpack import BLOCK


def roundtrip(columns: list[np.ndarray]) -> list[np.ndarray]:
    words, starts, widths = bitpack.pack(columns)
    n = columns[0].shape[0]
    assert starts.shape[0] == -(-n // BLOCK) + 1 and widths.shape[0] == (starts.shape[0] - 1) * len(columns)
    assert words.shape[0] == int(starts[-1]) + 2
    rows = np.arange(n)
    return [bitpack.unpack(words, starts, widths, len(columns), c, rows) for c in range(len(columns))]


@pytest.mark.parametrize("n", [0, 1, BLOCK - 1, BLOCK, BLOCK + 1, 3 * BLOCK, 1000])
def test_columns_come_back_exactly_at_every_block_edge(n: int) -> None:
    rng = np.random.default_rng(n)
    columns = [
        rng.integers(0, 2**32, n, dtype=np.uint64),  # full width
        rng.integers(0, 3, n).astype(np.uint16),  # a couple of bits
        np.zeros(n, dtype=np.uint32),  # nothing: width 0
        np.full(n, 2**32 - 1, dtype=np.uint64),  # the largest value everywhere
    ]
    for got, want in zip(roundtrip(columns), columns, strict=True):
        assert got.dtype == np.uint32 and got.tolist() == want.tolist()


def test_any_rows_in_any_order_and_repeated() -> None:
    rng = np.random.default_rng(7)
    values = rng.integers(0, 1 << 17, 5000)
    values[BLOCK : 2 * BLOCK] = 0  # a block of width 0 among others
    words, starts, widths = bitpack.pack([values, values // 3])
    rows = rng.integers(0, 5000, 800)
    rows[:3] = [4999, 0, 4999]
    assert bitpack.unpack(words, starts, widths, 2, 0, rows).tolist() == values[rows].tolist()
    assert bitpack.unpack(words, starts, widths, 2, 1, rows).tolist() == (values // 3)[rows].tolist()
    assert bitpack.unpack(words, starts, widths, 2, 1, np.zeros(0, np.int64)).shape == (0,)


def test_each_block_takes_only_its_own_width() -> None:
    values = np.ones(4 * BLOCK, dtype=np.uint32)
    values[-1] = 2**20  # one wide value widens its block only
    words, _, widths = bitpack.pack([values])
    assert widths.tolist() == [1, 1, 1, 21]
    assert words.shape[0] == 4 * (1 + 1 + 1 + 21) + 2


@pytest.mark.parametrize(
    "bad", [np.array([-1, 2]), np.array([2**32]), np.array([0.5, 1.0]), np.zeros((2, 2), np.uint32)]
)
def test_values_outside_32_bits_or_not_integers_are_refused(bad: np.ndarray) -> None:
    with pytest.raises(ValueError):
        bitpack.pack([bad])


def test_columns_of_unequal_length_are_refused() -> None:
    with pytest.raises(ValueError, match="one length"):
        bitpack.pack([np.zeros(3, np.uint32), np.zeros(4, np.uint32)])
    with pytest.raises(ValueError, match="at least one"):
        bitpack.pack([])


def test_bit_widths() -> None:
    values = np.array([0, 1, 2, 3, 4, 255, 256, 2**31, 2**32 - 1], dtype=np.uint64)
    assert bitpack.bit_widths(values).tolist() == [0, 1, 2, 2, 3, 8, 9, 32, 32]


def test_lists_as_gaps_and_back_with_empty_single_and_huge_gaps() -> None:
    counts = np.array([3, 0, 1, 2, 0, 4])
    values = np.array([5, 9, 9, 7, 0, 2**32 - 1, 1, 2, 3, 2**32 - 1])
    deltas = bitpack.gaps(values, counts)
    assert deltas.tolist() == [5, 4, 0, 7, 0, 2**32 - 1, 1, 1, 1, 2**32 - 4]
    assert bitpack.ungap(deltas, counts).tolist() == values.tolist()
    assert bitpack.ungap(roundtrip([deltas])[0], counts).tolist() == values.tolist()
    empty = np.zeros(0, np.int64)
    assert bitpack.gaps(empty, empty).shape == (0,) and bitpack.ungap(empty, empty).shape == (0,)
    with pytest.raises(ValueError, match="ascending"):
        bitpack.gaps(np.array([4, 3]), np.array([2]))


def test_ranges() -> None:
    got = bitpack.ranges(np.array([10, 0, 3]), np.array([2, 0, 3]))
    assert got.tolist() == [10, 11, 3, 4, 5]
    assert bitpack.ranges(np.zeros(0), np.zeros(0)).shape == (0,)


@pytest.mark.parametrize("n", [0, 1, BLOCK - 1, BLOCK, BLOCK + 1, 5 * BLOCK + 17])
@pytest.mark.parametrize("seed", [0, 1])
def test_a_table_packed_a_run_at_a_time_is_the_table_packed_at_once(n: int, seed: int) -> None:
    """The merge packs term range by term range (bitpack.PackedAppender): any cut of the rows,
    inside blocks or on their edges, gives the words, starts and widths of ``pack``."""
    rng = np.random.default_rng(seed)
    columns = [rng.integers(0, 2**w, n).astype(np.uint32) for w in (0, 3, 17, 32)]
    columns.append(np.arange(n, dtype=np.int64))
    appender = bitpack.PackedAppender(len(columns))
    at = 0
    while at < n:
        step = int(rng.choice([1, 5, BLOCK - 1, BLOCK, 300]))
        appender.add([c[at : at + step] for c in columns])
        at += step
    appender.add([c[:0] for c in columns])  # an empty run changes nothing
    for got, want in zip(appender.finish(), bitpack.pack(columns), strict=True):
        assert got.dtype == want.dtype
        assert got.tobytes() == want.tobytes()


def test_an_appender_refuses_negative_values() -> None:
    appender = bitpack.PackedAppender(1)
    appender.add([np.arange(3, dtype=np.int64)])
    with pytest.raises(ValueError):
        appender.add([np.array([-1], dtype=np.int64)])
