"""Hostile archives, each built here: a clear error naming the file and the byte offset, the
rest of the file read, every record counted."""

from __future__ import annotations

import bz2
import gzip
import tracemalloc
from pathlib import Path

import pytest

from services.archives.batches import plan_batches, read_batch
from services.archives.bundle import Bundle
from services.archives.errors import BundleError
from services.archives.records import ArchiveRecord, Skip, count
from tests.unit.archives.builders import (
    arc_file,
    arc_record,
    gz,
    http_response,
    make_bundle,
    page,
    warc_record,
)

WARC_TOML = 'type = "warc"\ndescription = "hostile"\n'
GOOD = [page(f"http://good.test/{i}", f"<html><title>{i}</title></html>") for i in range(4)]


def read_all(bundle: Bundle, **kwargs: object) -> list[ArchiveRecord]:
    return [r for b in plan_batches(bundle, batch_size=2) for r in read_batch(bundle, b, **kwargs)]  # type: ignore[arg-type]


def urls(records: list[ArchiveRecord]) -> list[str]:
    return [r.url for r in records if r.payload is not None or r.document is not None]


def errors(records: list[ArchiveRecord]) -> list[ArchiveRecord]:
    return [r for r in records if r.error]


def test_truncated_gzip(tmp_path: Path) -> None:
    data = gz(*GOOD)
    bundle = make_bundle(tmp_path / "b", WARC_TOML, {"cut.warc.gz": data[:-30]})
    records = read_all(bundle)
    assert urls(records) == [f"http://good.test/{i}" for i in range(3)]
    (error,) = errors(records)
    last_member = len(gz(*GOOD[:3]))
    assert error.skipped == Skip.TRUNCATED and error.offset == last_member
    assert f"cut.warc.gz at byte {last_member:,}" in error.error and "cut short" in error.error


@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "gzip"])
def test_a_garbage_record_in_the_middle(tmp_path: Path, compressed: bool) -> None:
    garbage = b"\x00\x17 this is no record at all \xff\r\n" * 20
    if compressed:
        data = gz(*GOOD[:2]) + garbage + gz(*GOOD[2:])
    else:
        data = b"".join(GOOD[:2]) + garbage + b"".join(GOOD[2:])
    bundle = make_bundle(tmp_path / "b", WARC_TOML, {"mid.warc" + (".gz" if compressed else ""): data})
    records = read_all(bundle)
    assert urls(records) == [f"http://good.test/{i}" for i in range(4)]
    (error,) = errors(records)
    where = len(gz(*GOOD[:2])) if compressed else len(b"".join(GOOD[:2]))
    assert error.skipped == Skip.CORRUPT and error.offset == where and f"at byte {where:,}" in error.error


@pytest.mark.parametrize("delta", [-25, +40], ids=["too-short", "too-long"])
def test_a_record_whose_declared_length_is_wrong(tmp_path: Path, delta: int) -> None:
    block = http_response(b"<html><title>liar</title>" + b"x" * 200 + b"</html>")
    liar = warc_record("response", "http://liar.test/", block, length=len(block) + delta)
    bundle = make_bundle(tmp_path / "b", WARC_TOML, {"len.warc": GOOD[0] + liar + GOOD[1] + GOOD[2]})
    records = read_all(bundle)
    assert "http://liar.test/" not in urls(records)  # its bytes cannot be trusted
    assert urls(records) == ["http://good.test/0", "http://good.test/1", "http://good.test/2"]
    (error,) = errors(records)
    assert error.offset == len(GOOD[0]) and "declared length" in error.error and "len.warc" in error.error


def test_an_unknown_warc_version_is_skipped_record_by_record(tmp_path: Path) -> None:
    future = page("http://future.test/", "<html></html>", version="2.5")
    bundle = make_bundle(tmp_path / "b", WARC_TOML, {"v.warc.gz": gz(GOOD[0], future, GOOD[1])})
    records = read_all(bundle)
    assert urls(records) == ["http://good.test/0", "http://good.test/1"]
    (error,) = errors(records)
    assert error.skipped == Skip.UNKNOWN_VERSION and error.url == "http://future.test/"
    assert f"at byte {len(gz(GOOD[0])):,}: WARC/2.5" in error.error and "1.1" in error.error


@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "gzip"])
def test_an_arc_header_with_missing_fields(tmp_path: Path, compressed: bool) -> None:
    first = arc_record("http://one.test/", http_response(b"<html>1</html>"))
    broken = b"http://broken.test/ 20140216050221 120\n" + http_response(b"<html>2</html>") + b"\n"
    last = arc_record("http://three.test/", http_response(b"<html>3</html>"))
    head = arc_file()
    parts = [head, first, broken, last]
    data = b"".join(gzip.compress(p, mtime=0) for p in parts) if compressed else b"".join(parts)
    bundle = make_bundle(tmp_path / "b", 'type = "arc"\ndescription = "x"\n', {"f.arc": data})
    records = read_all(bundle)
    assert urls(records) == ["http://one.test/", "http://three.test/"]
    (error,) = errors(records)
    assert "ARC header has 3 fields, needs 5" in error.error
    assert error.offset == len(
        b"".join(gzip.compress(p, mtime=0) for p in parts[:2]) if compressed else head + first
    )


def test_a_record_over_the_cap_is_streamed_past_never_held(tmp_path: Path) -> None:
    cap = 256 * 1024
    huge_body = b"<html>" + b"y" * (48 * cap) + b"</html>"  # 12 MB
    huge = warc_record("response", "http://huge.test/", http_response(huge_body))
    bundle = make_bundle(
        tmp_path / "b",
        WARC_TOML,
        {"big.warc": GOOD[0] + huge + GOOD[1], "big.warc.gz": gz(GOOD[2], huge, GOOD[3])},
    )
    batches = plan_batches(bundle)
    tracemalloc.start()
    records = [r for b in batches for r in read_batch(bundle, b, max_record_bytes=cap)]
    _now, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    # Two 1 MiB read buffers (sources.BUFFER_BYTES) and the cap, never the record.
    assert peak < 3 * 1024 * 1024, (
        f"{peak:,} bytes held reading a {len(huge):,}-byte record past a {cap:,} cap"
    )
    assert urls(records) == [f"http://good.test/{i}" for i in range(4)]
    assert count(records)["skipped.too_large"] == 2


def test_a_gzip_bomb_body_stops_at_the_cap(tmp_path: Path) -> None:
    bomb = gzip.compress(b"<html>" + b"\0" * (20 * 1024 * 1024))
    block = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Encoding: gzip\r\n\r\n" + bomb
    bundle = make_bundle(
        tmp_path / "b", WARC_TOML, {"bomb.warc": warc_record("response", "http://bomb.test/", block)}
    )
    (record,) = read_all(bundle, max_record_bytes=1024 * 1024)
    assert record.skipped == Skip.TOO_LARGE


WIKI_HEAD = b'<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/" xml:lang="de">\n'


def wiki_page(title: str, text: str, ns: int = 0, extra: str = "") -> bytes:
    return (
        f"<page><title>{title}</title><ns>{ns}</ns><id>1</id>{extra}<revision><timestamp>2020-01-01T00:00:00Z"
        f"</timestamp><text>{text}</text></revision></page>\n"
    ).encode()


def test_a_dump_with_unknown_namespaces_and_a_page_without_text(tmp_path: Path) -> None:
    dump = (
        WIKI_HEAD
        + wiki_page("Berlin", "Berlin ist die [[Hauptstadt]] Deutschlands.")
        + wiki_page("Modul:Sonderbar", "x", ns=3000)
        + wiki_page("Leer", "")
        + wiki_page("Kaputt", "<b>unclosed")
        + wiki_page("Hamburg", "Hamburg ist eine Stadt.")
        + b"</mediawiki>"
    )  # fmt: skip
    bundle = make_bundle(
        tmp_path / "b", 'type = "mediawiki"\ndescription = "x"\n', {"d.xml.bz2": bz2.compress(dump)}
    )
    records = read_all(bundle)
    assert [r.document.title for r in records if r.document] == ["Berlin", "Hamburg"]
    assert all(r.document.language == "de" for r in records if r.document)
    counts = count(records)
    assert (
        counts["skipped.namespace"] == 1 and counts["skipped.empty"] == 1 and counts["skipped.corrupt"] == 1
    )
    (error,) = errors(records)
    assert (
        "not well-formed" in error.error and f"at byte {dump.find(b'<page><title>Kaputt'):,}" in error.error
    )


def test_a_truncated_bz2_dump(tmp_path: Path) -> None:
    words = [f"wort{n * 7919 % 10007}" for n in range(1000)]  # varied text: several bz2 blocks
    pages = b"".join(wiki_page(f"Seite {i}", " ".join(words[i:] + words[:i])) for i in range(40))
    data = bz2.compress(WIKI_HEAD + pages + b"</mediawiki>", compresslevel=1)  # 100 kB blocks
    cut = data[: len(data) * 2 // 3]
    bundle = make_bundle(tmp_path / "b", 'type = "mediawiki"\ndescription = "x"\n', {"d.xml.bz2": cut})
    batches = plan_batches(bundle, batch_size=10)
    assert all(b.seek_state["damaged"] for b in batches)  # indexed_bzip2 refuses the file: workers skip it
    records = [r for b in batches for r in read_batch(bundle, b)]
    titles = [r.document.title for r in records if r.document]
    assert len(titles) >= 20 and titles == [f"Seite {i}" for i in range(len(titles))]  # every complete block
    (damage,) = errors(records)
    assert damage.skipped == Skip.TRUNCATED and "d.xml.bz2 at byte" in damage.error


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ('description = "no type"\n', "missing field 'type'"),
        ('type = "warc"\n', "missing field 'description'"),
        (
            'type = "warc"\ndescription = "x"\nnamespaces = [0]\n',
            "unknown field 'namespaces' for type 'warc'",
        ),
        ('type = "warc"\ndescription = "x"\nbatchsize = 10\n', "unknown field 'batchsize'"),
        ('type = "tape"\ndescription = "x"\n', "field 'type' is 'tape'"),
        (
            'type = "sql"\ndescription = "x"\nquery = "select 1"\ntext_column = "t"\n',
            "missing field 'database_url_env'",
        ),
        (
            'type = "text"\ndescription = "x"\nstart = "(unclosed"\n',
            "field 'start' is not a regular expression",
        ),
        ('type = "warc"\ndescription = "x"\nbatch_size = 0\n', "batch_size"),
        ('type = "warc\n', "not valid TOML"),
    ],
)
def test_a_bad_bundle_toml_names_the_field_and_the_file(tmp_path: Path, toml: str, message: str) -> None:
    with pytest.raises(BundleError) as raised:
        make_bundle(tmp_path / "b", toml)
    assert message in str(raised.value) and str(tmp_path / "b" / "bundle.toml") in str(raised.value)


def test_a_folder_without_bundle_toml(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    from services.archives.bundle import load_bundle

    with pytest.raises(BundleError, match=r"bundle\.toml: cannot be read"):
        load_bundle(str(tmp_path / "b"))


def test_a_file_that_starts_damaged_still_registers_and_reads_on(tmp_path: Path) -> None:
    bad_first = gzip.compress(GOOD[0], mtime=0)[:25] + b"\x00" * 40  # a member that does not inflate
    bundle = make_bundle(tmp_path / "b", WARC_TOML, {"head.warc.gz": bad_first + gz(*GOOD[1:])})
    records = read_all(bundle)
    assert urls(records) == [f"http://good.test/{i}" for i in range(1, 4)]
    (error,) = errors(records)
    assert error.offset == 0 and "head.warc.gz at byte 0" in error.error
