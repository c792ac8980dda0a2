"""A cluster worker's acknowledgement manifest: what the committer needs round-trips, older
formats are read, a damaged or foreign one is refused by name."""

from __future__ import annotations

import gzip
import json

import pytest

from services.crawler.commit import manifest
from services.crawler.commit.finished_urls import FinishedUrls
from services.crawler.commit.results import FetchedDoc, UrlResult
from services.crawler.errors import AckManifestError
from services.crawler.frontier.entries import NewUrl
from services.crawler.web.parse import ParsedDoc
from services.storage.formats.blocks import ContentType
from services.text.urls import url_id


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


def test_an_alias_travels_with_its_target_and_its_own_title() -> None:
    """A wiki redirect read by a worker reaches the committer whole: its target and its
    title (the target's anchor text in the index); an alias without a title stays without."""
    redirect = UrlResult(f"{1:040x}", "http://w.test/wiki/UK", 0, "done", archived=True)
    redirect.alias_of, redirect.alias_title = "http://w.test/wiki/United_Kingdom", "UK"
    moved = UrlResult(f"{2:040x}", "http://h.test/old", 0, "done", status=301)
    moved.alias_of = "http://h.test/new"
    _, back = manifest.decode(manifest.encode("h1/w0", [manifest.AckedBatch(3, [redirect, moved])]), "acks/a")
    got = back[0].results
    assert (got[0].alias_of, got[0].alias_title, got[0].archived) == (redirect.alias_of, "UK", True)
    assert (got[1].alias_of, got[1].alias_title) == ("http://h.test/new", "")


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
