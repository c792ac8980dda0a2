"""The answer cache: least recently used out first, entries expire, size 0 is off."""

from __future__ import annotations

from services.search.result_cache import ResultCache


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_least_recently_used_goes_first():
    cache: ResultCache[str] = ResultCache(2, 60, Clock())
    cache.put("a", "A")
    cache.put("b", "B")
    assert cache.get("a") == "A"  # a is now the most recent
    cache.put("c", "C")
    assert cache.get("b") is None and cache.get("a") == "A" and cache.get("c") == "C"
    assert len(cache) == 2 and cache.hits == 3 and cache.misses == 1


def test_entries_expire_and_a_size_of_zero_keeps_nothing():
    clock = Clock()
    cache: ResultCache[str] = ResultCache(10, 300, clock)
    cache.put("q", "answer")
    clock.now = 300.0
    assert cache.get("q") == "answer"
    clock.now = 300.5
    assert cache.get("q") is None and len(cache) == 0
    off: ResultCache[str] = ResultCache(0, 300, clock)
    off.put("q", "answer")
    assert off.get("q") is None and len(off) == 0
