"""WARC and ARC files through the public API (plan_batches, read_batch): the sample data, and
WARC variants built here (versions, revisits, encodings)."""

from __future__ import annotations

import gzip
from collections import Counter
from pathlib import Path

from services.archives.batch import Batch
from services.archives.batches import plan_batches, read_batch
from services.archives.bundle import Bundle
from services.archives.records import ArchiveRecord, Skip, count
from services.text.extract.html import parse_html
from tests.unit.archives.builders import (
    arc_file,
    arc_record,
    digest,
    gz,
    http_response,
    make_bundle,
    page,
    warc_record,
)

WARC_TOML = 'type = "warc"\ndescription = "web"\n'


def read_all(bundle: Bundle, batches: list[Batch] | None = None, **kwargs: object) -> list[ArchiveRecord]:
    return [r for b in (batches or plan_batches(bundle)) for r in read_batch(bundle, b, **kwargs)]  # type: ignore[arg-type]


def test_the_iana_crawl_gives_its_html_pages_with_their_links(tmp_path: Path, sample_data: Path) -> None:
    bundle = make_bundle(tmp_path / "iana", WARC_TOML, {"iana.warc.gz": sample_data / "warc/iana.warc.gz"})
    records = read_all(bundle)
    counts = count(records)
    assert len(records) == 343  # every record, once
    assert counts["skipped.record_type.request"] == 171 and counts["skipped.record_type.warcinfo"] == 1
    assert counts["skipped.unresolved_revisit"] == 0  # all 123 revisits found their original
    pages = [r for r in records if r.payload is not None and r.payload.status == 200]
    html = {r.url for r in pages if r.payload and r.payload.content_type.startswith("text/html")}
    assert {"http://www.iana.org/", "http://www.iana.org/domains", "http://www.iana.org/numbers"} <= html
    assert counts["skipped.content_type.image/png"] + counts["skipped.content_type.text/css"] > 0
    home = next(r for r in pages if r.url == "http://www.iana.org/")
    assert home.ip == "" and home.fetched_at > 1_390_000_000  # WARC-Date: January 2014
    parsed = parse_html(home.payload.body, home.url)  # type: ignore[union-attr]
    assert "Internet Assigned Numbers Authority" in parsed.title
    assert any(url.startswith("http://www.iana.org/domains") for url, _anchor in parsed.links)


def test_every_revisit_of_the_iana_crawl_resolves_across_batches(tmp_path: Path, sample_data: Path) -> None:
    """The sample's 123 revisits name scripts, stylesheets and images: each resolves to its
    original (whose media type then decides, as for any capture), none is left unresolved,
    even with revisits and originals in different batches."""
    bundle = make_bundle(tmp_path / "iana", WARC_TOML, {"iana.warc.gz": sample_data / "warc/iana.warc.gz"})
    batches = plan_batches(bundle, batch_size=40)
    revisits = {(b.file, int(k)) for b in batches for k in b.seek_state.get("revisits", {})}
    assert len(revisits) == 123
    assert any(b.start > int(v[1]) for b in batches for v in b.seek_state.get("revisits", {}).values())
    records = {(r.offset, r.url): r for r in read_all(bundle, batches)}
    resolved = [r for (offset, _url), r in records.items() if ("iana.warc.gz", offset) in revisits]
    assert len(resolved) == 123
    assert all(r.skipped in (None, Skip.CONTENT_TYPE) and (r.payload or r.detail) for r in resolved)
    assert Counter(r.detail for r in resolved)["text/css"] > 0


def test_revisits_resolve_by_digest_across_files_and_unresolved_ones_are_counted(tmp_path: Path) -> None:
    body = b"<html><title>Same</title><a href='/x'>x</a></html>"
    original = page("http://a.test/", body.decode(), date="2020-01-01T00:00:00Z")
    by_digest = warc_record(
        "revisit", "http://b.test/copy", http_response(b"")[:-0] or b"", date="2020-02-01T00:00:00Z",
        headers={"WARC-Payload-Digest": digest(body), "WARC-Profile": "http://netpreserve.org/warc/1.0/revisit/identical-payload-digest"},
    )  # fmt: skip
    refers = {"WARC-Refers-To-Target-URI": "http://a.test/", "WARC-Refers-To-Date": "2020-01-01T00:00:00Z"}
    by_uri_date = warc_record("revisit", "http://a.test/", b"", date="2020-03-01T00:00:00Z", headers=refers)
    orphan = warc_record(
        "revisit", "http://c.test/", b"", headers={"WARC-Payload-Digest": "sha1:NOTHINGHERE"}
    )
    bundle = make_bundle(
        tmp_path / "b",
        WARC_TOML,
        {"1.warc.gz": gz(original), "2.warc.gz": gz(by_digest, by_uri_date, orphan)},
    )
    records = {(r.url, r.kind): r for r in read_all(bundle)}
    copy = records[("http://b.test/copy", "payload")]
    assert copy.payload is not None and copy.payload.body == body
    assert copy.fetched_at == 1_580_515_200.0  # the revisit's date, 2020-02-01
    later = [r for (url, kind), r in records.items() if url == "http://a.test/" and kind == "payload"]
    assert later
    assert ("http://c.test/", "skipped.unresolved_revisit") in records


def test_chunked_and_content_encoded_bodies_are_decoded(tmp_path: Path, sample_data: Path) -> None:
    html = b"<html><title>Zipped</title><body>" + b"text " * 400 + b"</body></html>"
    zipped = gzip.compress(html)
    chunked = b"".join(
        b"%x\r\n%s\r\n" % (len(zipped[i : i + 100]), zipped[i : i + 100]) for i in range(0, len(zipped), 100)
    )
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Encoding: gzip\r\n"
    block = head + b"Transfer-Encoding: chunked\r\n\r\n" + chunked + b"0\r\n\r\n"
    false_chunked = http_response(html, extra="Transfer-Encoding: chunked\r\n")  # the header lies
    bundle = make_bundle(
        tmp_path / "b",
        WARC_TOML,
        {
            "built.warc": warc_record("response", "http://z.test/", block)
            + warc_record("response", "http://f.test/", false_chunked),
            "chunked.warc": sample_data / "warc/example-iana.org-chunked.warc",
        },
    )
    bodies = {r.url: r.payload for r in read_all(bundle) if r.payload is not None}
    assert bodies["http://z.test/"].body == html
    assert not any(
        k.lower() in ("content-encoding", "transfer-encoding") for k, _ in bodies["http://z.test/"].headers
    )
    assert bodies["http://f.test/"].body == html
    iana = bodies["http://www.iana.org/"].body
    assert iana.startswith(b"<!doctype html>") and iana.rstrip().endswith(b"</html>")
    assert b"\r\n001c37\r\n" not in iana and b"\n0\r\n" not in iana[-10:]


def test_warc_versions_and_record_types(tmp_path: Path) -> None:
    html = "<html><title>v</title></html>"
    records = [
        page("http://v11.test/", html, version="1.1", date="2020-01-02T03:04:05.123456Z"),
        page("http://v10.test/", html, version="1.0"),
        page("http://v017.test/", html, version="0.17"),
        warc_record(
            "resource",
            "http://doc.test/paper.pdf",
            b"%PDF-1.4 ...",
            headers={"Content-Type": "application/pdf"},
        ),
        warc_record("request", "http://v10.test/", b"GET / HTTP/1.1\r\n\r\n"),
        warc_record("metadata", "http://v10.test/", b"via: x\r\n"),
        warc_record("response", "dns:v10.test", b"20200102030405\nv10.test. 60 IN A 10.0.0.1\n"),
        page("http://img.test/a.png", "PNG", headers={}).replace(b"text/html", b"image/png"),
    ]
    bundle = make_bundle(tmp_path / "b", WARC_TOML, {"mixed.warc": b"".join(records)})
    got = read_all(bundle)
    kinds = Counter(r.kind for r in got)
    assert {r.url for r in got if r.payload} == {
        "http://v11.test/",
        "http://v10.test/",
        "http://v017.test/",
        "http://doc.test/paper.pdf",
    }
    assert next(r for r in got if r.url == "http://v11.test/").fetched_at == 1577934245.123456
    assert kinds["skipped.record_type"] == 3 and kinds["skipped.content_type"] == 1
    assert {r.detail for r in got if r.skipped == Skip.RECORD_TYPE} == {"request", "metadata", "dns"}


def test_arc_files_gzip_and_plain_mixed_with_warc(tmp_path: Path, sample_data: Path) -> None:
    plain = arc_file(arc_record("http://old.test/", http_response(b"<html><title>Old</title></html>")))
    bundle = make_bundle(
        tmp_path / "b",
        'type = "arc"\ndescription = "old crawls"\n',
        {
            "example.arc.gz": sample_data / "warc/example.arc.gz",
            "old.arc": plain,
            "new.warc": page("http://n.test/", "<html></html>"),
        },
    )
    got = read_all(bundle)
    payloads = {r.url: r for r in got if r.payload is not None}
    assert set(payloads) == {"http://example.com/", "http://old.test/", "http://n.test/"}
    example = payloads["http://example.com/"]
    assert example.ip == "93.184.216.119" and example.fetched_at == 1392526941.0  # 20140216050221
    assert b"Example Domain" in example.payload.body  # type: ignore[union-attr]
    assert count(got)["skipped.record_type.filedesc"] == 2
