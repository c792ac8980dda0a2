"""The progress line: what it says, and that it counts each response once."""

from __future__ import annotations

from collections import Counter

from services.crawler.report.progress import progress_counters, progress_line


def test_committed_status_codes_are_not_added_to_the_live_ones() -> None:
    live = Counter({"status_200": 7, "status_404": 3})  # every response this run, as it came
    committed = Counter({"status_200": 5, "status_404": 3, "documents": 5})  # the first batches
    shown = progress_counters(committed, live)
    assert shown == Counter({"status_200": 7, "status_404": 3, "documents": 5})
    line = progress_line(
        pages=10, elapsed=2.0, recent_rate=5.0, queued=4, counters=shown, errors=3, nbytes=2048
    )
    assert "status 200:7 404:3" in line and "documents 5" in line


def test_the_reporter_prints_lines_and_counts_the_queue_seldom(capsys) -> None:
    """Away from a terminal each report is a line of its own; the frontier's COUNT (a query)
    runs at most every QUEUE_COUNT_EVERY seconds, not for every line."""
    import asyncio

    from services.crawler.report.progress import Progress, report_progress, show

    counts: list[int] = []
    pages = iter(range(0, 1000, 10))

    def now() -> Progress:
        return Progress(next(pages), 1, 2048, Counter({"status_200": 5, "documents": 4}))

    async def queued() -> int:
        counts.append(1)
        return 42

    async def run() -> None:
        task = asyncio.create_task(report_progress(0.0, now, queued, every=0.0))
        for _ in range(30):  # each sleep(0) lets the reporter print a line
            await asyncio.sleep(0)
        task.cancel()

    asyncio.run(run())
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) >= 10 and all("queued 42" in line and "status 200:5" in line for line in lines)
    assert len(counts) == 1  # many lines, one COUNT
    show("crawled 3 pages", final=True)
    assert capsys.readouterr().err == "crawled 3 pages\n"


def test_progress_line_names_rate_queue_statuses_errors_and_bytes() -> None:
    from collections import Counter

    line = progress_line(
        pages=1200,
        elapsed=2.0,
        recent_rate=650.0,
        queued=3400,
        counters=Counter(status_200=1100, status_404=3, documents=900),
        errors=7,
        nbytes=12_500_000,
    )
    assert line == (
        "1200 pages  650 pages/s (avg 600)  queued 3400  status 200:1100 404:3  "
        "errors 7  12.5 MB  documents 900"
    )
