"""What the dashboard shows, read from the database: nodes (their heartbeats), the frontier
by state, the policy counters, the busiest hosts. Status comes from the ledger and the
heartbeats, never from a flag that can go stale."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from services.crawler import frontier, heartbeat
from services.storage.db import read_counters
from services.storage.models import FrontierEntry, Host

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
class ClusterStatus:
    nodes: list[heartbeat.NodeView]
    frontier: dict[str, int]
    counters: dict[str, int]
    busiest: list[HostLine] = field(default_factory=list)
    paused: bool = False

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
    return ClusterStatus(
        nodes=heartbeat.nodes(session, now, beat_every),
        frontier=frontier.count_by_state(session),
        counters={name: counters.get(name, 0) for name in POLICY_COUNTERS},
        busiest=busiest,
        paused=heartbeat.control(session).paused,
    )
