"""The frontier's bulk insert on MySQL builds its statement's text itself (PyMySQL's generic
escaping is most of a cluster committer's CPU): URLs with quotes, backslashes, percent
signs and non-ASCII characters must land exactly as given, and nothing else gets in."""

from __future__ import annotations

import pytest
from sqlalchemy import event, select

from services.crawler.frontier import entries
from services.crawler.frontier.entries import NewUrl
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.models import FrontierEntry
from services.storage.sql.schema import init_db
from services.text.urls import url_id

pytestmark = pytest.mark.mariadb

HOSTILE = [
    "http://a.test/it's",
    "http://a.test/back\\slash",
    "http://a.test/p%2Fq?x=%25s&y=%(name)s",
    "http://a.test/Zürich/\u00e9t\u00e9",
    "http://a.test/'); DROP TABLE frontier; --",
    'http://a.test/"double"',
]


@pytest.mark.parametrize("mode", ["default", "NO_BACKSLASH_ESCAPES"])
def test_hostile_urls_round_trip_and_upserts_still_count_inlinks(mysql_url: str, mode: str) -> None:
    """Also with the server's NO_BACKSLASH_ESCAPES mode (an operator's choice; then a
    backslash is a plain character and only a doubled quote escapes a quote)."""
    engine = make_engine(mysql_url)
    if mode != "default":

        @event.listens_for(engine, "connect")
        def _mode(dbapi_connection, _record) -> None:  # type: ignore[no-untyped-def]
            with dbapi_connection.cursor() as cursor:
                cursor.execute(f"SET SESSION sql_mode = CONCAT(@@sql_mode, ',{mode}')")

    init_db(engine)
    sessions = session_factory(engine)
    with sessions.begin() as s:
        added = entries.add_urls(s, [NewUrl(u, 1, 2.5, url_id("http://a.test/")) for u in HOSTILE], 7.0)
    assert added == len(HOSTILE)
    with sessions.begin() as s:  # seen again: no new rows, one more in-link each
        assert entries.add_urls(s, [NewUrl(u, 1, 2.5) for u in HOSTILE], 8.0) == 0
    with sessions() as s:
        rows = {r.url: r for r in s.scalars(select(FrontierEntry))}
    assert set(rows) == set(HOSTILE)
    for url, row in rows.items():
        assert row.url_id == url_id(url) and row.host == "http://a.test" and row.inlinks == 1
        assert row.priority == 3.5 and row.available_at == 7.0 and row.state == "new"
    engine.dispose()


def test_a_value_that_is_not_ours_is_refused() -> None:
    with pytest.raises(ValueError, match="not a url_id"):
        entries._mysql_values([("x' OR 1", "u", "h", 0, 1.0, 0.0, 0, None, 0, 0, "new", 0)], repr)
    with pytest.raises(ValueError, match="finite"):
        entries._mysql_values([("0" * 40, "u", "h", 0, float("inf"), 0.0, 0, None, 0, 0, "new", 0)], repr)
