"""What the dashboard shows, read from the database: nodes (their heartbeats), the frontier
by state, the policy counters, the busiest hosts. Status comes from the ledger and the
heartbeats, never from a flag that can go stale."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from services.crawler.cluster import heartbeat
from services.crawler.frontier import archive_batches, entries
from services.crawler.frontier.archive_batches import ArchiveProgress
from services.storage.sql.counters import read_counters
from services.storage.sql.models import FetchBatch, FrontierEntry, Host

POLICY_COUNTERS = (
    "documents",
    "robots_denied",
    "crawl_delay_clamped",
    "too_large",
    "duplicate",
    "near_duplicate",
    "language_skipped",
    "soft_404",
    "deferred_dead_prefix",
    "links_over_cap",
    "bad_url_links",
    "trap_path_links",
    "blocked_by_operator",
    "documents_purged",  # a blocked host's pages the operator took out of the index
    "purged_host_pages",  # ... and its pages committed after that, stored removed
    "fetch_error",
    "gave_up",
)


@dataclass
class HostLine:
    host: str
    waiting: int
    pages: int
    errors: int


@dataclass
class SlowHost:
    host: str
    delay: float  # seconds between requests: robots.txt's Crawl-delay, or ours when none
    errors: int  # retryable failures seen (they slow the host down further)
    pages: int
    waiting: int


CHART_MINUTES = 60


@dataclass
class Minute:
    start: float  # epoch seconds
    pages: int
    errors: int


@dataclass
class BlockedLine:
    host: str
    reason: str
    blocked_at: float
    purged_at: float | None = None  # its stored pages purged then (``block --purge``)


@dataclass
class ClusterStatus:
    nodes: list[heartbeat.NodeView]
    frontier: dict[str, int]
    counters: dict[str, int]
    busiest: list[HostLine] = field(default_factory=list)
    slowest: list[SlowHost] = field(default_factory=list)  # by delay, then errors
    paused: bool = False
    minutes: list[Minute] = field(default_factory=list)  # the last CHART_MINUTES, oldest first
    blocked: list[BlockedLine] = field(default_factory=list)  # the operator's blocked hosts
    archives: list[ArchiveProgress] = field(default_factory=list)  # archive crawls, newest first

    def chart(self, width: int = 600, height: int = 120) -> dict[str, str | int]:
        """SVG polyline points for pages and errors per minute (served as markup, no script)."""
        top = max([m.pages for m in self.minutes] + [m.errors for m in self.minutes] + [1])
        step = width / max(len(self.minutes) - 1, 1)

        def points(values: list[int]) -> str:
            return " ".join(f"{i * step:.1f},{height - v * height / top:.1f}" for i, v in enumerate(values))

        return {
            "pages": points([m.pages for m in self.minutes]),
            "errors": points([m.errors for m in self.minutes]),
            "top": top,
            "width": width,
            "height": height,
        }

    @staticmethod
    def http_errors(counters: dict[str, int]) -> dict[str, int]:
        """A node's answers with an HTTP error status by class (``{"4xx": n, "5xx": n}``,
        from its ``errors_http_<code>`` counters), shown beside its failed fetches: a 404 is
        an answer, not a failed fetch, yet a row with "errors 0" beside 1,926 404s reads as
        a lie."""
        classes = {"4xx": 0, "5xx": 0}
        for name, n in counters.items():
            code = name.removeprefix("errors_http_")
            if name.startswith("errors_http_") and code.isdigit() and f"{code[0]}xx" in classes:
                classes[f"{code[0]}xx"] += n
        return classes

    @property
    def running(self) -> int:
        return sum(n.state == "running" for n in self.nodes)

    @property
    def pages(self) -> int:
        return sum(n.counters.get("pages", 0) for n in self.nodes)


def cluster_status(session: Session, now: float, beat_every: float, hosts: int = 10) -> ClusterStatus:
    waiting = (
        select(FrontierEntry.host, func.count().label("n"))
        .where(FrontierEntry.state == "new")
        .group_by(FrontierEntry.host)
        .order_by(func.count().desc())
        .limit(hosts)
    )
    rows = session.execute(waiting).all()
    known = {h.host: h for h in session.scalars(select(Host).where(Host.host.in_([r.host for r in rows])))}
    busiest = [
        HostLine(r.host, int(r.n), known[r.host].pages if r.host in known else 0,
                 known[r.host].errors if r.host in known else 0)
        for r in rows
    ]  # fmt: skip
    counters = read_counters(session)
    first = (int(now) // 60 - CHART_MINUTES + 1) * 60
    per_minute: dict[int, list[int]] = {}
    ledger = select(FetchBatch.committed_at, FetchBatch.pages, FetchBatch.errors).where(
        FetchBatch.state == "committed",
        FetchBatch.committed_at >= first,
        FetchBatch.pages + FetchBatch.errors > 0,
    )
    for committed_at, pages, errors in session.execute(ledger):
        slot = per_minute.setdefault(int(committed_at or 0) // 60 * 60, [0, 0])
        slot[0] += pages
        slot[1] += errors
    minutes = [
        Minute(float(t), *per_minute.get(t, [0, 0])) for t in range(first, first + CHART_MINUTES * 60, 60)
    ]
    return ClusterStatus(
        slowest=slowest_hosts(session, hosts),
        nodes=heartbeat.nodes(session, now, beat_every),
        frontier=entries.count_by_state(session),
        counters={name: counters.get(name, 0) for name in POLICY_COUNTERS},
        busiest=busiest,
        paused=heartbeat.control(session).paused,
        minutes=minutes,
        blocked=[
            BlockedLine(b.host, b.reason, b.blocked_at, b.purged_at) for b in heartbeat.blocked_hosts(session)
        ],
        archives=archive_batches.progress(session, now),
    )


def slowest_hosts(session: Session, limit: int = 10) -> list[SlowHost]:
    """Hosts that hold the crawl back: the longest Crawl-delay first, then the most errors."""
    delay = func.coalesce(Host.crawl_delay, 0.0)
    rows = session.execute(
        select(Host.host, delay, Host.errors, Host.pages)
        .where((delay > 0) | (Host.errors > 0))
        .order_by(delay.desc(), Host.errors.desc(), Host.host)
        .limit(limit)
    ).all()
    waiting = dict(
        session.execute(
            select(FrontierEntry.host, func.count())
            .where(FrontierEntry.state == "new", FrontierEntry.host.in_([r[0] for r in rows]))
            .group_by(FrontierEntry.host)
        ).all()
    )
    return [SlowHost(h, float(d), int(e or 0), int(p or 0), int(waiting.get(h, 0))) for h, d, e, p in rows]
