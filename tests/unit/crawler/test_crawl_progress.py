"""The live progress line counts each response once."""

from __future__ import annotations

from collections import Counter

from services.crawler.progress import progress_counters, progress_line


def test_committed_status_codes_are_not_added_to_the_live_ones() -> None:
    live = Counter({"status_200": 7, "status_404": 3})  # every response this run, as it came
    committed = Counter({"status_200": 5, "status_404": 3, "documents": 5})  # the first batches
    shown = progress_counters(committed, live)
    assert shown == Counter({"status_200": 7, "status_404": 3, "documents": 5})
    line = progress_line(
        pages=10, elapsed=2.0, recent_rate=5.0, queued=4, counters=shown, errors=3, nbytes=2048
    )
    assert "status 200:7 404:3" in line and "documents 5" in line
