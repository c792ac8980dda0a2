"""The metadata database: the tables every service shares.

Times are Unix seconds stored as DOUBLE (portable between SQLite and MySQL,
and never a timezone puzzle). Hashes are 40-character hex strings, so URLs
(unbounded TEXT) are found through their indexed ``url_id``.
"""

from __future__ import annotations

import json
from typing import cast

from sqlalchemy import (
    BigInteger,
    Boolean,
    Double,
    Index,
    Integer,
    String,
    Table,
    Text,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    """The tables' common base: one metadata for ``init_db`` and the migrations."""


def table(model: type[Base]) -> Table:
    """A model's Core table, for the executemany statements of the hot paths (typed: the
    ORM declares ``__table__`` as any ``FromClause``)."""
    return cast(Table, model.__table__)


class Document(Base):
    """One crawled URL and where its bytes and its parsed record are stored."""

    __tablename__ = "documents"

    url_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    # The index's number for the document, from 0; a gap only where a committer died.
    doc_num: Mapped[int] = mapped_column(Integer, unique=True)
    url: Mapped[str] = mapped_column(Text)
    doc_id: Mapped[str] = mapped_column(String(40), index=True)  # SHA-1 of the bytes
    content_type: Mapped[str] = mapped_column(String(100))
    title: Mapped[str] = mapped_column(Text, default="")
    lang: Mapped[str] = mapped_column(String(16), default="")
    length: Mapped[int] = mapped_column(Integer)
    status: Mapped[int] = mapped_column(Integer, default=200)
    depth: Mapped[int] = mapped_column(Integer, default=0)
    last_crawled: Mapped[float] = mapped_column(Double)
    content_block: Mapped[str] = mapped_column(String(255))
    content_index: Mapped[int] = mapped_column(Integer)
    content_offset: Mapped[int] = mapped_column(Integer)
    record_block: Mapped[str] = mapped_column(String(255))
    record_offset: Mapped[int] = mapped_column(Integer)
    record_length: Mapped[int] = mapped_column(Integer)
    # Recrawls: the row always points at the latest version's content and record.
    versions: Mapped[int] = mapped_column(Integer, default=1)  # fetches that changed the content
    unchanged: Mapped[int] = mapped_column(Integer, default=0)  # recrawls that found it unchanged
    # The ledger seq (fetch_batches.seq) of the commit that wrote the current record: the
    # incremental index update takes documents past its base version's ``through_seq``.
    # NULL for rows of releases before it (a full build includes them).
    commit_seq: Mapped[int | None] = mapped_column(Integer, nullable=True, index=True)
    # When a recrawl found the page gone (404, 410) or marked noindex: the row stays (its
    # doc_num, its history), the index leaves it out; a later fetch of the page clears it.
    removed_at: Mapped[float | None] = mapped_column(Double, nullable=True)


class DuplicateUrl(Base):
    """A URL whose bytes equal an already stored document's (same docId).

    The content is stored once; this row says "also at this URL", so search can
    list other URLs with the same content.
    """

    __tablename__ = "duplicate_urls"

    url_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    url: Mapped[str] = mapped_column(Text)
    doc_num: Mapped[int] = mapped_column(Integer, index=True)  # the document holding the content
    doc_id: Mapped[str] = mapped_column(String(40))
    first_seen: Mapped[float] = mapped_column(Double)
    last_seen: Mapped[float] = mapped_column(Double)


class FrontierEntry(Base):
    """A URL waiting to be fetched: the crawl scheduler's task row."""

    __tablename__ = "frontier"
    __table_args__ = (
        Index("ix_frontier_ready", "state", "available_at", "priority"),  # due recrawls
        # Lease order, then what a lease filters on: a crawler process owning half the
        # partitions walks past the other half's rows in the index alone (a table lookup
        # per skipped row makes a lease's cost grow with the frontier: docs/performance-notes.md).
        Index(
            "ix_frontier_lease",
            "state",
            text("priority DESC"),
            "depth",
            "url_id",
            "host_partition",
            "available_at",
        ),
    )

    url_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    url: Mapped[str] = mapped_column(Text)
    host: Mapped[str] = mapped_column(String(255), index=True)
    priority: Mapped[float] = mapped_column(Double, default=0.0)  # higher first
    state: Mapped[str] = mapped_column(String(16), default="new")  # new|leased|done|failed
    available_at: Mapped[float] = mapped_column(Double, default=0.0)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    depth: Mapped[int] = mapped_column(Integer, default=0)
    discovered_from: Mapped[str | None] = mapped_column(String(40), nullable=True)
    batch_seq: Mapped[int | None] = mapped_column(Integer, nullable=True)
    last_status: Mapped[int | None] = mapped_column(Integer, nullable=True)
    last_error: Mapped[str | None] = mapped_column(Text, nullable=True)
    # hash(host) % partitions; the column name avoids MySQL's reserved word PARTITION. No index
    # of its own (migration 0004): the lease filters on it inside ix_frontier_lease.
    partition: Mapped[int] = mapped_column("host_partition", Integer, default=0)
    hops: Mapped[int] = mapped_column(Integer, default=0)  # redirects that led here
    inlinks: Mapped[int] = mapped_column(Integer, default=0)  # links seen while it waited
    recrawl_interval: Mapped[float | None] = mapped_column(Double, nullable=True)  # adaptive


class Host(Base):
    """Per-host politeness state and the cached robots.txt."""

    __tablename__ = "hosts"

    host: Mapped[str] = mapped_column(String(255), primary_key=True)  # scheme://host:port
    robots_txt: Mapped[str | None] = mapped_column(Text, nullable=True)
    robots_status: Mapped[int | None] = mapped_column(Integer, nullable=True)
    robots_fetched_at: Mapped[float | None] = mapped_column(Double, nullable=True)
    crawl_delay: Mapped[float | None] = mapped_column(Double, nullable=True)
    next_fetch_at: Mapped[float] = mapped_column(Double, default=0.0)
    pages: Mapped[int] = mapped_column(Integer, default=0)  # pages requested: the per-host cap
    errors: Mapped[int] = mapped_column(Integer, default=0)  # retryable failures seen
    sitemaps_fetched_at: Mapped[float | None] = mapped_column(Double, nullable=True)


class FetchBatch(Base):
    """The ordered-commit ledger: one row per leased batch of frontier URLs."""

    __tablename__ = "fetch_batches"

    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    state: Mapped[str] = mapped_column(String(16), default="leased")  # leased|committed
    leased_by: Mapped[str] = mapped_column(String(100), default="")
    lease_expires: Mapped[float] = mapped_column(Double, default=0.0)
    created_at: Mapped[float] = mapped_column(Double, default=0.0)
    committed_at: Mapped[float | None] = mapped_column(Double, nullable=True)
    num_urls: Mapped[int] = mapped_column(Integer, default=0)
    # Pages fetched and errors (fetch failures, HTTP >= 400) of the flush that committed this
    # batch, on the flush's last batch: the dashboard's per-minute chart sums them.
    pages: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    errors: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    # A crawl cluster's worker acknowledges a batch (state "acked") with the blob name of its
    # results manifest; the committer commits acked batches in seq order (ordered_commit.py).
    manifest: Mapped[str | None] = mapped_column(String(255), nullable=True)
    acked_at: Mapped[float | None] = mapped_column(Double, nullable=True)
    reschedules: Mapped[int] = mapped_column(Integer, default=0, server_default="0")  # leases taken over
    # An archive batch (``archive_batches.id``) instead of frontier URLs: same seqs, same ledger.
    archive_batch: Mapped[int | None] = mapped_column(Integer, nullable=True)

    __table_args__ = (Index("ix_fetch_batches_state_seq", "state", "seq"),)


class ArchiveBundle(Base):
    """A registered archive bundle (``nimbus archive crawl``): a folder or s3:// prefix and its
    ``bundle.toml``. The same URL with the same description file is one bundle, registered
    once; its batches are planned at registration (``archive_batches``)."""

    __tablename__ = "archive_bundles"
    __table_args__ = (Index("ux_archive_bundles_url_sha", "url_hash", "sha256", unique=True),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    url: Mapped[str] = mapped_column(Text)
    url_hash: Mapped[str] = mapped_column(String(40))  # SHA-1 of ``url``: TEXT has no unique index
    type: Mapped[str] = mapped_column(String(16))  # services.archives.bundle.ArchiveType
    description: Mapped[str] = mapped_column(Text, default="")
    sha256: Mapped[str] = mapped_column(String(64))  # of bundle.toml
    state: Mapped[str] = mapped_column(String(16))  # registered | running | finished
    registered_at: Mapped[float] = mapped_column(Double)  # also the time of undated records
    started_at: Mapped[float | None] = mapped_column(Double, nullable=True)  # first lease
    finished_at: Mapped[float | None] = mapped_column(Double, nullable=True)
    batches: Mapped[int] = mapped_column(Integer, default=0)
    records_hint: Mapped[int] = mapped_column(BigInteger, default=0)  # records found at registration
    seed_frontier: Mapped[bool] = mapped_column(Boolean, default=False)  # out-links into the web frontier


class ArchiveBatch(Base):
    """One planned batch of an archive bundle: a byte range of one file (``services.archives.batches``).

    ``planned`` until a crawler leases it, which gives it a ``fetch_batches`` seq (``seq``)
    and from then on the ledger says where it is; ``committed`` once its documents are. The
    counts are its reader's, written (never added) each time the batch is read, so a batch
    read twice counts once."""

    __tablename__ = "archive_batches"
    __table_args__ = (
        Index("ix_archive_batches_state_bundle", "state", "bundle_id", "number"),
        Index("ix_archive_batches_seq", "seq"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    bundle_id: Mapped[int] = mapped_column(Integer, index=True)
    number: Mapped[int] = mapped_column(Integer)  # its place in the bundle, from 0
    file: Mapped[str] = mapped_column(Text)
    start: Mapped[int] = mapped_column(BigInteger)
    end: Mapped[int] = mapped_column(BigInteger)
    records_hint: Mapped[int] = mapped_column(Integer, default=0)
    seek_state: Mapped[str] = mapped_column(Text)  # JSON
    state: Mapped[str] = mapped_column(String(16))  # planned | leased | committed
    seq: Mapped[int | None] = mapped_column(Integer, nullable=True)
    committed_at: Mapped[float | None] = mapped_column(Double, nullable=True)
    records: Mapped[int] = mapped_column(Integer, default=0)
    bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    errors: Mapped[int] = mapped_column(Integer, default=0)
    kinds: Mapped[str] = mapped_column(Text, default="{}")  # JSON: records by kind
    damage: Mapped[str] = mapped_column(Text, default="[]")  # JSON: errors naming file and offset


class UrlAlias(Base):
    """A URL that names another's page: a wiki redirect, an archived 3xx, a web crawl's
    permanent redirect. Not a document; ``target_url_id`` is the document's (when it is
    stored). The index build resolves links to the alias to the target's document, and gives
    the target the alias's ``title`` (a wiki redirect's) as anchor text."""

    __tablename__ = "url_aliases"

    url_id: Mapped[str] = mapped_column(String(40), primary_key=True)
    url: Mapped[str] = mapped_column(Text)
    target_url_id: Mapped[str] = mapped_column(String(40), index=True)
    target_url: Mapped[str] = mapped_column(Text)
    title: Mapped[str | None] = mapped_column(Text, nullable=True)  # the alias's own title, if it has one
    first_seen: Mapped[float] = mapped_column(Double)
    last_seen: Mapped[float] = mapped_column(Double)


class CrawlCounter(Base):
    """Counts of every policy decision (robots denials, clamped delays, statuses, ...)."""

    __tablename__ = "crawl_counters"

    name: Mapped[str] = mapped_column(String(100), primary_key=True)
    value: Mapped[int] = mapped_column(Integer, default=0)


class CrawlNode(Base):
    """A crawler process's heartbeat: who it is, when it last beat, what it has done.

    The operator's view of the crawl (``nimbus crawl status``) reads these rows: a node
    whose beat is older than a few intervals is dead, whatever its ``state`` says.
    """

    __tablename__ = "crawl_nodes"

    node_id: Mapped[str] = mapped_column(String(255), primary_key=True)  # host/partitions/pid
    role: Mapped[str] = mapped_column(String(32))
    host: Mapped[str] = mapped_column(String(255))
    pid: Mapped[int] = mapped_column(Integer)
    version: Mapped[str] = mapped_column(String(64))
    started_at: Mapped[float] = mapped_column(Double)
    beat_at: Mapped[float] = mapped_column(Double)
    state: Mapped[str] = mapped_column(String(16))  # running | stopped
    counters: Mapped[str] = mapped_column(Text)  # JSON: pages, bytes, errors, queues, ...


class CrawlControl(Base):
    """What the operator asked of every crawler (``nimbus crawl pause|resume|stop``): read by
    each process at every heartbeat, so a command works from any machine."""

    __tablename__ = "crawl_control"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)  # paused | stop_requested_at
    value: Mapped[float] = mapped_column(Double)
    set_at: Mapped[float] = mapped_column(Double)


class BlockedHost(Base):
    """A host the operator took out of the crawl (``nimbus crawl block HOST``, the dashboard):
    read by every crawler at each heartbeat; its subdomains are blocked with it."""

    __tablename__ = "blocked_hosts"

    host: Mapped[str] = mapped_column(String(255), primary_key=True)  # lower case, IDNA
    reason: Mapped[str] = mapped_column(Text, default="")
    blocked_at: Mapped[float] = mapped_column(Double)
    # When the operator purged its stored pages (``block --purge``): while the block stays, a
    # page of it committed late is stored removed too. NULL: blocked, its pages searchable.
    purged_at: Mapped[float | None] = mapped_column(Double, nullable=True)


class RoleLease(Base):
    """A role only one process may hold at a time (the crawl cluster's committer): the holder
    renews it at every beat; a standby takes it over once it has expired. ``term`` counts
    holders, so a deposed one's transactions are refused (``services.crawler.cluster.election``)."""

    __tablename__ = "role_leases"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    holder: Mapped[str] = mapped_column(String(255))
    term: Mapped[int] = mapped_column(Integer)
    expires_at: Mapped[float] = mapped_column(Double)
    acquired_at: Mapped[float] = mapped_column(Double)


class PageRankScore(Base):
    __tablename__ = "pagerank"

    doc_num: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    score: Mapped[float] = mapped_column(Double)


class IndexVersion(Base):
    """A published index version; exactly one row is active at a time.

    A version is its base ``segment`` and, in commit order, the delta segments published
    after it (``deltas``, JSON; NULL: none): searched side by side, a later segment's copy of
    a document hiding an earlier one's (``services.storage.formats.delta``)."""

    __tablename__ = "index_versions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    segment: Mapped[str] = mapped_column(String(255))  # blob name of the base segment
    deltas: Mapped[str | None] = mapped_column(Text, nullable=True, default=None)
    created_at: Mapped[float] = mapped_column(Double)
    num_docs: Mapped[int] = mapped_column(Integer)
    num_terms: Mapped[int] = mapped_column(Integer)
    active: Mapped[bool] = mapped_column(Boolean, default=False, index=True)

    @property
    def delta_segments(self) -> list[str]:
        """The delta segments' blob names, oldest first (empty for a single segment)."""
        return [str(name) for name in json.loads(self.deltas)] if self.deltas else []

    @property
    def segments(self) -> list[str]:
        """Every segment of the version, the base first."""
        return [self.segment, *self.delta_segments]


class IndexBuild(Base):
    """One index build, asked for or scheduled: the indexer's queue and its log.

    ``requested`` rows are what an operator asked for (``nimbus index now``, the dashboard)
    or the schedule added; the indexer takes the oldest (``running``, with its ``worker`` and
    a ``heartbeat_at`` it renews), and ends it ``succeeded`` (with the published ``segment``)
    or ``failed`` (with ``error``). ``progress`` is the build's last progress line, for the
    operator's status; a running row whose heartbeat stopped is the indexer's that died.
    """

    __tablename__ = "index_builds"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    state: Mapped[str] = mapped_column(String(16), index=True)  # requested|running|succeeded|failed
    requested_at: Mapped[float] = mapped_column(Double)
    requested_by: Mapped[str] = mapped_column(String(255), default="")  # "schedule", "admin", a user
    runner: Mapped[str] = mapped_column(String(16), default="")  # inline | local | emr ("": the setting)
    started_at: Mapped[float | None] = mapped_column(Double, nullable=True)
    heartbeat_at: Mapped[float | None] = mapped_column(Double, nullable=True)
    finished_at: Mapped[float | None] = mapped_column(Double, nullable=True)
    worker: Mapped[str] = mapped_column(String(255), default="")
    segment: Mapped[str] = mapped_column(String(255), default="")
    progress: Mapped[str] = mapped_column(Text, default="")
    error: Mapped[str] = mapped_column(Text, default="")
