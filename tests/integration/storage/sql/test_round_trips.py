"""``RoundTrips`` counts what the driver sends: PyMySQL sends an executemany of INSERT as one
multi-row statement but of UPDATE row by row, pings at every checkout, and each COMMIT and
the pool's reset ROLLBACK are round trips of their own."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from services.storage.sql.engines import make_engine
from services.storage.sql.round_trips import RoundTrips

ROWS = [{"k": i, "v": f"v{i}"} for i in range(5)]


def _trips(url: str) -> dict[str, int]:
    engine = make_engine(url)
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE kv (k INTEGER PRIMARY KEY, v VARCHAR(20))"))
    trips = RoundTrips(engine)
    seen = {}
    start = trips.count
    with engine.connect() as conn:
        conn.execute(text("SELECT 1"))
        seen["checkout and a statement"] = trips.count - start
        start = trips.count
        conn.execute(text("INSERT INTO kv (k, v) VALUES (:k, :v)"), ROWS)
        seen["executemany insert"] = trips.count - start
        start = trips.count
        conn.execute(text("UPDATE kv SET v = :v WHERE k = :k"), ROWS)
        seen["executemany update"] = trips.count - start
        start = trips.count
        conn.commit()
        seen["commit"] = trips.count - start
        start = trips.count
    seen["close"] = trips.count - start
    engine.dispose()
    return seen


@pytest.mark.mariadb
def test_mysql_round_trips_are_counted_as_pymysql_sends_them(mysql_url: str) -> None:
    assert _trips(mysql_url) == {
        "checkout and a statement": 2,  # the pre-ping and the SELECT
        "executemany insert": 1,
        "executemany update": len(ROWS),
        "commit": 1,
        "close": 1,  # the pool's reset: a ROLLBACK
    }


def test_sqlite_counts_an_executemany_once(tmp_path) -> None:
    assert _trips(f"sqlite:///{tmp_path / 'kv.db'}") == {
        "checkout and a statement": 1,
        "executemany insert": 1,
        "executemany update": 1,
        "commit": 1,
        "close": 1,
    }
