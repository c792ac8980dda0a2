"""Heartbeats: each crawler process says, every few seconds, who it is and what it has done.

One ``crawl_nodes`` row per process (host, pid, role, version, start, last beat, counters),
written in the process's own transaction order like everything else it writes. The
operator's view (``nimbus crawl status``) reads them: a node is dead when its last beat is
older than ``DEAD_AFTER`` beats, whatever its row's state says, so the view never trusts a
flag a killed process could not clear. All in the database, so it works from any machine
that reaches it.
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import dataclass
from importlib import metadata

from sqlalchemy import select
from sqlalchemy.orm import Session

from services.storage.sql.models import BlockedHost, CrawlControl, CrawlNode
from services.text.urls import bare_host

BEAT_EVERY = 5.0  # seconds between beats
DEAD_AFTER = 4  # beats missed before a node is shown dead
# What a beating node says of itself; each is "dead" once its beats stop (a committer on
# standby as much as a running worker). "stopped" is a clean end and stays so.
LIVE_STATES = ("running", "paused", "standby")


def version() -> str:
    try:
        return metadata.version("nimbus-search")
    except metadata.PackageNotFoundError:  # a checkout run without installing
        return "unknown"


@dataclass(frozen=True)
class Beat:
    """One heartbeat of this process."""

    node_id: str
    role: str
    started_at: float
    at: float
    state: str  # running | paused | standby (a committer not elected) | stopped
    counters: dict[str, int]


def node_id(worker: str) -> str:
    """``worker`` (host and partitions) and the pid: unique while the process lives."""
    return f"{worker}/{os.getpid()}"


def beat(session: Session, b: Beat) -> None:
    """Write (insert or refresh) this process's row."""
    row = session.get(CrawlNode, b.node_id)
    if row is None:
        row = CrawlNode(
            node_id=b.node_id,
            role=b.role,
            host=socket.gethostname(),
            pid=os.getpid(),
            version=version(),
            started_at=b.started_at,
        )
        session.add(row)
    row.beat_at, row.state = b.at, b.state
    row.counters = json.dumps(b.counters, sort_keys=True)


@dataclass(frozen=True)
class NodeView:
    node_id: str
    role: str
    host: str
    pid: int
    version: str
    started_at: float
    beat_at: float
    state: str  # running | stopped | dead
    counters: dict[str, int]


def nodes(session: Session, now: float, beat_every: float = BEAT_EVERY) -> list[NodeView]:
    """Every node, newest first; a running node that missed ``DEAD_AFTER`` beats is dead."""
    out = []
    for row in session.scalars(select(CrawlNode).order_by(CrawlNode.started_at.desc())):
        state = row.state
        if state in LIVE_STATES and now - row.beat_at > DEAD_AFTER * beat_every:
            state = "dead"
        out.append(
            NodeView(
                row.node_id,
                row.role,
                row.host,
                row.pid,
                row.version,
                row.started_at,
                row.beat_at,
                state,
                json.loads(row.counters or "{}"),
            )
        )
    return out


def workers(session: Session, now: float, beat_every: float = BEAT_EVERY) -> tuple[list[str], list[str]]:
    """Identities (node ids without the pid) of the workers (live, dead). Dead: stopped
    beating without stopping cleanly and with no live successor under the same identity,
    so their leases can be handed out at once."""
    rows = session.execute(
        select(CrawlNode.node_id, CrawlNode.beat_at).where(
            CrawlNode.role == "worker", CrawlNode.state.in_(("running", "paused"))
        )
    )
    live: set[str] = set()
    silent: set[str] = set()
    for node, beat_at in rows:
        (live if beat_at >= now - DEAD_AFTER * beat_every else silent).add(node.rsplit("/", 1)[0])
    return sorted(live), sorted(silent - live)


def share(workers: list[str], me: str, partitions: int) -> list[int]:
    """``me``'s share of the host partitions among the live ``workers``: every partition has
    exactly one owner, and a worker's hosts change only when the set of workers does."""
    names = sorted(set(workers) | {me})
    index, count = names.index(me), len(names)
    return [p for p in range(partitions) if p % count == index]


def status_table(views: list[NodeView], now: float) -> str:
    """The operator's table: one line per node, then how many run and the pages of all."""
    header = (
        f"{'node':40s} {'role':8s} {'state':8s} {'beat':>8s} {'pages':>8s} {'bytes':>12s} "
        f"{'errors':>7s} {'leased':>6s}"
    )
    lines = [header]
    for v in views:
        c = v.counters
        lines.append(
            f"{v.node_id[:40]:40s} {v.role:8s} {v.state:8s} {now - v.beat_at:7.0f}s {c.get('pages', 0):8d} "
            f"{c.get('bytes', 0):12d} {c.get('errors', 0):7d} {c.get('leased_batches', 0):6d}"
        )
    live = [v for v in views if v.state == "running"]
    pages = sum(v.counters.get("pages", 0) for v in views)
    lines.append(f"{len(live)} running, {sum(v.state == 'dead' for v in views)} dead; {pages} pages in all")
    return "\n".join(lines)


@dataclass(frozen=True)
class Control:
    """What the operator asked: pause leasing, stop every node started before a time, and
    leave some hosts (with their subdomains) alone."""

    paused: bool = False
    stop_requested_at: float = 0.0
    blocked: frozenset[str] = frozenset()

    def stops(self, started_at: float) -> bool:
        """A stop applies to the nodes running when it was asked, not to ones started later."""
        return self.stop_requested_at > started_at


def control(session: Session) -> Control:
    values = {row.name: row.value for row in session.scalars(select(CrawlControl))}
    blocked = frozenset(session.scalars(select(BlockedHost.host)))
    return Control(bool(values.get("paused", 0.0)), float(values.get("stop_requested_at", 0.0)), blocked)


def block_hosts(
    session: Session, hosts: list[str], now: float, reason: str = "", *, purged: bool = False
) -> list[str]:
    """Take ``hosts`` (names or URLs) out of every crawl from its next heartbeat: their URLs
    are not fetched, links to them not queued (``blocked_by_operator``); ``purged``: their
    pages were purged now (``purged_at``; blocking again without it keeps an earlier purge's).
    Returns the names as stored; raises ``BadUrlError`` naming the first that is no host name."""
    names = [bare_host(host) for host in hosts]
    for name in names:
        row = session.get(BlockedHost, name)
        if row is None:
            row = BlockedHost(host=name, reason=reason, blocked_at=now)
            session.add(row)
        else:
            row.reason, row.blocked_at = reason or row.reason, now
        if purged:
            row.purged_at = now
    return names


def unblock_hosts(session: Session, hosts: list[str]) -> list[str]:
    """Let ``hosts`` back in: links found from now on are crawled. Their URLs already
    finished as blocked come back at their recrawl time, as robots-denied ones do."""
    names = [bare_host(host) for host in hosts]
    for name in names:
        row = session.get(BlockedHost, name)
        if row is not None:
            session.delete(row)
    return names


def blocked_hosts(session: Session) -> list[BlockedHost]:
    return list(session.scalars(select(BlockedHost).order_by(BlockedHost.host)))


def beat_and_read(session: Session, b: Beat) -> Control:
    """One beat, and what the operator asks of the node now (one transaction)."""
    beat(session, b)
    return control(session)


def command(session: Session, name: str, now: float) -> None:
    """Record ``pause``, ``resume`` or ``stop`` for every crawler to read at its next beat."""
    updates = {"pause": ("paused", 1.0), "resume": ("paused", 0.0), "stop": ("stop_requested_at", now)}
    if name not in updates:
        raise ValueError(f"unknown crawl command {name!r}: use pause, resume or stop")
    key, value = updates[name]
    row = session.get(CrawlControl, key)
    if row is None:
        session.add(CrawlControl(name=key, value=value, set_at=now))
    else:
        row.value, row.set_at = value, now
