"""When the daemon merges a version's deltas into its base (services.indexing.merge_policy)."""

from __future__ import annotations

import pytest

from services.indexing.merge_policy import should_merge


@pytest.mark.parametrize(
    ("deltas", "changed", "base", "due"),
    [
        (0, 0, 1000, False),  # nothing to merge
        (0, 500, 1000, False),  # no delta: whatever the count
        (1, 10, 1000, False),
        (7, 99, 1000, False),
        (8, 8, 1000, True),  # the fan-out bound
        (1, 100, 1000, True),  # the share bound: a tenth of the base
        (2, 1, 0, True),  # an empty base: any document is a large share
    ],
)
def test_a_merge_is_due_at_either_bound(deltas: int, changed: int, base: int, due: bool) -> None:
    assert should_merge(deltas, changed, base, max_deltas=8, share=0.10) is due
