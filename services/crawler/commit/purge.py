"""The operator's purge: a blocked host's stored pages leave the index (``nimbus crawl block
--purge``).

Its documents are marked removed (``documents.removed_at``), as a recrawl that finds a page
gone marks it: the rows stay, with their doc numbers and history, builds and incremental
updates leave them out, and a later fetch of a page that finds it good again brings it back
(the committer's ``_update_recrawled``).

A purge is a commit without fetches: it takes the committers' lock and a seq of its own from
the ledger (a ``fetch_batches`` row, committed at once, no URLs), and stamps the documents it
removes with that seq (``documents.commit_seq``). An incremental update takes the documents
newer than its base's commit mark (``services.indexing.commit_mark``), so it finds the purge
whatever the pages' age; without a seq of its own the purge of old pages would wait for the
next full build. Under the lock no batch leased after the purge's seq commits before it, so
a mark read while the purge runs has a smaller ``through_seq``; read after, the build it
belongs to sees the pages removed already.

A crawler reads the block at its next heartbeat, a crawl cluster's committer commits what
its workers fetched a little later: a page of the host fetched before the block may be
committed after the purge. While the host stays blocked (``blocked_hosts.purged_at``), the
committers store such a page removed (``purged_hosts``, ``kept_out``), a new one or a
recrawl alike; after ``unblock``, a good fetch brings a page back.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from sqlalchemy import CursorResult, insert, select, update
from sqlalchemy.orm import Session

from services.crawler.frontier.ledger import BatchState
from services.storage.sql.counters import bump_counters
from services.storage.sql.doc_numbers import lock_commits
from services.storage.sql.models import BlockedHost, Document, FetchBatch, table
from services.text.urls import in_scope

PURGED_BY = "operator purge"  # fetch_batches.leased_by of a purge's ledger row
CHUNK = 500  # url_ids per UPDATE


def _like_escaped(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def host_documents(session: Session, host: str) -> list[str]:
    """The url_ids of the live (not removed) documents of ``host`` (a ``bare_host`` name) and
    its subdomains, the hosts a block covers (``in_scope``). URLs have no host column: a
    scan of the documents table for the name, each URL's host then checked exactly."""
    rows = session.execute(
        select(Document.url_id, Document.url).where(
            Document.removed_at.is_(None),
            Document.url.like(f"%{_like_escaped(host)}%", escape="\\"),
        )
    )
    scope = frozenset({host})
    return [uid for uid, url in rows if in_scope(url, scope)]


def purged_hosts(session: Session) -> frozenset[str]:
    """The hosts blocked with their pages purged: their pages (and their subdomains') are
    stored removed while the block stays (module docstring)."""
    return frozenset(session.scalars(select(BlockedHost.host).where(BlockedHost.purged_at.is_not(None))))


def kept_out(url: str, purged: frozenset[str]) -> bool:
    """Whether a page at ``url`` (normalized) is of a purged host (``purged_hosts``)."""
    return bool(purged) and in_scope(url, purged)


def purge_hosts(session: Session, hosts: Sequence[str], now: float) -> dict[str, int]:
    """Mark the live documents of ``hosts`` (and their subdomains) removed at ``now`` under a
    ledger seq of their own (module docstring). Returns how many each host had; none at
    all takes no seq. Runs in the caller's transaction, which should end soon: it holds the
    committers' lock, taken before the documents are looked for, so no commit lands between
    the look and the marking (a page committed live there would stay in the index), and
    after it every committer sees the block's ``purged_at``."""
    lock_commits(session)
    found = {host: host_documents(session, host) for host in hosts}
    if not any(found.values()):
        return {host: 0 for host in hosts}
    # A Core INSERT: it names only the columns given and those with defaults, which the
    # search role may write (storage.sql.grants); an ORM flush names every column.
    inserted = session.execute(
        insert(table(FetchBatch)).values(
            state=BatchState.COMMITTED, leased_by=PURGED_BY, created_at=now, committed_at=now, num_urls=0
        )
    )
    key = cast(CursorResult[Any], inserted).inserted_primary_key
    if key is None:
        raise RuntimeError("the database returned no sequence number for a purge's ledger row")
    seq = int(key[0])
    purged: dict[str, int] = {}
    for host, ids in found.items():
        done = 0
        for at in range(0, len(ids), CHUNK):
            # removed_at IS NULL again: a subdomain given beside its parent counts once.
            result = session.execute(
                update(Document)
                .where(Document.url_id.in_(ids[at : at + CHUNK]), Document.removed_at.is_(None))
                .values(removed_at=now, commit_seq=seq)
                .execution_options(synchronize_session=False)
            )
            done += cast(CursorResult[Any], result).rowcount
        purged[host] = done
    bump_counters(session, {"documents_purged": sum(purged.values())})
    return purged
