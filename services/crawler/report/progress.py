"""What a crawl reports: the run's totals and the live progress line."""

from __future__ import annotations

import asyncio
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

QUEUE_COUNT_EVERY = 5.0  # seconds between COUNTs over the frontier: not one every line


@dataclass
class CrawlStats:
    """One run's totals; ``counters`` are the committed policy counters of this run."""

    pages: int = 0
    seconds: float = 0.0
    errors: int = 0
    bytes: int = 0
    counters: dict[str, int] = field(default_factory=dict)

    @property
    def pages_per_second(self) -> float:
        return self.pages / self.seconds if self.seconds > 0 else 0.0

    def summary(self) -> str:
        line = f"crawled {self.pages} pages in {self.seconds:.1f} s ({self.pages_per_second:.1f} pages/s)"
        trips, stored = self.counters.get("db_round_trips", 0), self.counters.get("documents", 0)
        if trips and stored:
            line += f"; {trips} database round trips, {trips / stored:.2f} per stored page"
        return line


def human_bytes(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"


def progress_counters(committed: Counter[str], live: Counter[str]) -> Counter[str]:
    """What the progress line shows: status codes as counted live (every response this run, the
    moment it arrives), everything else as committed. The committed counters hold the same
    status codes again once a batch is committed: adding both would show more 404s than
    pages."""
    shown = Counter({k: v for k, v in committed.items() if not k.startswith("status_")})
    shown.update({k: v for k, v in live.items() if k.startswith("status_")})
    return shown


def progress_line(
    *,
    pages: int,
    elapsed: float,
    recent_rate: float,
    queued: int | None,
    counters: Counter[str],
    errors: int,
    nbytes: int,
) -> str:
    """One line: pages, pages/s (recent), queued, per-status counts, errors, bytes, documents."""
    statuses = sorted((k[len("status_") :], v) for k, v in counters.items() if k.startswith("status_"))
    status_text = " ".join(f"{code}:{count}" for code, count in statuses) or "-"
    queue_text = "?" if queued is None else str(queued)
    return (
        f"{pages} pages  {recent_rate:.0f} pages/s (avg {pages / max(elapsed, 1e-9):.0f})  "
        f"queued {queue_text}  status {status_text}  errors {errors}  {human_bytes(nbytes)}  "
        f"documents {counters.get('documents', 0)}"
    )


@dataclass
class ArchiveFigures:
    """An archive crawl's side of the line: records read, their bytes, errors by kind, and the
    records still to read (as registration counted them; None: not known yet)."""

    records: int = 0
    nbytes: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    left: int | None = None


def archive_line(figures: ArchiveFigures, elapsed: float, recent_rate: float) -> str:
    """``records, records/s, bytes/s, ETA, errors by kind`` of the archive batches read."""
    rate = figures.records / max(elapsed, 1e-9)
    eta = "?"
    if figures.left is not None and rate > 0:
        left = int(figures.left / rate)
        eta = f"{left // 60}m{left % 60:02d}s"
    errors = " ".join(f"{kind}:{n}" for kind, n in sorted(figures.errors.items())) or "none"
    return (
        f"archives: {figures.records} records  {recent_rate:.0f} records/s (avg {rate:.0f})  "
        f"{human_bytes(figures.nbytes / max(elapsed, 1e-9))}/s  ETA {eta}  errors {errors}"
    )


@dataclass
class Progress:
    """A crawl's figures at one moment, as the progress line shows them."""

    pages: int
    errors: int
    nbytes: int
    counters: Counter[str]  # ``progress_counters``: committed, with live status codes
    archive: ArchiveFigures | None = None  # an archive crawl's figures, when it reads archives


def show(line: str, *, final: bool = False) -> None:
    """A line on stderr: rewritten in place on a terminal (a new line only when ``final``),
    one line each elsewhere (logs)."""
    tty = sys.stderr.isatty()
    end = "\n" if final or not tty else ""
    print(f"\r\x1b[K{line}" if tty else line, end=end, file=sys.stderr, flush=True)


async def report_progress(
    started: float,
    now: Callable[[], Progress],
    queued: Callable[[], Awaitable[int]],
    every: float | None = None,
) -> None:
    """The live progress line, every second on a terminal and every ten elsewhere, until
    cancelled; ``queued()`` (a COUNT over the frontier) at most every ``QUEUE_COUNT_EVERY``."""
    every = (1.0 if sys.stderr.isatty() else 10.0) if every is None else every
    waiting: int | None = None
    last_count = last_pages = last_records = 0.0
    last = time.monotonic()
    while True:
        await asyncio.sleep(every)
        at = time.monotonic()
        if at - last_count >= QUEUE_COUNT_EVERY:
            waiting, last_count = await queued(), at
        state = now()
        rate = (state.pages - last_pages) / max(at - last, 1e-9)
        line = progress_line(
            pages=state.pages,
            elapsed=at - started,
            recent_rate=rate,
            queued=waiting,
            counters=state.counters,
            errors=state.errors,
            nbytes=state.nbytes,
        )
        if state.archive is not None:
            records_rate = (state.archive.records - last_records) / max(at - last, 1e-9)
            last_records = state.archive.records
            said = archive_line(state.archive, at - started, records_rate)
            line = said if not state.pages else f"{line}  {said}"
        last, last_pages = at, state.pages
        show(line)
