"""The crawl cluster's pure parts and its small database protocols (SQLite): the committer
election and its fence, worker shares of the partitions, the ack manifest, the ledger's
acknowledgements and the order in which acknowledged batches are committed."""

from __future__ import annotations

import gzip
import json

import pytest
from sqlalchemy import func, select

from services.crawler.cluster import election
from services.crawler.cluster.heartbeat import DEAD_AFTER, Beat, beat, share, workers
from services.crawler.cluster.ordered_commit import next_run
from services.crawler.commit import manifest
from services.crawler.commit.finished_urls import FinishedUrls
from services.crawler.commit.results import FetchedDoc, UrlResult
from services.crawler.errors import AckManifestError, NotLeaderError
from services.crawler.frontier import entries, leases, ledger
from services.crawler.frontier.entries import NewUrl
from services.crawler.web.parse import ParsedDoc
from services.storage.blocks import ContentType
from services.storage.models import FetchBatch, FrontierEntry, RoleLease
from services.text.urls import url_id


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


def _result(n: int, *, doc: bool = True) -> UrlResult:
    r = UrlResult(f"{n:040x}", f"http://h.test/{n}", 1, "done", status=200, interval=None)
    r.counters["pages"] += 1
    r.found.append(NewUrl(f"http://h.test/{n}/next", 2, 3.5, r.url_id, hops=2, inlinks=3))
    if doc:
        parsed = ParsedDoc(ContentType.HTML, title=f"Page {n} ü", lang="en")
        r.doc = FetchedDoc(r.url, b"<p>body</p>", parsed, 1234.5)
    return r


def test_ack_manifest_round_trips_what_the_committer_needs() -> None:
    placement = {k: i for i, k in enumerate(manifest.PLACEMENT)} | {"content_block": "c", "record_block": "r"}
    batches = [
        manifest.AckedBatch(
            7, [_result(1), _result(2, doc=False)], {f"{1:040x}": placement | {"length": 11}}
        ),
        manifest.AckedBatch(9, [_result(3, doc=False)]),
    ]
    worker, back = manifest.decode(manifest.encode("h1/w0", batches), "acks/x.json.gz")
    assert worker == "h1/w0" and [b.seq for b in back] == [7, 9]
    first = back[0].results[0]
    assert first.doc is not None and first.doc.doc_id == batches[0].results[0].doc.doc_id  # type: ignore[union-attr]
    assert first.doc.parsed.title == "Page 1 ü" and first.doc.parsed.content_type is ContentType.HTML
    assert first.doc.length == 11 and first.doc.body == b""  # type: ignore[attr-defined]
    assert back[0].placements[first.url_id]["content_block"] == "c"
    assert first.found[0].priority == 3.5 and first.counters["pages"] == 1
    assert (first.found[0].hops, first.found[0].inlinks) == (2, 3)  # a redirect chain's length
    assert back[0].results[1].doc is None


def test_links_to_finished_pages_are_left_out_while_decoding() -> None:
    finished = FinishedUrls()
    r = _result(1)
    r.found.append(NewUrl("http://h.test/done", 2, 1.0, r.url_id, key=url_id("http://h.test/done")))
    r.found.append(NewUrl("http://h.test/waits", 2, 1.0, r.url_id, key=url_id("http://h.test/waits")))
    finished.add([url_id("http://h.test/done")])
    _worker, back = manifest.decode(
        manifest.encode("w", [manifest.AckedBatch(1, [r])]), "acks/y.json.gz", finished.seen
    )
    # Kept: the waiting URL, and the one without a url_id (the committer computes and checks it).
    assert [n.url for n in back[0].results[0].found] == ["http://h.test/1/next", "http://h.test/waits"]
    assert finished.skipped == 1
    # A link on the page travels in the short form, a redirect chain's target in the long
    # one; both come back whole.
    assert back[0].results[0].found == [r.found[0], r.found[2]]


def test_a_format_1_manifest_from_a_worker_not_yet_upgraded_is_read() -> None:
    link = ["http://h.test/a", 2, 1.5, "f" * 40, 0, 1, url_id("http://h.test/a"), "http://h.test"]
    url = {"url_id": "f" * 40, "url": "http://h.test/", "depth": 1, "state": "done", "status": 200}
    url |= {"error": None, "retry_at": None, "interval": None, "priority": None, "counters": {"pages": 1}}
    old = {"format": 1, "worker": "old", "batches": [{"seq": 4, "urls": [url | {"found": [link]}]}]}
    worker, back = manifest.decode(gzip.compress(json.dumps(old).encode()), "acks/old.json.gz")
    assert worker == "old" and back[0].results[0].found == [NewUrl(*link)]


def test_a_pages_links_travel_in_columns_and_come_back_in_order() -> None:
    r = _result(1, doc=False)
    urls = [f"http://h.test/{i}" for i in range(5)] + ["http://h.test/odd\nname"]
    r.found += [
        NewUrl(u, 2, 0.5 + i, r.url_id, key=url_id(u), host="http://h.test") for i, u in enumerate(urls)
    ]
    data = manifest.encode("w", [manifest.AckedBatch(1, [r])])
    [sent] = json.loads(gzip.decompress(data))["batches"][0]["urls"]
    assert sent["links"][0].split(manifest.SEP) == urls[:5] and len(sent["found"]) == 2  # the rest in full
    _worker, back = manifest.decode(data, "acks/c.json.gz")
    assert back[0].results[0].found == [r.found[0], r.found[6], *r.found[1:6]]
    sent["links"][1].pop()  # a priority short: the columns no longer line up
    damaged = {"format": 3, "worker": "w", "batches": [{"seq": 1, "urls": [sent]}]}
    with pytest.raises(AckManifestError, match="acks/d.json.gz cannot be read.*do not line up"):
        manifest.decode(gzip.compress(json.dumps(damaged).encode()), "acks/d.json.gz")


def test_a_format_2_manifest_from_a_worker_not_yet_upgraded_is_read() -> None:
    key = url_id("http://h.test/a")
    url = {"url_id": "f" * 40, "url": "http://h.test/", "depth": 1, "state": "done", "status": 200}
    url |= {"error": None, "retry_at": None, "interval": None, "priority": None, "counters": {"pages": 1}}
    link = ["http://h.test/a", 1.5, key, "http://h.test"]
    old = {"format": 2, "worker": "old", "batches": [{"seq": 4, "urls": [url | {"found": [link]}]}]}
    _worker, back = manifest.decode(gzip.compress(json.dumps(old).encode()), "acks/old.json.gz")
    assert back[0].results[0].found == [
        NewUrl("http://h.test/a", 2, 1.5, "f" * 40, 0, 1, key, "http://h.test")
    ]


def test_a_damaged_or_foreign_manifest_is_refused_by_name() -> None:
    with pytest.raises(AckManifestError, match="acks/bad.json.gz cannot be read"):
        manifest.decode(b"not gzip", "acks/bad.json.gz")
    whole = manifest.encode("h1/w0", [manifest.AckedBatch(7, [_result(1, doc=False)])])
    for damaged in (whole[:-4], whole[:12] + bytes(16) + whole[28:], b""):  # cut, bad deflate, empty
        with pytest.raises(AckManifestError, match="acks/cut.json.gz cannot be read"):
            manifest.decode(damaged, "acks/cut.json.gz")
    foreign = gzip.compress(json.dumps({"format": 99, "worker": "x", "batches": []}).encode())
    with pytest.raises(AckManifestError, match="format 99.*same Nimbus version"):
        manifest.decode(foreign, "acks/new.json.gz")


def _batch(s, state: str, worker: str = "w", manifest: str | None = None) -> int:
    row = FetchBatch(
        state=state, leased_by=worker, lease_expires=1e9, created_at=0.0, num_urls=1, manifest=manifest
    )
    s.add(row)
    s.flush()
    return row.seq


def test_acks_are_taken_only_from_the_lease_holder_and_only_once(sessions) -> None:
    with sessions.begin() as s:
        a, b = _batch(s, "leased", "w1"), _batch(s, "leased", "w2")
    with sessions.begin() as s:
        assert ledger.ack_batches(s, [a, b], "w1", "acks/1", 1.0) == [a]  # b is w2's
    with sessions.begin() as s:
        assert ledger.ack_batches(s, [a], "w1", "acks/2", 2.0) == []  # repeated: ignored
        assert s.get(FetchBatch, a).manifest == "acks/1"
        assert ledger.outstanding(s) == {"acked": 1, "leased": 1}


def test_acknowledged_batches_commit_in_sequence_order_only(sessions) -> None:
    with sessions.begin() as s:
        done = _batch(s, "committed")
        first = _batch(s, "leased")  # still out: everything behind it waits
        second = _batch(s, "acked", manifest="acks/2")
    with sessions() as s:
        assert next_run(s) == []
    with sessions.begin() as s:
        s.get(FetchBatch, first).state, s.get(FetchBatch, first).manifest = "acked", "acks/1"
        third = _batch(s, "leased")
        _batch(s, "acked", manifest="acks/4")
    with sessions() as s:
        assert next_run(s) == [(first, "acks/1"), (second, "acks/2")]
    assert done < first < second < third


def test_a_send_window_bounds_the_batches_out(sessions) -> None:
    with sessions.begin() as s:
        entries.add_urls(s, [NewUrl(f"http://h{i}.test/", 0, 1.0) for i in range(10)], 0.0)
        _batch(s, "acked", manifest="acks/0")
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
        _batch(s, "acked", manifest="acks/9")
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


def test_links_to_finished_urls_are_left_out_and_the_set_stays_bounded() -> None:
    from services.crawler.commit.finished_urls import FinishedUrls
    from services.text.urls import url_id

    finished = FinishedUrls(cap=3)
    done = [f"http://h.test/{i}" for i in range(3)]
    finished.add(url_id(u) for u in done)
    links = [NewUrl(u, 1) for u in [*done, "http://h.test/new"]]
    kept = finished.unknown(links)
    assert [n.url for n in kept] == ["http://h.test/new"] and finished.skipped == 3
    assert kept[0].key == url_id("http://h.test/new")  # computed once, passed on to add_urls
    finished.add([url_id("http://h.test/a"), url_id("http://h.test/b")])  # over the cap: emptied first
    assert [n.url for n in finished.unknown([NewUrl(done[0], 1)])] == [done[0]]


def test_a_new_committer_learns_the_finished_urls_from_the_frontier(sessions) -> None:
    from services.crawler.commit.finished_urls import FinishedUrls
    from services.text.urls import url_id

    urls = [f"http://h.test/{i}" for i in range(3)]
    with sessions.begin() as s:
        entries.add_urls(s, [NewUrl(u, 0, 1.0) for u in urls], 0.0)
        entries.finish(
            s,
            [
                entries.Outcome(url_id(urls[0]), "done", 200),
                entries.Outcome(url_id(urls[1]), "failed", 404),
            ],
        )
    finished = FinishedUrls()
    with sessions() as s:
        assert finished.load(s) == 2
    assert [n.url for n in finished.unknown([NewUrl(u, 1) for u in urls])] == [urls[2]]  # still waiting


def test_two_committers_starting_together_elect_one_and_neither_fails(sessions) -> None:
    """Both find no lease row and both insert it: the loser stands by instead of failing (a
    fault-test run lost its standby to this race: IntegrityError, process gone)."""
    with sessions.begin() as s:
        assert election.insert_first(s, "committer", "a", now=100.0, ttl=15.0) == 1
    with sessions.begin() as s:  # b, whose SELECT found no row a moment before
        assert election.insert_first(s, "committer", "b", now=100.0, ttl=15.0) is None
        _batch(s, "leased")  # its transaction goes on
    with sessions() as s:
        assert s.get(RoleLease, "committer").holder == "a"  # type: ignore[union-attr]
        assert s.scalar(select(func.count()).select_from(FetchBatch)) == 1
