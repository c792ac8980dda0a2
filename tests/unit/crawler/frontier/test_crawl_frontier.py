"""The database frontier on SQLite: adding URLs, leases and their order, the ledger, outcomes."""

from __future__ import annotations

from sqlalchemy import select

from services.crawler.frontier import entries, leases, ledger
from services.crawler.frontier.entries import NewUrl, Outcome
from services.storage.sql.models import FetchBatch, FrontierEntry
from services.text.urls import url_id


def _lease(sessions, now: float = 10.0, limit: int = 10, max_depth: int = 5):
    with sessions.begin() as session:
        return leases.lease_batch(session, limit=limit, now=now, lease_seconds=60.0, max_depth=max_depth)


def test_add_urls_deduplicates_in_memory_and_against_the_table(sessions) -> None:
    with sessions.begin() as session:
        assert entries.add_urls(session, [NewUrl("http://a.test/", 0), NewUrl("http://a.test/", 1)]) == 1
    with sessions.begin() as session:
        assert entries.add_urls(session, [NewUrl("http://a.test/", 2), NewUrl("http://b.test/x", 1)]) == 1
        row = session.get(FrontierEntry, url_id("http://b.test/x"))
        assert (row.host, row.depth, row.state) == ("http://b.test", 1, "new")


def test_lease_order_depth_filter_and_sequence_numbers(sessions) -> None:
    with sessions.begin() as session:
        entries.add_urls(
            session,
            [
                NewUrl("http://a.test/deep", 3),
                NewUrl("http://a.test/one", 1),
                NewUrl("http://a.test/seed", 0, priority=1.0),
                NewUrl("http://a.test/two", 2),
            ],
        )
    first = _lease(sessions, limit=2, max_depth=2)
    assert [e.url for e in first.entries] == ["http://a.test/seed", "http://a.test/one"]
    second = _lease(sessions, limit=5, max_depth=2)
    assert second.seq > first.seq
    assert [e.url for e in second.entries] == ["http://a.test/two"]  # depth 3 is past the limit
    assert _lease(sessions, max_depth=2) is None


def test_expired_batch_is_handed_out_again_under_its_sequence_number(sessions) -> None:
    with sessions.begin() as session:
        entries.add_urls(session, [NewUrl("http://a.test/1", 0), NewUrl("http://a.test/2", 0)])
    lease = _lease(sessions, now=10.0)
    assert _lease(sessions, now=20.0) is None  # still leased (expires at 70)
    again = _lease(sessions, now=71.0)
    assert again.seq == lease.seq
    assert sorted(e.url for e in again.entries) == ["http://a.test/1", "http://a.test/2"]
    with sessions.begin() as session:
        leases.renew_leases(session, [lease.seq], until=0.0)  # what a stopping crawler does
    assert _lease(sessions, now=72.0).seq == lease.seq


def test_finish_records_outcomes_and_released_urls_return(sessions) -> None:
    with sessions.begin() as session:
        entries.add_urls(session, [NewUrl(f"http://a.test/{i}", 0) for i in range(3)])
    lease = _lease(sessions)
    ids = [e.url_id for e in lease.entries]
    with sessions.begin() as session:
        entries.finish(
            session,
            [
                Outcome(ids[0], "done", 200),
                Outcome(ids[1], "failed", 503, "http 503"),
                Outcome(ids[2], "new"),
            ],
            now=11.0,
        )
        ledger.commit_batches(session, [lease.seq], now=11.0)
        rows = {r.url_id: r for r in session.scalars(select(FrontierEntry))}
        assert (rows[ids[0]].state, rows[ids[0]].last_status, rows[ids[0]].attempts) == ("done", 200, 1)
        assert (rows[ids[1]].state, rows[ids[1]].last_error) == ("failed", "http 503")
        assert (rows[ids[2]].state, rows[ids[2]].attempts) == ("new", 0)
        assert session.get(FetchBatch, lease.seq).state == "committed"
    assert [e.url_id for e in _lease(sessions, now=12.0).entries] == [ids[2]]


def test_lease_batches_takes_several_batches_in_one_transaction_within_the_budget(sessions) -> None:
    with sessions.begin() as session:
        entries.add_urls(session, [NewUrl(f"http://a.test/{i}", 0) for i in range(25)])
    with sessions.begin() as session:
        taken_leases = leases.lease_batches(
            session, batches=4, limit=10, budget=22, now=10.0, lease_seconds=60.0, max_depth=5
        )
    assert [len(lease.entries) for lease in taken_leases] == [10, 10, 2]  # the budget ends the third
    assert len({lease.seq for lease in taken_leases}) == 3
    leased = [e.url for lease in taken_leases for e in lease.entries]
    assert len(set(leased)) == 22
    with sessions.begin() as session:
        rest = leases.lease_batches(
            session, batches=4, limit=10, budget=100, now=10.0, lease_seconds=60.0, max_depth=5
        )
    assert [len(lease.entries) for lease in rest] == [3]  # what is left, then nothing ready


def test_a_partitioned_lease_walks_the_lease_index_without_sorting(sessions) -> None:
    """The partition and availability filters are answered from the index, in lease order."""
    with sessions.begin() as session:
        entries.add_urls(session, [NewUrl(f"http://h{i}.test/", 0) for i in range(50)], partitions=4)
        # The lease's own statement, with its parameters bound.
        query = leases._new_statement(True, False).params(parts=[0, 1], now=1.0, max_depth=5, limit=10)
        sql = str(query.compile(session.get_bind(), compile_kwargs={"literal_binds": True}))
        plan = " ".join(row[-1] for row in session.connection().exec_driver_sql("EXPLAIN QUERY PLAN " + sql))
    assert "ix_frontier_lease" in plan and "TEMP B-TREE" not in plan, plan


def test_a_release_with_a_priority_puts_the_url_behind_the_others(sessions) -> None:
    """What a visit does with a URL whose path prefix turned out dead (frontier/dead_prefixes.py)."""
    with sessions.begin() as session:
        entries.add_urls(
            session, [NewUrl("http://a.test/old/1", 1, 5.0), NewUrl("http://a.test/new", 1, 2.0)]
        )
    first = _lease(sessions, limit=1)
    assert [e.url for e in first.entries] == ["http://a.test/old/1"]
    with sessions.begin() as session:
        entries.finish(session, [Outcome(first.entries[0].url_id, "new", priority=-9.0)], now=11.0)
        assert session.get(FrontierEntry, first.entries[0].url_id).priority == -9.0
    assert [e.url for e in _lease(sessions, now=12.0, limit=2).entries] == [
        "http://a.test/new",
        "http://a.test/old/1",
    ]
