"""The operator's commands against the database, once: seed, pause/resume/stop, block
(and purge), unblock, index now, and the status they read.

The CLI's local commands (``nimbus crawl seed ...`` on a machine that reaches the database),
the admin API (``/admin/api/...``, what ``nimbus ... --remote`` calls) and the dashboard's
forms all call these functions, so the three refuse the same input with the same message
and change the same rows. Each returns a small record that tells itself as the operator's
lines (``lines()``) and travels as JSON (``asdict`` / ``from_json``): the remote CLI prints
exactly what the local one prints.

Every function runs in the caller's transaction.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields
from enum import StrEnum
from typing import Any, TypeVar

from sqlalchemy.orm import Session, sessionmaker

from services.admin.errors import OperatorInputError
from services.crawler.cluster import heartbeat
from services.crawler.commit.purge import purge_hosts
from services.crawler.frontier import archive_batches, entries
from services.crawler.frontier.archive_batches import ArchiveProgress
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.schema import init_db
from services.text.errors import BadUrlError
from services.text.urls import MAX_URL_LENGTH, bare_host, normalize_url

MAX_URLS = 1000  # per command: a larger list is a file for `nimbus crawl seed $(cat ...)` in parts
MAX_HOSTS = 100
MAX_REASON_CHARS = 500  # the dashboard's field says the same (maxlength)
MAX_HOST_TEXT = MAX_URL_LENGTH  # a host may be given as a URL
RECENT_BUILDS = 10

R = TypeVar("R")


class CrawlCommand(StrEnum):
    """What the operator may tell every crawler; each reads it at its next heartbeat."""

    PAUSE = "pause"
    RESUME = "resume"
    STOP = "stop"


def from_json(cls: type[R], data: Mapping[str, Any]) -> R:
    """A record of ``cls`` from its JSON object (unknown keys ignored: a newer server may say more)."""
    names = {f.name for f in fields(cls)}  # type: ignore[arg-type]
    return cls(**{k: v for k, v in data.items() if k in names})


def _shown(text: str) -> str:
    return repr(text if len(text) <= 80 else text[:80] + "...")


# ------------------------------------------------------------------ input
def seed_urls(texts: Sequence[str]) -> list[str]:
    """The normalized URLs of ``texts``, or ``OperatorInputError`` naming the first bad one."""
    if not texts:
        raise OperatorInputError("give one or more absolute http(s) URLs")
    if len(texts) > MAX_URLS:
        raise OperatorInputError(f"{len(texts)} URLs: give at most {MAX_URLS} at a time")
    urls = []
    for text in texts:
        if len(text) > MAX_URL_LENGTH:
            raise OperatorInputError(
                f"bad seed: URL longer than {MAX_URL_LENGTH} characters: {_shown(text)}; "
                "give absolute http(s) URLs"
            )
        try:
            urls.append(normalize_url(text))
        except BadUrlError as exc:
            raise OperatorInputError(f"bad seed: {exc}; give absolute http(s) URLs") from exc
    return urls


def seed_batches(texts: Sequence[str]) -> list[list[str]]:
    """``seed_urls`` of any number of texts (a file of seeds), in batches of at most
    ``MAX_URLS``: every one checked before the first batch is seeded."""
    if not texts:
        raise OperatorInputError("give one or more absolute http(s) URLs")
    return [seed_urls(texts[at : at + MAX_URLS]) for at in range(0, len(texts), MAX_URLS)]


def seed_file_words(path: str) -> list[str]:
    """The URLs of a seed file (``-``: standard input): whitespace-separated words, lines that
    start with ``#`` left out."""
    import sys

    try:
        text = sys.stdin.read() if path == "-" else open(path, encoding="utf-8").read()  # noqa: SIM115
    except (OSError, UnicodeDecodeError) as exc:
        raise OperatorInputError(f"cannot read the seed file {path}: {exc}") from exc
    return [word for line in text.splitlines() if not line.lstrip().startswith("#") for word in line.split()]


def seeded_total(results: Sequence[Seeded]) -> Seeded:
    """The batches' results as one."""
    recrawled = [r.recrawled for r in results if r.recrawled is not None]
    return Seeded(
        sum(r.added for r in results), sum(r.known for r in results), sum(recrawled) if recrawled else None
    )


def host_names(texts: Sequence[str]) -> list[str]:
    """The host names ``texts`` mean (names or URLs; lower case, IDNA), or ``OperatorInputError``."""
    if not texts:
        raise OperatorInputError("give one or more host names (example.org)")
    if len(texts) > MAX_HOSTS:
        raise OperatorInputError(f"{len(texts)} hosts: give at most {MAX_HOSTS} at a time")
    names = []
    for text in texts:
        if len(text) > MAX_HOST_TEXT:
            raise OperatorInputError(
                f"not a host name: {_shown(text)} (give example.org or http://example.org/)"
            )
        try:
            names.append(bare_host(text))
        except BadUrlError as exc:
            raise OperatorInputError(str(exc)) from exc
    return names


def block_reason(text: str) -> str:
    """The reason shown beside a blocked host: one line of printable text, at most
    ``MAX_REASON_CHARS`` (it is printed on operators' terminals: no control characters)."""
    reason = text.strip()
    if len(reason) > MAX_REASON_CHARS:
        raise OperatorInputError(f"the reason has {len(reason)} characters: keep it to {MAX_REASON_CHARS}")
    if any(unicodedata.category(c) == "Cc" for c in reason):
        raise OperatorInputError("the reason holds control characters (a line break?): give one line of text")
    return reason


def crawl_command(text: str) -> CrawlCommand:
    try:
        return CrawlCommand(text)
    except ValueError:
        raise OperatorInputError(f"unknown crawl command {_shown(text)}: use pause, resume or stop") from None


# ------------------------------------------------------------------ results
@dataclass(frozen=True)
class Seeded:
    added: int
    known: int
    recrawled: int | None = None  # None: no recrawl asked

    def lines(self) -> list[str]:
        said = [f"{self.added} new URLs in the frontier ({self.known} known already)"]
        if self.recrawled is not None:
            said.append(f"{self.recrawled} known URLs due again now, before every other")
        return said


@dataclass(frozen=True)
class Commanded:
    command: str
    within_seconds: float = heartbeat.BEAT_EVERY

    def lines(self) -> list[str]:
        return [
            f"asked every crawler to {self.command}; each reads it at its next heartbeat "
            f"(within {self.within_seconds:.0f} s)"
        ]


@dataclass(frozen=True)
class HostsChanged:
    blocked: list[str] = field(default_factory=list)
    unblocked: list[str] = field(default_factory=list)
    within_seconds: float = heartbeat.BEAT_EVERY
    # With --purge: each blocked host's stored pages (its subdomains' too) marked removed now;
    # None: no purge asked.
    purged: dict[str, int] | None = None

    def lines(self) -> list[str]:
        said = []
        if self.blocked:
            said.append(
                f"blocked {', '.join(self.blocked)} (and their subdomains) for every crawler, from its "
                f"next heartbeat (within {self.within_seconds:.0f} s)"
            )
        for host, pages in (self.purged or {}).items():
            if pages:
                said.append(
                    f"purged {host}: {pages} stored pages (its subdomains' too) leave the index at its "
                    "next update (`nimbus index update`, or the indexer's within NIMBUS_UPDATE_EVERY s)"
                )
            else:
                said.append(
                    f"nothing to purge for {host}: no stored page of it or its subdomains is live "
                    "(none was crawled, or all were removed already)"
                )
        if self.unblocked:
            said.append(
                f"unblocked {', '.join(self.unblocked)}: links found from now on are crawled; pages "
                "purged stay out of the index until a recrawl finds them good"
            )
        return said


@dataclass(frozen=True)
class BlockedLine:
    host: str
    reason: str
    blocked_at: float
    purged_at: float | None = None  # its stored pages purged then (``block --purge``)


@dataclass(frozen=True)
class CrawlStatus:
    """What ``nimbus crawl status`` prints: the nodes, the frontier, the operator's switches."""

    now: float  # the reader's clock (the server's, through the API): beat ages are against it
    nodes: list[heartbeat.NodeView]
    frontier: dict[str, int]
    blocked: list[BlockedLine]
    paused: bool
    archives: list[ArchiveProgress] = field(default_factory=list)  # archive crawls, newest first

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CrawlStatus:
        """From ``GET /admin/api/status`` (which says more: the dashboard's charts and hosts)."""
        return cls(
            now=float(data["now"]),
            nodes=[from_json(heartbeat.NodeView, n) for n in data["nodes"]],
            frontier={str(k): int(v) for k, v in data["frontier"].items()},
            blocked=[from_json(BlockedLine, b) for b in data["blocked_hosts"]],
            paused=bool(data["paused"]),
            archives=[from_json(ArchiveProgress, a) for a in data.get("archives", [])],
        )

    def lines(self) -> list[str]:
        said = heartbeat.status_table(self.nodes, self.now).splitlines()
        by_state = ", ".join(f"{n} {state}" for state, n in sorted(self.frontier.items()))
        said.append(f"frontier: {by_state or 'empty'}")
        if self.paused:
            said.append("paused: every crawler leases nothing new (`nimbus crawl resume` to go on)")
        said += [
            f"blocked: {b.host}"
            + (f" ({b.reason})" if b.reason else "")
            + ("; its pages purged from the index" if b.purged_at is not None else "")
            for b in self.blocked
        ]
        said += [a.line() for a in self.archives]
        return said


# ------------------------------------------------------------------ the database
@contextmanager
def database(url: str) -> Iterator[sessionmaker[Session]]:
    """Sessions on the crawl's database for one command (the CLI's local path), its schema
    made first, as every process does at start."""
    engine = make_engine(url)
    try:
        init_db(engine)
        yield session_factory(engine)
    finally:
        engine.dispose()


def seed(session: Session, urls: Sequence[str], *, recrawl: bool, now: float, partitions: int) -> Seeded:
    """``urls`` (normalized: ``seed_urls``) into the frontier at the seeds' priority; with
    ``recrawl`` the known ones are due again at once, before every other."""
    again = entries.recrawl_now(session, urls) if recrawl else None
    seeds = [entries.NewUrl(u, 0, entries.SEED_PRIORITY) for u in urls]
    added = entries.add_urls(session, seeds, now, partitions=partitions)
    return Seeded(added, len(seeds) - added, again)


def command(session: Session, what: CrawlCommand, now: float) -> Commanded:
    """Pause, resume or stop every crawler, on every machine, from its next heartbeat."""
    heartbeat.command(session, what.value, now)
    return Commanded(what.value)


def block(
    session: Session, hosts: Sequence[str], reason: str, now: float, *, purge: bool = False
) -> HostsChanged:
    """``hosts`` (``host_names``) and their subdomains out of every crawl; ``reason``
    (``block_reason``) shown beside them. With ``purge`` their stored pages leave the index
    too (``services.crawler.commit.purge``), whether the host was blocked already or not:
    blocking again is how an operator purges a host blocked earlier without it."""
    blocked = heartbeat.block_hosts(session, list(hosts), now, reason, purged=purge)
    return HostsChanged(blocked=blocked, purged=purge_hosts(session, blocked, now) if purge else None)


def unblock(session: Session, hosts: Sequence[str]) -> HostsChanged:
    return HostsChanged(unblocked=heartbeat.unblock_hosts(session, list(hosts)))


def crawl_status(session: Session, now: float, beat_every: float) -> CrawlStatus:
    return CrawlStatus(
        now=now,
        nodes=heartbeat.nodes(session, now, beat_every),
        frontier=entries.count_by_state(session),
        blocked=[
            BlockedLine(b.host, b.reason, b.blocked_at, b.purged_at) for b in heartbeat.blocked_hosts(session)
        ],
        paused=heartbeat.control(session).paused,
        archives=archive_batches.progress(session, now),
    )


def to_json(record: Any) -> dict[str, Any]:
    """A result record as the API's JSON object."""
    return asdict(record)
