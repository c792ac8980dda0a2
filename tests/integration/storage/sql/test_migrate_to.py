"""`nimbus migrate --to REVISION`: back to the baseline and up again on SQLite and MariaDB,
saying each step, keeping the rows of the tables the steps do not touch; never below the
baseline, and a dry run changes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import insert, inspect, text

from services.cli import main
from services.storage.sql.engines import make_engine
from services.storage.sql.migrate import current_revision, head
from services.storage.sql.models import Document
from services.storage.sql.schema import init_db
from tests.integration.storage.sql.test_migrations import _diffs

BACKENDS = ["sqlite", pytest.param("mariadb", marks=pytest.mark.mariadb)]
DOCUMENT = {
    **{"url_id": "u1", "doc_num": 0, "url": "http://a.test/", "doc_id": "d1", "content_type": "text/html"},
    **{"title": "A page", "lang": "en", "length": 10, "status": 200, "depth": 0, "last_crawled": 1.5},
    **{"content_block": "c", "content_index": 0, "content_offset": 0, "record_block": "r"},
    **{"record_offset": 0, "record_length": 9, "versions": 1, "unchanged": 0},
}


@pytest.fixture(params=BACKENDS)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'nimbus.db'}"
    return str(request.getfixturevalue("mysql_url"))


def _rows(engine) -> tuple:
    with engine.connect() as conn:
        return (
            conn.execute(text("SELECT url_id, title FROM documents ORDER BY url_id")).all(),
            conn.execute(text("SELECT name, value FROM crawl_counters ORDER BY name")).all(),
            conn.execute(text("SELECT host, pages FROM hosts ORDER BY host")).all(),
        )


def test_down_to_the_baseline_and_up_again_keeps_the_untouched_tables(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    engine = make_engine(url)
    init_db(engine)
    with engine.begin() as conn:
        conn.execute(insert(Document).values(**DOCUMENT))
        conn.execute(
            text("INSERT INTO crawl_counters (name, value) VALUES ('documents', 1), ('robots_denied', 4)")
        )
        conn.execute(
            text("INSERT INTO hosts (host, next_fetch_at, pages, errors) VALUES ('http://a.test', 0, 7, 0)")
        )
    before = _rows(engine)

    assert main(["migrate", "--database-url", url, "--to", "0001"]) == 0
    said = capsys.readouterr().out
    for revision in ("0006", "0005", "0004", "0003", "0002"):
        assert f": undo {revision} (" in said  # each step, with what the revision is about
    assert "0006 -> 0005: undo 0006 (Index builds" in said
    assert current_revision(engine) == "0001"
    tables = set(inspect(engine).get_table_names())
    assert not tables & {"crawl_nodes", "crawl_control", "role_leases", "blocked_hosts", "index_builds"}
    assert _rows(engine) == before

    assert main(["migrate", "--database-url", url, "--to", "0003"]) == 0  # part of the way
    assert "0002 -> 0003: apply 0003" in capsys.readouterr().out and current_revision(engine) == "0003"
    assert main(["migrate", "--database-url", url]) == 0  # and to this release's head
    assert f"from 0003 to {head()}" in capsys.readouterr().out
    assert _diffs(engine) == [] and _rows(engine) == before
    engine.dispose()


def test_never_below_the_baseline_and_a_dry_run_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'nimbus.db'}"
    init_db(make_engine(url))
    for below in ("base", "0000"):
        assert main(["migrate", "--database-url", url, "--to", below]) == 1
        assert "the baseline 0001 is as far back" in capsys.readouterr().err
    assert main(["migrate", "--database-url", url, "--to", "0004", "--dry-run"]) == 0
    said = capsys.readouterr().out
    assert (
        "would run 0012 -> 0011: undo 0012" in said and "8 steps to 0004 (dry run: nothing changed)" in said
    )
    assert current_revision(make_engine(url)) == head()
    assert main(["migrate", "--database-url", url, "--dry-run"]) == 2  # a dry run of what? --to is needed
