"""Registering a bundle: its batches planned once and queued in the ledger.

``register_bundle`` reads ``bundle.toml`` and, unless this very bundle (same location,
same ``bundle.toml`` digest) is registered already, plans its batches
(``services.archives.batches.plan_batches``: one pass over the files, recording where
each batch starts) and writes the bundle and every batch in one transaction. Registering
again, or running a finished bundle again, changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from services.archives.batches import plan_batches
from services.archives.bundle import load_bundle
from services.crawler.frontier import archive_batches
from services.storage.sql.models import ArchiveBundle


@dataclass(frozen=True)
class Registered:
    bundle_id: int
    url: str
    type: str
    state: str
    batches: int
    records_hint: int
    created: bool  # False: registered before (nothing changed)

    def line(self) -> str:
        said = "registered" if self.created else "already registered"
        return (
            f"archive #{self.bundle_id} ({self.type}, {self.url}) {said}: {self.batches} batches, "
            f"about {self.records_hint:,} records, {self.state}"
        )


def register_bundle(
    sessions: sessionmaker[Session],
    url: str,
    *,
    now: float,
    endpoint_url: str | None = None,
    seed_frontier: bool = False,
    batch_size: int | None = None,
) -> Registered:
    bundle = load_bundle(url, endpoint_url)
    with sessions() as session:
        found = archive_batches.find(session, bundle.url, bundle.sha256)
        if found is not None:
            return _registered(found, created=False)
    batches = plan_batches(bundle, batch_size)
    try:
        with sessions.begin() as session:
            bundle_id = archive_batches.register(
                session,
                url=bundle.url,
                kind=bundle.type.value,
                description=bundle.description,
                sha256=bundle.sha256,
                batches=batches,
                now=now,
                seed_frontier=seed_frontier,
            )
    except IntegrityError:  # registered by another process meanwhile
        bundle_id = -1
    with sessions() as session:
        found = archive_batches.find(session, bundle.url, bundle.sha256)
        if found is None:  # cannot happen: the unique index refused only an equal row
            raise LookupError(f"archive bundle {bundle.url} could not be registered")
        return _registered(found, created=found.id == bundle_id)


def _registered(row: ArchiveBundle, *, created: bool) -> Registered:
    return Registered(row.id, row.url, row.type, row.state, row.batches, int(row.records_hint), created)
