"""A cluster's batches in the frontier (SQLite): acknowledgements in the ledger, the send
window, expired batches handed out again and split among the partitions' new owners."""

from __future__ import annotations

from services.crawler.cluster.heartbeat import share
from services.crawler.frontier import entries, leases, ledger
from services.crawler.frontier.entries import NewUrl
from services.storage.sql.models import FetchBatch, FrontierEntry
from tests.unit.crawler.ledger_rows import add_batch


def test_acks_are_taken_only_from_the_lease_holder_and_only_once(sessions) -> None:
    with sessions.begin() as s:
        a, b = add_batch(s, "leased", "w1"), add_batch(s, "leased", "w2")
    with sessions.begin() as s:
        assert ledger.ack_batches(s, [a, b], "w1", "acks/1", 1.0) == [a]  # b is w2's
    with sessions.begin() as s:
        assert ledger.ack_batches(s, [a], "w1", "acks/2", 2.0) == []  # repeated: ignored
        assert s.get(FetchBatch, a).manifest == "acks/1"
        assert ledger.outstanding(s) == {"acked": 1, "leased": 1}


def test_a_send_window_bounds_the_batches_out(sessions) -> None:
    with sessions.begin() as s:
        entries.add_urls(s, [NewUrl(f"http://h{i}.test/", 0, 1.0) for i in range(10)], 0.0)
        add_batch(s, "acked", manifest="acks/0")
    with sessions.begin() as s:
        taken_leases = leases.lease_batches(
            s, batches=8, limit=1, budget=100, now=1.0, lease_seconds=60, max_depth=5, worker="w", window=3
        )
    assert len(taken_leases) == 2  # one acknowledged batch out already


def test_a_full_window_still_hands_out_an_expired_batch(sessions) -> None:
    """The batch the commit waits for may be one whose worker died: a full window must not
    keep it from being handed out again, or the cluster stops."""
    with sessions.begin() as s:
        entries.add_urls(s, [NewUrl(f"http://h{i}.test/", 0, 1.0) for i in range(4)], 0.0)
        [dead] = leases.lease_batches(
            s, batches=1, limit=1, budget=10, now=1.0, lease_seconds=60, max_depth=5, worker="gone", window=2
        )
        add_batch(s, "acked", manifest="acks/9")
    with sessions.begin() as s:
        taken_leases = leases.lease_batches(
            s, batches=4, limit=1, budget=10, now=100.0, lease_seconds=60, max_depth=5, worker="w", window=2
        )
        assert [lease.seq for lease in taken_leases] == [dead.seq]
        assert s.get(FetchBatch, dead.seq).reschedules == 1


def test_a_dead_workers_batch_split_by_the_new_shares_is_taken_by_its_owners(sessions) -> None:
    """Three workers share 4 partitions; one dies holding a batch whose hosts the two left
    now own between them. Its batch goes on under its sequence number with the first
    owner's URLs; the rest go back to the frontier, and the other owner leases them."""
    parts = 4
    hosts = {}
    for i in range(100):  # a host in each partition
        hosts.setdefault(entries.partition_of(f"http://h{i}.test", parts), f"http://h{i}.test")
    urls = [NewUrl(f"{h}/", 0, 1.0) for _p, h in sorted(hosts.items())]
    alive = ["a", "b"]
    share_a, share_b = share(alive, "a", parts), share(alive, "b", parts)
    lease = {"limit": 4, "budget": 10, "lease_seconds": 60, "max_depth": 5, "window": 8}
    with sessions.begin() as s:
        entries.add_urls(s, urls, 0.0, partitions=parts)
        [dead] = leases.lease_batches(s, batches=1, now=1.0, worker="gone", **lease)
    assert len(dead.entries) == 4  # every partition in it
    recrawl = next(e.url_id for e in dead.entries if entries.partition_of(e.host, parts) in share_b)
    with sessions.begin() as s:
        s.get(FrontierEntry, recrawl).recrawl_interval = 86_400.0  # fetched before: a recrawl
    with sessions.begin() as s:
        [taken] = leases.lease_batches(s, batches=1, now=100.0, worker="a", partitions=share_a, **lease)
        assert taken.seq == dead.seq
        assert {entries.partition_of(e.host, parts) for e in taken.entries} == set(share_a)
        assert s.get(FetchBatch, dead.seq).num_urls == len(share_a)
        back = s.get(FrontierEntry, recrawl)
        assert (back.state, back.batch_seq, back.available_at) == ("done", None, 100.0)  # due again
    with sessions.begin() as s:
        [rest] = leases.lease_batches(s, batches=1, now=100.0, worker="b", partitions=share_b, **lease)
    assert rest.seq > dead.seq
    assert {entries.partition_of(e.host, parts) for e in rest.entries} == set(share_b)
    assert {e.url for e in taken.entries + rest.entries} == {u.url for u in urls}
