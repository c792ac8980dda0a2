"""Two committers (two crawler processes) flushing at once on MariaDB: the blocks are
written with no lock held, but the row transactions take turns. When they overlapped,
two-process crawls on MariaDB hit InnoDB deadlocks (1213) on counter and host rows,
three to five a run."""

from __future__ import annotations

import threading
from collections import Counter

from sqlalchemy import select

from services.crawler.commit.committer import Committer, FetchedDoc, UrlResult
from services.crawler.frontier import entries, leases
from services.crawler.frontier.entries import NewUrl
from services.crawler.web.parse import ParsedDoc
from services.storage.blobs.blobstore import open_blobstore
from services.storage.formats.blocks import ContentType
from services.storage.sql.counters import read_counters
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.models import Document
from services.storage.sql.schema import init_db
from services.text.urls import url_id


def _result(url: str, body: bytes, counters: Counter) -> UrlResult:
    doc = FetchedDoc(url, body, ParsedDoc(ContentType.HTML, title=url, text="text"), fetched_at=5.0)
    return UrlResult(url_id(url), url, 0, "done", 200, doc=doc, counters=counters)


def test_overlapping_flushes_commit_their_rows_one_after_the_other(mysql_url, tmp_path) -> None:
    engine = make_engine(mysql_url)
    init_db(engine)
    sessions = session_factory(engine)
    blobs = open_blobstore(f"file://{tmp_path / 'blobs'}")
    with sessions.begin() as session:
        entries.add_urls(session, [NewUrl("http://a.test/", 0), NewUrl("http://b.test/", 0)])
    taken = []
    for _ in range(2):
        with sessions.begin() as session:
            taken.append(leases.lease_batch(session, limit=1, now=10.0, lease_seconds=60, max_depth=5))
    # Counters in opposite orders: the rows two interleaved transactions would lock crosswise.
    other = Committer(sessions, blobs, max_block_bytes=10_000, max_block_docs=10)
    entry = taken[1].entries[0]
    other.add_batch(taken[1].seq, [_result(entry.url, b"b", Counter(status_200=1, pages=1))])
    finished: list = []
    waiting = threading.Thread(target=lambda: finished.append(other.flush()))

    class Paused(Committer):
        """Starts the other flush while inside its own row transaction."""

        def _record_aliases(self, session, results, now):
            waiting.start()
            waiting.join(0.5)
            assert waiting.is_alive() and not finished, "the other flush did not wait its turn"
            return super()._record_aliases(session, results, now)

    entry = taken[0].entries[0]
    first = Paused(sessions, blobs, max_block_bytes=10_000, max_block_docs=10)
    first.add_batch(taken[0].seq, [_result(entry.url, b"a", Counter(pages=1, status_200=1))])
    assert first.flush().documents == 1
    waiting.join(30)
    assert [r.documents for r in finished] == [1]
    with sessions() as session:
        nums = sorted(d.doc_num for d in session.scalars(select(Document)))
        counters = read_counters(session)
    assert nums == [0, 1]  # reserved before either wrote its blocks, never the same
    assert counters["pages"] == 2 and counters["status_200"] == 2
    engine.dispose()
