"""Archive batches in the ledger: a registered bundle's planned batches, leased like URL batches.

Registering a bundle (``register``) writes its row and every planned batch (file, byte
range, seek state) in one transaction, so a bundle is registered whole or not at all; the
same URL with the same ``bundle.toml`` is found again (``find``) and never planned twice.
A crawler leases a planned batch under a ``fetch_batches`` seq (``leases``), exactly as it
leases frontier URLs: from then on the ledger says where it is (leased, acked, committed),
a lease that expires is handed out again under the same seq, and the committer commits it
in seq order. The committer's transaction marks it ``committed`` here (``mark_committed``)
and a bundle whose last batch is committed ``finished``.

What reading a batch counted (records, bytes, kinds, damage with file and offset) is
written by the reader (``record_reading``), never added: a batch read twice (its first
reader died) counts once. The operator's view (``progress``) sums committed batches only.
All functions run inside the caller's transaction.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from services.archives.batch import Batch
from services.storage.sql.models import ArchiveBatch, ArchiveBundle

MAX_DAMAGE = 20  # errors kept per batch with their file and offset (all are counted)


class BundleState(StrEnum):
    REGISTERED = "registered"  # planned, nothing leased yet
    RUNNING = "running"  # a batch was leased
    FINISHED = "finished"  # every batch committed


class ArchiveBatchState(StrEnum):
    PLANNED = "planned"
    LEASED = "leased"  # has a seq: the ledger (fetch_batches) says the rest
    COMMITTED = "committed"


@dataclass(frozen=True)
class ArchiveWork:
    """What a crawler needs to read one leased archive batch."""

    batch_id: int
    bundle_id: int
    bundle_url: str
    sha256: str  # of the bundle.toml registered
    registered_at: float  # the time of records their archive does not date
    seed_frontier: bool
    batch: Batch


@dataclass
class Reading:
    """What reading one batch counted (``record_reading``)."""

    records: int = 0
    bytes: int = 0
    kinds: Counter[str] = field(default_factory=Counter)
    damage: list[str] = field(default_factory=list)

    @property
    def errors(self) -> int:
        return sum(n for kind, n in self.kinds.items() if kind.startswith("error."))


def url_hash(url: str) -> str:
    return hashlib.sha1(url.encode("utf-8")).hexdigest()


def find(session: Session, url: str, sha256: str) -> ArchiveBundle | None:
    """The bundle registered from ``url`` with this ``bundle.toml`` digest, if any."""
    return session.scalars(
        select(ArchiveBundle).where(ArchiveBundle.url_hash == url_hash(url), ArchiveBundle.sha256 == sha256)
    ).first()


def register(
    session: Session,
    *,
    url: str,
    kind: str,
    description: str,
    sha256: str,
    batches: Sequence[Batch],
    now: float,
    seed_frontier: bool = False,
) -> int:
    """Insert a bundle and its planned batches; returns its id (the caller checked ``find``)."""
    bundle = ArchiveBundle(
        url=url,
        url_hash=url_hash(url),
        type=kind,
        description=description,
        sha256=sha256,
        state=BundleState.REGISTERED if batches else BundleState.FINISHED,
        registered_at=now,
        finished_at=None if batches else now,
        batches=len(batches),
        records_hint=sum(b.records_hint for b in batches),
        seed_frontier=seed_frontier,
    )
    session.add(bundle)
    session.flush()
    session.add_all(
        ArchiveBatch(
            bundle_id=bundle.id,
            number=number,
            file=b.file,
            start=b.start,
            end=b.end,
            records_hint=b.records_hint,
            seek_state=json.dumps(b.seek_state, sort_keys=True),
            state=ArchiveBatchState.PLANNED,
            records=0,
            bytes=0,
            errors=0,
            kinds="{}",
            damage="[]",
        )
        for number, b in enumerate(batches)
    )
    return bundle.id


def next_planned(session: Session, limit: int) -> list[ArchiveBatch]:
    """Up to ``limit`` planned batches, oldest bundle first, in their order (rows locked)."""
    if limit <= 0:
        return []
    return list(
        session.scalars(
            select(ArchiveBatch)
            .where(ArchiveBatch.state == ArchiveBatchState.PLANNED)
            .order_by(ArchiveBatch.bundle_id, ArchiveBatch.number)
            .limit(limit)
            .with_for_update(skip_locked=True)
        )
    )


def leased(session: Session, row: ArchiveBatch, seq: int, now: float) -> None:
    """``row`` is out under ``seq``; its bundle is running from now (if it was not already)."""
    row.state, row.seq = ArchiveBatchState.LEASED, seq
    session.execute(
        update(ArchiveBundle)
        .where(ArchiveBundle.id == row.bundle_id, ArchiveBundle.state == BundleState.REGISTERED)
        .values(state=BundleState.RUNNING, started_at=now)
    )


def work(session: Session, batch_id: int) -> ArchiveWork:
    """The leased batch ``batch_id`` as a crawler reads it."""
    row = session.get(ArchiveBatch, batch_id)
    if row is None:
        raise LookupError(f"archive batch {batch_id} is in the ledger but not in archive_batches")
    bundle = session.get(ArchiveBundle, row.bundle_id)
    if bundle is None:
        raise LookupError(f"archive batch {batch_id} names bundle {row.bundle_id}, which is not registered")
    batch = Batch(row.file, int(row.start), int(row.end), row.records_hint, json.loads(row.seek_state))
    return ArchiveWork(
        row.id, bundle.id, bundle.url, bundle.sha256, bundle.registered_at, bundle.seed_frontier, batch
    )


def record_reading(session: Session, batch_id: int, reading: Reading) -> None:
    """What reading the batch counted, written over any earlier reading's (the same numbers)."""
    session.execute(
        update(ArchiveBatch)
        .where(ArchiveBatch.id == batch_id)
        .values(
            records=reading.records,
            bytes=reading.bytes,
            errors=reading.errors,
            kinds=json.dumps(dict(sorted(reading.kinds.items()))),
            damage=json.dumps(reading.damage[:MAX_DAMAGE]),
        )
    )


def mark_committed(session: Session, seqs: Iterable[int], now: float) -> None:
    """The archive batches among ``seqs`` are committed (the committer's transaction); a
    bundle left with none to commit is finished."""
    seqs = list(seqs)
    if not seqs:
        return
    bundles = set(session.scalars(select(ArchiveBatch.bundle_id).where(ArchiveBatch.seq.in_(seqs))))
    if not bundles:
        return
    session.execute(
        update(ArchiveBatch)
        .where(ArchiveBatch.seq.in_(seqs))
        .values(state=ArchiveBatchState.COMMITTED, committed_at=now)
    )
    for bundle_id in sorted(bundles):
        left = session.scalar(
            select(func.count())
            .select_from(ArchiveBatch)
            .where(ArchiveBatch.bundle_id == bundle_id, ArchiveBatch.state != ArchiveBatchState.COMMITTED)
        )
        if not left:
            session.execute(
                update(ArchiveBundle)
                .where(ArchiveBundle.id == bundle_id, ArchiveBundle.state != BundleState.FINISHED)
                .values(state=BundleState.FINISHED, finished_at=now)
            )


# --- the operator's view --------------------------------------------------------------------


@dataclass(frozen=True)
class ArchiveProgress:
    """One archive crawl as ``nimbus crawl status`` and the dashboard show it."""

    id: int
    url: str
    type: str
    description: str
    state: str
    batches: int
    committed: int  # batches
    records: int  # read in committed batches
    records_hint: int  # found at registration, all batches
    bytes: int
    errors: int
    kinds: dict[str, int]  # records by kind (payload, document, alias, skipped.*, error.*)
    damage: list[str]  # the first errors, naming file and offset
    seconds: float  # from the first lease to the last commit (or now)

    @property
    def records_per_second(self) -> float:
        return self.records / self.seconds if self.seconds > 0 else 0.0

    @property
    def bytes_per_second(self) -> float:
        return self.bytes / self.seconds if self.seconds > 0 else 0.0

    @property
    def eta_seconds(self) -> float | None:
        """Seconds to the end at the rate so far (None: no rate yet, or finished)."""
        if self.state == BundleState.FINISHED:
            return 0.0
        rate = self.records_per_second
        if rate <= 0:
            return None
        return max(0, self.records_hint - self.records) / rate

    @property
    def errors_by_kind(self) -> dict[str, int]:
        return {k.removeprefix("error."): n for k, n in sorted(self.kinds.items()) if k.startswith("error.")}

    def line(self) -> str:
        eta = self.eta_seconds
        errors = ", ".join(f"{k} {n}" for k, n in self.errors_by_kind.items()) or "none"
        return (
            f"archive #{self.id} {self.type} {self.url}: {self.state}, {self.committed}/{self.batches} "
            f"batches, {self.records:,} records, {self.records_per_second:,.0f} records/s, "
            f"{_size(self.bytes_per_second)}/s, ETA {_duration(eta)}; errors: {errors}"
        )


def progress(session: Session, now: float, limit: int = 10) -> list[ArchiveProgress]:
    """The last ``limit`` bundles registered, newest first, from their committed batches."""
    bundles = session.scalars(select(ArchiveBundle).order_by(ArchiveBundle.id.desc()).limit(limit)).all()
    out = []
    for bundle in bundles:
        rows = session.execute(
            select(
                ArchiveBatch.records, ArchiveBatch.bytes, ArchiveBatch.errors, ArchiveBatch.kinds,
                ArchiveBatch.damage, ArchiveBatch.committed_at,
            ).where(ArchiveBatch.bundle_id == bundle.id, ArchiveBatch.state == ArchiveBatchState.COMMITTED)
        ).all()  # fmt: skip
        kinds: Counter[str] = Counter()
        damage: list[str] = []
        for row in rows:
            kinds.update(json.loads(row.kinds or "{}"))
            if len(damage) < MAX_DAMAGE:
                damage += json.loads(row.damage or "[]")[: MAX_DAMAGE - len(damage)]
        last = max((r.committed_at or 0.0 for r in rows), default=0.0)
        end = last if bundle.state == BundleState.FINISHED and last else now
        seconds = end - bundle.started_at if bundle.started_at else 0.0
        out.append(
            ArchiveProgress(
                id=bundle.id, url=bundle.url, type=bundle.type, description=bundle.description,
                state=bundle.state, batches=bundle.batches, committed=len(rows),
                records=sum(r.records for r in rows), records_hint=int(bundle.records_hint),
                bytes=sum(int(r.bytes) for r in rows), errors=sum(r.errors for r in rows),
                kinds=dict(kinds), damage=damage, seconds=max(0.0, seconds),
            )
        )  # fmt: skip
    return out


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024
    return f"{n:,.1f} GB"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "unknown"
    seconds = int(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s"


def state_of(session: Session, bundle_id: int) -> str:
    bundle = session.get(ArchiveBundle, bundle_id)
    return "" if bundle is None else bundle.state


def records_left(session: Session) -> int:
    """Records (as registration counted them) of the archive batches not yet committed."""
    return int(
        session.scalar(
            select(func.coalesce(func.sum(ArchiveBatch.records_hint), 0)).where(
                ArchiveBatch.state != ArchiveBatchState.COMMITTED
            )
        )
        or 0
    )


def to_json(p: ArchiveProgress) -> dict[str, Any]:
    return {**p.__dict__, "eta_seconds": p.eta_seconds}
