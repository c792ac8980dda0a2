"""Archive batches in the ledger (frontier/archive_batches.py, leases.py): registered once,
leased under seqs beside URL batches, handed out again when a lease expires, committed in
seq order by the committer, which keeps the newest capture of a URL and records aliases."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from services.archives.batch import TO_END, Batch
from services.config import Settings
from services.crawler.commit.committer import Committer, FetchedDoc, UrlResult
from services.crawler.frontier import archive_batches, entries, leases
from services.crawler.frontier.archive_batches import BundleState
from services.crawler.frontier.entries import NewUrl, UrlState
from services.crawler.web.parse import ParsedDoc
from services.storage.blobs.blobstore import open_blobstore
from services.storage.formats.blocks import ContentType
from services.storage.sql.counters import read_counters
from services.storage.sql.models import ArchiveBatch, Document, FetchBatch, UrlAlias

PLAN = [
    Batch("a.warc.gz", 0, 100, 2, {"format": "warc"}),
    Batch("a.warc.gz", 100, TO_END, 2, {"format": "warc"}),
]


def _register(sessions: sessionmaker[Session]) -> int:
    with sessions.begin() as s:
        return archive_batches.register(
            s, url="/bundles/a", kind="warc", description="a", sha256="0" * 64, batches=PLAN, now=1.0
        )


def _lease(sessions: sessionmaker[Session], now: float, **kwargs: object) -> list[leases.Lease]:
    with sessions.begin() as s:
        return leases.lease_batches(
            s, batches=kwargs.pop("batches", 0), limit=10, budget=10, now=now, lease_seconds=60.0,  # type: ignore[arg-type]
            max_depth=3, worker="w", **kwargs,  # type: ignore[arg-type]
        )  # fmt: skip


def _capture(key: str, url: str, body: bytes, when: float) -> UrlResult:
    doc = FetchedDoc(url, body, ParsedDoc(ContentType.HTML, title=url, text="t"), when)
    return UrlResult(key, url, 0, UrlState.DONE, 200, doc=doc, archived=True)


def test_archive_batches_take_seqs_beside_url_batches_and_expired_ones_come_back(sessions) -> None:
    bundle = _register(sessions)
    with sessions() as s:
        assert archive_batches.find(s, "/bundles/a", "0" * 64).id == bundle  # type: ignore[union-attr]
        entries.add_urls(s, [NewUrl("http://a.test/", 0)])
        s.commit()
    first = _lease(sessions, 10.0, batches=1, archives=1)
    assert [lease.archive is not None for lease in first] == [True, False]  # archive first, then URLs
    work = first[0].archive
    assert work is not None and work.batch == PLAN[0] and work.registered_at == 1.0
    with sessions() as s:
        assert s.get(FetchBatch, first[0].seq).archive_batch == work.batch_id
        assert archive_batches.state_of(s, bundle) == BundleState.RUNNING
    # web=False: URLs are left alone; the next planned archive batch comes.
    second = _lease(sessions, 11.0, archives=2, web=False)
    assert [lease.archive.batch for lease in second] == [PLAN[1]]  # type: ignore[union-attr]
    # The first lease expires: the same seq is handed out again, whole, to an archive crawler only.
    web_only = _lease(sessions, 100.0, batches=1)  # a web crawler takes over the expired URL batch only
    assert [(lease.seq, lease.archive) for lease in web_only] == [(first[1].seq, None)]
    again = _lease(sessions, 100.0, archives=1, web=False)
    assert [(lease.seq, lease.archive.batch_id) for lease in again] == [(first[0].seq, work.batch_id)]  # type: ignore[union-attr]


def test_the_committer_keeps_the_newest_capture_records_aliases_and_finishes_the_bundle(
    settings: Settings, sessions
) -> None:
    bundle = _register(sessions)
    one, two = _lease(sessions, 10.0, archives=2, web=False)
    committer = Committer(
        sessions, open_blobstore(settings.blob_url), max_block_bytes=10_000, max_block_docs=10
    )
    url = "http://www.iana.org/"
    older, newer = _capture("k1", url, b"<p>2013</p>", 100.0), _capture("k2", url, b"<p>2014</p>", 200.0)
    alias = UrlResult("k3", "http://www.iana.org/home", 0, UrlState.DONE, 301, archived=True, alias_of=url)
    committer.add_batch(one.seq, [newer, older, alias])
    assert committer.flush().documents == 1
    with sessions() as s:
        assert s.scalar(select(Document.doc_id).where(Document.url == url)) == newer.doc.doc_id  # type: ignore[union-attr]
        assert s.get(UrlAlias, alias.url_id) is None  # keyed by the alias URL's id
        assert s.scalars(select(UrlAlias.target_url)).all() == [url]
        assert archive_batches.state_of(s, bundle) == BundleState.RUNNING
    # A later batch holding an older capture leaves the newer page as it is.
    committer.add_batch(two.seq, [_capture("k4", url, b"<p>2012</p>", 50.0)])
    committer.flush()
    with sessions() as s:
        row = s.scalars(select(Document).where(Document.url == url)).one()
        assert row.doc_id == newer.doc.doc_id and row.versions == 1  # type: ignore[union-attr]
        assert read_counters(s)["older_capture"] == 2
        assert {b.state for b in s.scalars(select(ArchiveBatch))} == {"committed"}
        assert archive_batches.state_of(s, bundle) == BundleState.FINISHED
        assert archive_batches.records_left(s) == 0
