"""The crawl cluster's roles and their small database protocols (SQLite): the committer
election and its fence, worker shares of the partitions, live and dead workers, and the order
in which acknowledged batches are committed."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from services.crawler.cluster import election
from services.crawler.cluster.heartbeat import DEAD_AFTER, Beat, beat, share, workers
from services.crawler.cluster.ordered_commit import next_run
from services.crawler.errors import NotLeaderError
from services.storage.sql.models import FetchBatch, RoleLease
from tests.unit.crawler.ledger_rows import add_batch


def test_one_holder_at_a_time_a_standby_takes_over_only_after_expiry(sessions) -> None:
    with sessions.begin() as s:
        assert election.acquire(s, "committer", "a", now=100.0, ttl=15.0) == 1
    with sessions.begin() as s:
        assert election.acquire(s, "committer", "b", now=110.0, ttl=15.0) is None  # a's lease runs
        assert election.acquire(s, "committer", "a", now=112.0, ttl=15.0) == 1  # a renews
    with sessions.begin() as s:
        assert election.acquire(s, "committer", "b", now=126.0, ttl=15.0) is None  # renewed to 127
        assert election.acquire(s, "committer", "b", now=128.0, ttl=15.0) == 2  # a stopped beating
    with sessions.begin() as s, pytest.raises(NotLeaderError, match="a no longer holds.*b \\(term 2\\)"):
        election.fence(s, "committer", "a", 1)  # a wakes up mid-commit: refused
    with sessions.begin() as s:
        election.fence(s, "committer", "b", 2)
        election.release(s, "committer", "b")
    with sessions.begin() as s:
        assert election.acquire(s, "committer", "c", now=129.0, ttl=15.0) == 3  # released: at once


def test_every_partition_has_exactly_one_live_owner() -> None:
    workers = ["h1/w0", "h2/w1", "h3/w2"]
    shares = [share(workers, w, 64) for w in workers]
    assert sorted(p for s in shares for p in s) == list(range(64))
    assert share([], "h9/w", 8) == list(range(8))  # alone: everything
    assert share(["h1/w0"], "h2/w1", 4) == [1, 3]  # not yet seen by itself: still counted


def test_live_and_dead_workers_from_heartbeats(sessions) -> None:
    with sessions.begin() as s:
        beat(s, Beat("h1/w0/11", "worker", 0.0, 100.0, "running", {}))
        beat(s, Beat("h2/w1/12", "worker", 0.0, 60.0, "running", {}))  # killed long ago
        beat(s, Beat("h3/w2/13", "worker", 0.0, 60.0, "stopped", {}))  # stopped cleanly
        beat(s, Beat("h1/w0/10", "worker", 0.0, 50.0, "running", {}))  # h1/w0's killed predecessor
        beat(s, Beat("h4/c/14", "committer", 0.0, 100.0, "running", {}))
    now = 100.0 + DEAD_AFTER * 5.0 - 1
    with sessions() as s:
        live, dead = workers(s, now, 5.0)
        assert live == ["h1/w0"]
        assert dead == ["h2/w1"]  # h1/w0 has a live successor


def test_acknowledged_batches_commit_in_sequence_order_only(sessions) -> None:
    with sessions.begin() as s:
        done = add_batch(s, "committed")
        first = add_batch(s, "leased")  # still out: everything behind it waits
        second = add_batch(s, "acked", manifest="acks/2")
    with sessions() as s:
        assert next_run(s) == []
    with sessions.begin() as s:
        s.get(FetchBatch, first).state, s.get(FetchBatch, first).manifest = "acked", "acks/1"
        third = add_batch(s, "leased")
        add_batch(s, "acked", manifest="acks/4")
    with sessions() as s:
        assert next_run(s) == [(first, "acks/1"), (second, "acks/2")]
    assert done < first < second < third


def test_two_committers_starting_together_elect_one_and_neither_fails(sessions) -> None:
    """Both find no lease row and both insert it: the loser stands by instead of failing (a
    fault-test run lost its standby to this race: IntegrityError, process gone)."""
    with sessions.begin() as s:
        assert election.insert_first(s, "committer", "a", now=100.0, ttl=15.0) == 1
    with sessions.begin() as s:  # b, whose SELECT found no row a moment before
        assert election.insert_first(s, "committer", "b", now=100.0, ttl=15.0) is None
        add_batch(s, "leased")  # its transaction goes on
    with sessions() as s:
        assert s.get(RoleLease, "committer").holder == "a"  # type: ignore[union-attr]
        assert s.scalar(select(func.count()).select_from(FetchBatch)) == 1
