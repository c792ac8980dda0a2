"""benchmarks.freshness reads each batch's wait from the versions' commit marks."""

from __future__ import annotations

from benchmarks.freshness import batch_waits, percentiles


def test_a_batch_waits_for_the_first_version_whose_mark_includes_it():
    versions = [(100.0, 5, set()), (130.0, 9, {7}), (160.0, 12, set())]
    batches = [(6, 101.0), (7, 102.0), (8, 110.0), (12, 150.0), (13, 155.0)]
    # 6 and 8: the version at 130 (through 9); 7 was pending at 130: the one at 160.
    # 13 is in no version yet: left out.
    assert batch_waits(batches, versions) == [29.0, 58.0, 20.0, 10.0]


def test_a_version_activated_before_a_commit_does_not_count_for_it():
    # A batch leased before the build and committed after it with a smaller seq was pending;
    # a mark can only include a commit it saw.
    assert batch_waits([(4, 120.0)], [(100.0, 5, set()), (140.0, 9, set())]) == [20.0]


def test_percentiles_of_nothing_are_nan_and_of_values_the_nearest_rank():
    assert percentiles([])["n"] == 0
    got = percentiles([3.0, 1.0, 2.0, 10.0])
    assert (got["p50"], got["max"], got["n"]) == (3.0, 10.0, 4)
