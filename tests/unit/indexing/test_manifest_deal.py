"""Blocks dealt over map tasks: contiguous runs, every part used, sizes as even as runs allow."""

from __future__ import annotations

import random

from services.indexing.manifest import deal


def test_uneven_blocks_are_balanced_by_size_not_by_count() -> None:
    sizes = [499, 1485, 2932, 5259, 8468, 938, 1844, 4131, 8570, 8000, 7000, 6000]
    parts = deal(sizes, 2)
    loads = [sum(s for s, p in zip(sizes, parts, strict=True) if p == k) for k in range(2)]
    assert parts == sorted(parts) and set(parts) == {0, 1}
    assert max(loads) <= sum(sizes) / 2 + max(sizes) / 2  # within half a block of even
    assert parts.index(1) > len(sizes) // 2  # by count it would cut in the middle


def test_every_part_gets_a_block_and_no_part_is_skipped() -> None:
    rng = random.Random(5)
    for _ in range(500):
        sizes = [rng.choice([0, 1, 10, 1000]) for _ in range(rng.randint(1, 20))]
        parts = rng.randint(1, 25)
        dealt = deal(sizes, parts)
        count = min(parts, len(sizes))
        assert dealt[0] == 0 and dealt[-1] == count - 1
        assert all(b - a in (0, 1) for a, b in zip(dealt, dealt[1:], strict=False))  # none skipped
    assert deal([5, 5, 5], 3) == [0, 1, 2] and deal([1, 100, 1], 3) == [0, 1, 2]
    assert deal([], 4) == [] and deal([0, 0, 0, 0], 2) == [0, 0, 1, 1]
