"""``entries.finish`` on MySQL updates a chunk of rows in one statement (PyMySQL sends an
executemany of UPDATE row by row): the rows must end exactly as SQLite's executemany leaves
them, for every kind of outcome, with hostile error texts, and across chunk boundaries."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from services.crawler.frontier import entries
from services.crawler.frontier.entries import NewUrl, Outcome
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.models import FrontierEntry
from services.storage.sql.round_trips import RoundTrips
from services.storage.sql.schema import init_db
from services.text.urls import url_id

pytestmark = pytest.mark.mariadb

URLS = [f"http://a.test/{i}" for i in range(9)]
IDS = [url_id(u) for u in URLS]
OUTCOMES = [
    Outcome(IDS[0], "done", 200),  # next recrawl after recrawl_after
    Outcome(IDS[1], "done", 200, available_at=500.5, interval=86_400.25),  # adaptive recrawl
    Outcome(IDS[2], "failed", 503, "http 503 from it's 100% 'broken' \\ server; DROP TABLE frontier"),
    Outcome(IDS[3], "failed", None, "Zürich — timeout %s %(x)s"),
    Outcome(IDS[4], "new", 429, "retry", available_at=77.0),  # a retry: counts an attempt, waits
    Outcome(IDS[5], "new"),  # a release: leasable again at once, priority kept
    Outcome(IDS[6], "new", priority=-9.5),  # a release with a new priority
    Outcome(IDS[7], "done", 304, available_at=1e12),
]
COLUMNS = (
    "state",
    "attempts",
    "last_status",
    "last_error",
    "available_at",
    "priority",
    "recrawl_interval",
    "batch_seq",
)


def _finished(url: str, chunk: int, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, tuple], int]:
    monkeypatch.setattr(entries, "_FINISH_CHUNK", chunk)
    engine = make_engine(url)
    init_db(engine)
    sessions = session_factory(engine)
    with sessions.begin() as s:
        entries.add_urls(s, [NewUrl(u, 1, 2.0) for u in URLS], 5.0)
        s.execute(FrontierEntry.__table__.update().values(state="leased", batch_seq=3, recrawl_interval=60.0))
    trips = RoundTrips(engine)
    with sessions.begin() as s:
        before = trips.count
        entries.finish(s, OUTCOMES, now=10.0, recrawl_after=1000.0)
        statements = trips.count - before
    with sessions() as s:
        rows = {r.url_id: tuple(getattr(r, c) for c in COLUMNS) for r in s.scalars(select(FrontierEntry))}
    engine.dispose()
    return rows, statements


@pytest.mark.parametrize("chunk", [1000, 3])
def test_mysql_finishes_rows_as_sqlite_does(
    mysql_url: str, tmp_path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    on_mysql, statements = _finished(mysql_url, chunk, monkeypatch)
    on_sqlite, _ = _finished(f"sqlite:///{tmp_path / 'f.db'}", chunk, monkeypatch)
    assert on_mysql == on_sqlite
    assert on_mysql[IDS[8]] == ("leased", 0, None, None, 5.0, 2.0, 60.0, 3)  # not in the outcomes
    assert on_mysql[IDS[2]][:4] == ("failed", 1, 503, OUTCOMES[2].error)
    assert on_mysql[IDS[1]][4:7] == (500.5, 2.0, 86_400.25)
    assert on_mysql[IDS[6]][:2] == ("new", 0) and on_mysql[IDS[6]][5] == -9.5
    released, ended = 2, 6
    # The pool's ping at checkout, then one UPDATE per chunk: no round trip per row.
    assert statements == 1 + -(-released // chunk) + -(-ended // chunk)
