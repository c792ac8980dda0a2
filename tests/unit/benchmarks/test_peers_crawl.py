"""The crawl benchmark's floor (``bare-work``) does the per-page work Nimbus stores, with its code."""

from __future__ import annotations

from benchmarks.crawl import _pairs
from benchmarks.peers_crawl import _PageWork
from services.storage.formats.blocks import read_block
from services.storage.formats.records import iter_records

PAGE = (
    b"<!doctype html><html lang=en><head><title>Wing flutter</title></head><body>"
    b"<p>The flutter of a swept wing at transonic speed was measured in the tunnel, "
    b"and the results agree with the theory of the panel method.</p>"
    b'<ul><li><a href="/p/2">Two</a></li><li><a href="http://Example.org:80/p/3#x">Three</a></li></ul>'
    b"</body></html>"
)


def test_a_page_is_parsed_and_stored_in_both_blocks() -> None:
    work = _PageWork()
    links = work.page("http://example.org/p/1", "text/html; charset=utf-8", PAGE)
    assert links == ["http://example.org/p/2", "http://example.org/p/3"]  # normalized, as the crawler's
    [(entry, body)] = read_block(work.content.to_bytes())
    assert body == PAGE
    [record] = list(iter_records(work.records.to_bytes()))
    assert record.title == "Wing flutter"
    assert "swept wing" in record.text
    assert record.lang == "en"
    assert record.doc_id == entry.doc_id.hex()


def test_blocks_are_dropped_once_full_so_memory_stays_flat() -> None:
    work = _PageWork()
    work.BLOCK_DOCS = 3
    for n in range(7):
        work.page(f"http://example.org/p/{n}", "text/html", PAGE)
    assert len(work.content) == 1 and work.records.count == 1
    assert work.blocks_bytes > 2 * len(PAGE)


def test_nimbus_is_compared_with_the_floor_and_the_floor_with_the_bare_loop() -> None:
    results = {name: {} for name in ("bare", "bare-work", "nimbus", "scrapy")}
    pairs = _pairs(results)
    assert ("nimbus", "bare-work") in pairs and ("bare-work", "bare") in pairs
    assert ("bare-work", "bare-work") not in pairs and ("bare", "bare-work") not in pairs
