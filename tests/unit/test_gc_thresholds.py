"""The crawl loops' collector thresholds are raised for the block only."""

from __future__ import annotations

import gc

import pytest

from services.gc_thresholds import THROUGHPUT, fewer_collections


def test_thresholds_raised_inside_and_restored_after_even_on_error():
    before = gc.get_threshold()
    assert before != THROUGHPUT
    with fewer_collections():
        assert gc.get_threshold() == THROUGHPUT
    assert gc.get_threshold() == before
    with pytest.raises(RuntimeError), fewer_collections((1000, 5, 5)):
        assert gc.get_threshold() == (1000, 5, 5)
        raise RuntimeError("the crawl failed")
    assert gc.get_threshold() == before


def test_cycles_are_still_collected_inside():
    class Node:
        def __init__(self) -> None:
            self.me = self

    with fewer_collections():
        gc.collect()
        for _ in range(THROUGHPUT[0] * 2):  # two young thresholds' worth of cyclic garbage
            Node()
        # Had collection stopped, all 100,000 cycles would still be alive.
        # ``type(o) is``, not ``isinstance``: a dead weak proxy in the heap (numba keeps some)
        # raises ReferenceError when isinstance looks through it.
        assert sum(type(o) is Node for o in gc.get_objects()) < THROUGHPUT[0] + 1
