"""The committer on SQLite: dense doc numbers across blocks, reserved before the blocks are
written (no lock held meanwhile), kept by a retried flush; duplicates stored once."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from sqlalchemy import select

from services.config import Settings
from services.crawler.cluster import heartbeat
from services.crawler.commit import purge
from services.crawler.commit.committer import Committer, FetchedDoc, UrlResult
from services.crawler.frontier import entries, leases
from services.crawler.frontier.entries import NewUrl
from services.crawler.web.parse import ParsedDoc
from services.storage.blobs.blobstore import open_blobstore
from services.storage.documents import DocumentWriter, NewDocument, WrittenDocs
from services.storage.formats.blocks import ContentType, read_block
from services.storage.formats.records import Link, iter_records
from services.storage.sql.counters import read_counters
from services.storage.sql.doc_numbers import lock_commits, next_doc_num, reserve_doc_nums
from services.storage.sql.models import Document, FetchBatch, FrontierEntry
from services.text.urls import url_id


def _lease(sessions, now: float = 10.0, limit: int = 10, max_depth: int = 5):
    with sessions.begin() as session:
        return leases.lease_batch(session, limit=limit, now=now, lease_seconds=60.0, max_depth=max_depth)


def _doc_result(url: str, body: bytes, *, final: str | None = None, links=()) -> UrlResult:
    parsed = ParsedDoc(
        ContentType.HTML, title=f"title of {url}", text="some text", links=[Link(u, "anchor") for u in links]
    )
    doc = FetchedDoc(final or url, body, parsed, fetched_at=5.0)
    return UrlResult(
        url_id(url), url, 0, "done", 200, doc=doc, links=list(parsed.links), counters=Counter(status_200=1)
    )


def test_committer_numbers_documents_densely_across_blocks_and_skips_duplicates(
    settings: Settings, sessions
) -> None:
    urls = [f"http://a.test/{i}" for i in range(5)]
    with sessions.begin() as session:
        entries.add_urls(session, [NewUrl(u, 0) for u in urls])
    lease = _lease(sessions)
    blobs = open_blobstore(settings.blob_url)
    committer = Committer(sessions, blobs, max_block_bytes=10_000, max_block_docs=2)
    results = [_doc_result(u, f"<p>{u}</p>".encode(), links=["http://a.test/new"]) for u in urls[:4]]
    # The fifth URL redirects to the first: one document, not two.
    results.append(_doc_result(urls[4], b"<p>same</p>", final=urls[0]))
    committer.add_batch(lease.seq, results)
    flushed = committer.flush()
    assert flushed.documents == 4 and len(flushed.blocks) == 4  # 2 docs per block: 2 block pairs
    assert flushed.counters["duplicate_url"] == 1 and flushed.new_urls == 1
    assert not committer.pending

    with sessions() as session:
        docs = list(session.scalars(select(Document).order_by(Document.doc_num)))
        assert [d.doc_num for d in docs] == [0, 1, 2, 3]
        assert [d.url for d in docs] == urls[:4]
        assert session.get(FetchBatch, lease.seq).state == "committed"
        assert session.get(FrontierEntry, url_id("http://a.test/new")).depth == 1
        assert read_counters(session)["documents"] == 4
    for doc in docs:
        entry, body = read_block(blobs.get(doc.content_block))[doc.content_index]
        assert body == f"<p>{doc.url}</p>".encode() and entry.offset == doc.content_offset
    numbers = [
        r.doc_num for name in sorted({d.record_block for d in docs}) for r in iter_records(blobs.get(name))
    ]
    assert numbers == [0, 1, 2, 3]

    # A later flush continues the numbering.
    with sessions.begin() as session:
        entries.add_urls(session, [NewUrl("http://a.test/later", 0)])
    later = _lease(sessions, now=20.0)
    committer.add_batch(later.seq, [_doc_result(e.url, b"later") for e in later.entries])
    assert committer.flush().documents == 1
    with sessions() as session:
        assert session.get(Document, url_id("http://a.test/later")).doc_num == 4


def test_a_committer_writing_blocks_holds_no_lock_and_doc_numbers_never_collide(
    settings: Settings, sessions
) -> None:
    """Two committers (two crawler processes) on one database: the second commits in
    full while the first is still writing its blocks, because doc numbers are reserved
    before the blocks are written; each keeps the numbers it reserved."""
    import threading

    with sessions.begin() as session:
        entries.add_urls(session, [NewUrl("http://a.test/mine", 0), NewUrl("http://a.test/theirs", 0)])
    mine, theirs = _lease(sessions, limit=1), _lease(sessions, limit=1)
    blobs = open_blobstore(settings.blob_url)
    other = Committer(sessions, blobs, max_block_bytes=10_000, max_block_docs=10)
    other.add_batch(theirs.seq, [_doc_result(e.url, b"theirs") for e in theirs.entries])
    results: list = []
    waiting = threading.Thread(target=lambda: results.append(other.flush()))

    class SlowWriter(DocumentWriter):
        """Runs the other committer to its end while writing the first one's blocks."""

        def write(self, docs: Iterable[NewDocument]) -> WrittenDocs:
            if not waiting.is_alive() and not results:
                waiting.start()
                waiting.join(timeout=30)
                assert [r.documents for r in results] == [1], "the second committer waited for us"
            return super().write(docs)

    committer = Committer(sessions, blobs, max_block_bytes=10_000, max_block_docs=10)
    committer.writer = SlowWriter(blobs, max_block_docs=10, max_block_bytes=10_000)
    committer.add_batch(mine.seq, [_doc_result(e.url, b"mine") for e in mine.entries])
    assert committer.flush().documents == 1
    assert results and results[0].documents == 1
    with sessions() as session:
        docs = {d.url: d for d in session.scalars(select(Document))}
    mine_doc, theirs_doc = docs[mine.entries[0].url], docs[theirs.entries[0].url]
    assert (mine_doc.doc_num, theirs_doc.doc_num) == (0, 1)  # reserved first, committed last
    assert blobs.get(mine_doc.content_block).endswith(b"mine")
    assert blobs.get(theirs_doc.content_block).endswith(b"theirs")
    referenced = {n for d in docs.values() for n in (d.content_block, d.record_block)}
    assert set(blobs.list()) == referenced  # no block written twice or left behind


def test_reserved_doc_numbers_are_never_handed_out_again(sessions) -> None:
    """A committer reserves numbers, then writes its blocks with no lock held: another
    writer meanwhile numbers after the reservation, and a dead reserver leaves a gap."""
    with sessions.begin() as session:
        lock_commits(session)
        assert reserve_doc_nums(session, 3) == 0
    with sessions.begin() as session:
        lock_commits(session)
        assert next_doc_num(session) == 3
        assert reserve_doc_nums(session, 2) == 3
    with sessions.begin() as session:
        assert next_doc_num(session) == 5


def test_a_retried_flush_keeps_its_reserved_doc_numbers(settings: Settings, sessions) -> None:
    """A flush rolled back by a conflict runs again with the numbers it reserved: no gap,
    and the blocks of the failed attempt are gone."""
    from sqlalchemy.exc import IntegrityError

    with sessions.begin() as session:
        entries.add_urls(session, [NewUrl("http://a.test/1", 0), NewUrl("http://a.test/2", 0)])
    lease = _lease(sessions)
    blobs = open_blobstore(settings.blob_url)

    class ConflictOnce(Committer):
        attempts = 0

        def _count_host_pages(self, session, results):
            ConflictOnce.attempts += 1
            if ConflictOnce.attempts == 1:
                raise IntegrityError("INSERT ...", {}, Exception("another process inserted it"))
            return super()._count_host_pages(session, results)

    committer = ConflictOnce(sessions, blobs, max_block_bytes=10_000, max_block_docs=10)
    committer.add_batch(lease.seq, [_doc_result(e.url, e.url.encode()) for e in lease.entries])
    assert committer.flush().documents == 2
    assert ConflictOnce.attempts == 2
    with sessions() as session:
        docs = list(session.scalars(select(Document)))
        assert sorted(d.doc_num for d in docs) == [0, 1]
        assert next_doc_num(session) == 2  # the retry reserved nothing more
    assert set(blobs.list()) == {n for d in docs for n in (d.content_block, d.record_block)}


def test_a_page_of_a_purged_host_committed_late_is_stored_removed_until_unblocked(
    settings: Settings, sessions
) -> None:
    """A page fetched before its crawler saw ``block --purge`` and committed after the purge
    (a new page, or a recrawl of a purged one) is stored removed while the block stays; a
    good fetch after ``unblock`` brings a page back."""
    blobs = open_blobstore(settings.blob_url)
    committer = Committer(sessions, blobs, max_block_bytes=10_000, max_block_docs=10)
    old = "http://www.spam.test/old"
    with sessions.begin() as session:
        entries.add_urls(session, [NewUrl(old, 0)])
    first = _lease(sessions)
    committer.add_batch(first.seq, [_doc_result(old, b"old")])
    committer.flush()
    with sessions.begin() as session:
        entries.recrawl_now(session, [old])
        entries.add_urls(session, [NewUrl("http://spam.test/new", 0), NewUrl("http://ok.test/new", 0)])
    late = _lease(sessions, now=20.0)
    assert {e.url for e in late.entries} == {old, "http://spam.test/new", "http://ok.test/new"}
    with sessions.begin() as session:  # the operator: `nimbus crawl block --purge spam.test`
        heartbeat.block_hosts(session, ["spam.test"], 30.0, purged=True)
        assert purge.purge_hosts(session, ["spam.test"], 30.0) == {"spam.test": 1}
    committer.add_batch(late.seq, [_doc_result(e.url, f"late {e.url}".encode()) for e in late.entries])
    flushed = committer.flush()
    assert flushed.counters["purged_host_pages"] == 2 and "documents_restored" not in flushed.counters
    with sessions() as session:
        docs = {d.url: d for d in session.scalars(select(Document))}
    assert {u for u, d in docs.items() if d.removed_at is not None} == {old, "http://spam.test/new"}
    assert docs[old].versions == 2 and docs[old].commit_seq == late.seq  # the new version, removed

    with sessions.begin() as session:
        heartbeat.unblock_hosts(session, ["spam.test"])
        entries.recrawl_now(session, [old])
    again = _lease(sessions, now=40.0)
    committer.add_batch(again.seq, [_doc_result(e.url, b"good again") for e in again.entries])
    assert committer.flush().counters["documents_restored"] == 1
    with sessions() as session:
        assert session.get(Document, url_id(old)).removed_at is None
