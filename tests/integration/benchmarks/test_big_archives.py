"""The enlarged sample archives (benchmarks/big_archives.py) hold distinct copies that the
archive readers read whole: new URLs and titles, bodies that differ, the size asked for."""

from __future__ import annotations

import hashlib
from pathlib import Path

from benchmarks.big_archives import MB, enlarged_warc, enlarged_wiki
from services.archives.batches import plan_batches, read_batch
from services.archives.bundle import load_bundle


def _records(folder: Path) -> list:
    bundle = load_bundle(str(folder))
    return [r for batch in plan_batches(bundle) for r in read_batch(bundle, batch)]


def test_the_warc_copies_are_distinct_pages_under_hosts_of_their_own(tmp_path: Path) -> None:
    folder = enlarged_warc(MB, tmp_path)
    assert folder.name == "warc-x2" and sum(f.stat().st_size for f in folder.glob("*.gz")) >= MB
    records = _records(folder)
    assert len(records) == 2 * 48  # the sample's 48 responses a copy; its other records left out
    assert {r.skipped.value for r in records if r.skipped} == {"content_type"}  # scripts, images, fonts
    html = [r for r in records if r.payload and r.payload.status == 200 and "html" in r.payload.content_type]
    assert {r.url.split("/")[2] for r in html} == {"c0.iana.org", "c1.iana.org"}
    assert len({r.url for r in html}) == len(html) == 32
    assert len({hashlib.sha1(r.payload.body).digest() for r in html}) == 32
    assert enlarged_warc(MB, tmp_path) == folder  # made once


def test_the_dump_copies_are_distinct_articles_and_redirects(tmp_path: Path) -> None:
    folder = enlarged_wiki(2 * MB, tmp_path)
    assert folder.name == "wiki-x2" and sum(f.stat().st_size for f in folder.glob("*.bz2")) >= 2 * MB
    records = _records(folder)
    articles = [r for r in records if r.document is not None]
    redirects = [r for r in records if r.redirect_to]
    assert (len(articles), len(redirects)) == (2 * 106, 2 * 99)  # and a page of another namespace
    assert len({r.document.title for r in articles}) == 212
    assert "Anarchism (copy 1)" in {r.document.title for r in articles}
    assert all("(copy_" in r.redirect_to for r in redirects)  # the targets renamed alike
    assert all("This is copy" in r.document.text for r in articles)
