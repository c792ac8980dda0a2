"""What a crawl reports: the run's totals and the live progress line."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


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
    status codes again once a batch is committed: adding both showed more 404s than pages."""
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
