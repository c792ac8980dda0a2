"""The metadata schema works the same on SQLite and on MariaDB (PyMySQL)."""

from __future__ import annotations

import pytest
from sqlalchemy import event, func, inspect, select, text
from sqlalchemy.exc import IntegrityError

from services.storage.sql.bulk_sql import insert_rows
from services.storage.sql.counters import bump_counters, read_counters
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.index_versions import activate_index, active_index
from services.storage.sql.models import Document, FrontierEntry, Host, IndexVersion, PageRankScore, table
from services.storage.sql.schema import init_db
from services.text.urls import url_id


@pytest.fixture(params=["sqlite", "mariadb"])
def sessions(request, tmp_path):
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path}/meta.db"
    else:
        url = request.getfixturevalue("mysql_url")
    engine = make_engine(url)
    init_db(engine)
    init_db(engine)  # idempotent
    yield session_factory(engine)
    engine.dispose()


def _doc(n: int, url: str) -> Document:
    return Document(
        url_id=f"{n:040x}",
        doc_num=n,
        url=url,
        doc_id="ab" * 20,
        content_type="text/html",
        title=f"Tïtle {n}",
        lang="en",
        length=10,
        last_crawled=1_700_000_000.123456,
        content_block="content/x.ncb",
        content_index=n,
        content_offset=100 + n,
        record_block="records/x.rec.gz",
        record_offset=0,
        record_length=5,
    )


def test_documents_round_trip_with_unicode_and_precise_times(sessions):
    long_url = "http://a.test/" + "x" * 3000
    with sessions.begin() as s:
        s.add_all([_doc(0, "http://a.test/"), _doc(1, long_url)])
    with sessions() as s:
        docs = s.scalars(select(Document).order_by(Document.doc_num)).all()
        assert [d.url for d in docs] == ["http://a.test/", long_url]
        assert docs[0].title == "Tïtle 0"
        assert docs[1].last_crawled == pytest.approx(1_700_000_000.123456, abs=1e-5)


def test_insert_rows_takes_dicts_and_fills_the_defaults_a_row_leaves_out(sessions):
    rows = []
    for n in range(3):
        doc = _doc(n, f"http://a.test/{n}?q='x'%s")  # quotes and a format mark: bound, not spliced
        row = {c.key: getattr(doc, c.key) for c in table(Document).columns if getattr(doc, c.key) is not None}
        rows.append(row)
    rows[2]["versions"] = 4
    with sessions.begin() as s:
        insert_rows(s, table(Document), rows)
        insert_rows(s, table(Document), [])
    with sessions() as s:
        docs = s.scalars(select(Document).order_by(Document.doc_num)).all()
    assert [(d.url, d.title, d.versions, d.unchanged, d.status) for d in docs] == [
        (f"http://a.test/{n}?q='x'%s", f"Tïtle {n}", 4 if n == 2 else 1, 0, 200) for n in range(3)
    ]
    assert docs[0].last_crawled == pytest.approx(1_700_000_000.123456, abs=1e-5)


@pytest.mark.mariadb
@pytest.mark.parametrize("mode", ["", ",NO_BACKSLASH_ESCAPES"])
def test_insert_rows_on_mysql_quotes_as_the_server_reads_strings(mysql_url, mode):
    """The rows go as literals (no driver parameters): hostile strings land exactly as given
    whether or not the server's sql_mode makes a backslash a plain character."""
    engine = make_engine(mysql_url)

    @event.listens_for(engine, "connect")
    def _mode(dbapi_connection, _record):
        with dbapi_connection.cursor() as cursor:
            cursor.execute(f"SET SESSION sql_mode = CONCAT(@@sql_mode, '{mode}')")

    init_db(engine)
    sessions = session_factory(engine)
    hostile = ["it's", "back\\slash\\", "'); DROP TABLE documents; --", "%s %(x)s", "Zürich \u00e9", '"']
    rows = []
    for n, title in enumerate(hostile):
        doc = _doc(n, f"http://a.test/{title}")
        rows.append(
            {c.key: getattr(doc, c.key) for c in table(Document).columns if getattr(doc, c.key) is not None}
        )
        rows[-1]["title"] = title
    with sessions.begin() as s:
        insert_rows(s, table(Document), rows)
    with sessions() as s:
        got = s.execute(
            select(Document.title, Document.url, Document.versions).order_by(Document.doc_num)
        ).all()
    assert got == [(t, f"http://a.test/{t}", 1) for t in hostile]
    engine.dispose()


def test_doc_num_is_unique(sessions):
    with sessions.begin() as s:
        s.add(_doc(0, "http://a.test/"))
    with pytest.raises(IntegrityError), sessions.begin() as s:
        dup = _doc(0, "http://a.test/other")
        dup.url_id = "f" * 40
        s.add(dup)


def test_frontier_hosts_pagerank_and_counters(sessions):
    with sessions.begin() as s:
        s.add(
            FrontierEntry(
                url_id="1" * 40,
                url="http://a.test/",
                host="http://a.test",
                priority=1.0,
                state="new",
                available_at=0.0,
                depth=0,
            )
        )
        s.add(Host(host="http://a.test", robots_txt="User-agent: *\nDisallow: /x", crawl_delay=1.5))
        s.add(PageRankScore(doc_num=0, score=0.25))
        bump_counters(s, {"robots_denied": 2, "status_200": 5})
    with sessions.begin() as s:
        bump_counters(s, {"robots_denied": 1})
    with sessions() as s:
        assert read_counters(s) == {"robots_denied": 3, "status_200": 5}
        assert s.get(Host, "http://a.test").crawl_delay == 1.5
        assert s.get(FrontierEntry, "1" * 40).state == "new"


def test_exactly_one_active_index_version(sessions):
    with sessions.begin() as s:
        activate_index(s, "index/segment-1.nseg", 10, 100)
    with sessions.begin() as s:
        activate_index(s, "index/segment-2.nseg", 12, 120)
    with sessions() as s:
        version = active_index(s)
        assert version is not None and version.segment == "index/segment-2.nseg"
        actives = s.scalars(select(IndexVersion).where(IndexVersion.active.is_(True))).all()
        assert [v.segment for v in actives] == ["index/segment-2.nseg"]


def test_schema_creation_tolerates_processes_starting_together(tmp_path):
    """Several crawler processes create the schema at once; none of them fails."""
    import subprocess
    import sys

    url = f"sqlite:///{tmp_path}/race.db"
    code = (
        "import sys; from services.storage.sql.engines import make_engine; "
        "from services.storage.sql.schema import init_db; init_db(make_engine(sys.argv[1]))"
    )
    procs = [subprocess.Popen([sys.executable, "-c", code, url], stderr=subprocess.PIPE) for _ in range(6)]
    errors = [p.communicate(timeout=60)[1].decode() for p in procs]
    assert [p.returncode for p in procs] == [0] * 6, errors
    # Again on that database holding the index earlier versions made: all of them
    # try to drop it, one does, and the others carry on.
    engine = make_engine(url)
    with engine.begin() as conn:
        conn.execute(text("CREATE INDEX ix_frontier_next ON frontier (state, priority DESC, depth, url_id)"))
    procs = [subprocess.Popen([sys.executable, "-c", code, url], stderr=subprocess.PIPE) for _ in range(6)]
    errors = [p.communicate(timeout=60)[1].decode() for p in procs]
    assert [p.returncode for p in procs] == [0] * 6, errors
    assert "ix_frontier_next" not in {ix["name"] for ix in inspect(engine).get_indexes("frontier")}
    engine.dispose()


def test_immediate_transactions_serialize_read_then_write(tmp_path):
    """Two crawler processes on one SQLite file both read, then write (a lease: pick
    rows, mark them). pysqlite would run the read outside any transaction, so both
    could pick the same rows; with ``immediate=True`` the second transaction waits
    for the first to commit and reads what it wrote."""
    import threading

    from sqlalchemy import insert, text

    from services.storage.sql.models import CrawlCounter

    url = f"sqlite:///{tmp_path}/two.db"
    first, second = make_engine(url, immediate=True), make_engine(url, immediate=True)
    init_db(first)
    holding, seen = threading.Event(), []

    def late_writer() -> None:
        holding.wait(timeout=10)
        with second.begin() as conn:  # BEGIN IMMEDIATE: waits for `first` to commit
            seen.append(set(conn.execute(text("SELECT name FROM crawl_counters")).scalars()))
            conn.execute(insert(CrawlCounter).values(name="second", value=1))

    thread = threading.Thread(target=late_writer)
    thread.start()
    with first.begin() as conn:
        assert conn.execute(text("SELECT count(*) FROM crawl_counters")).scalar() == 0
        holding.set()
        thread.join(timeout=0.5)
        assert thread.is_alive()  # queued behind our transaction, neither failed nor reading
        conn.execute(insert(CrawlCounter).values(name="first", value=1))
    thread.join(timeout=30)
    assert seen == [{"first"}]  # the second read after the first committed
    with first.connect() as conn:
        assert set(conn.execute(text("SELECT name FROM crawl_counters")).scalars()) == {"first", "second"}


def test_init_db_drops_the_lease_index_earlier_versions_created(sessions):
    engine = sessions.kw["bind"]
    with engine.begin() as conn:
        conn.execute(text("CREATE INDEX ix_frontier_next ON frontier (state, priority DESC, depth, url_id)"))
    assert "ix_frontier_next" in {ix["name"] for ix in inspect(engine).get_indexes("frontier")}
    init_db(engine)
    names = {ix["name"] for ix in inspect(engine).get_indexes("frontier")}
    assert "ix_frontier_next" not in names and "ix_frontier_lease" in names


def test_add_urls_counts_only_urls_the_frontier_did_not_hold(sessions):
    from services.crawler.frontier import entries
    from services.crawler.frontier.entries import NewUrl

    first = [NewUrl(f"http://h{i}.test/p", 0) for i in range(700)]  # more than one lookup chunk
    with sessions.begin() as session:
        assert entries.add_urls(session, first, partitions=4) == 700
    again = [*first[:300], *(NewUrl(f"http://new{i}.test/", 1) for i in range(5)), first[0]]
    with sessions.begin() as session:
        assert entries.add_urls(session, again, partitions=4) == 5
        assert session.scalar(select(func.count()).select_from(FrontierEntry)) == 705
        # the known URLs still waiting gained an in-link each (the first one two)
        assert session.get(FrontierEntry, url_id("http://h0.test/p")).inlinks == 2
