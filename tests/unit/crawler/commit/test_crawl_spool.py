"""The write-ahead spool: results survive a kill until their commit, torn tails are ignored."""

from __future__ import annotations

from services.crawler.commit.results import UrlResult
from services.crawler.commit.spool import Spool, spool_dir


def _result(n: int) -> UrlResult:
    return UrlResult(f"{n:040x}", f"http://a.test/{n}", 1, state="done", status=200)


def test_recover_returns_what_a_killed_process_spooled(tmp_path):
    first = Spool(tmp_path)
    first.recover()
    first.append(_result(1))
    first.append(_result(2))
    # killed here: no close, no commit
    second = Spool(tmp_path)
    found = second.recover()
    assert sorted(r.url for r in found.values()) == ["http://a.test/1", "http://a.test/2"]
    assert found[_result(1).url_id].status == 200
    # They moved into the new process's own segment: a second kill keeps them.
    assert len(Spool(tmp_path).recover()) == 2


def test_segments_go_once_all_their_results_are_committed(tmp_path):
    spool = Spool(tmp_path)
    spool.recover()
    spool.append(_result(1))  # handed to the committer at the next flush
    spool.append(_result(2))  # its batch is still being fetched
    spool.rotate()
    spool.append(_result(3))
    spool.committed([_result(1).url_id])  # the flush committed 1 only
    assert len(list(tmp_path.glob("segment-*.spool"))) == 2  # 2 still waits in the first
    assert sorted(Spool(tmp_path).recover()) == sorted(
        [_result(1).url_id, _result(2).url_id, _result(3).url_id]
    )
    spool.committed([_result(2).url_id])
    assert len(list(tmp_path.glob("segment-*.spool"))) == 1  # only the current one is left


def test_a_torn_last_record_is_ignored(tmp_path):
    spool = Spool(tmp_path)
    spool.recover()
    spool.append(_result(1))
    spool.append(_result(2))
    spool.close()
    segment = next(tmp_path.glob("segment-*.spool"))
    segment.write_bytes(segment.read_bytes()[:-5])  # killed in the middle of a write
    assert list(Spool(tmp_path).recover()) == [_result(1).url_id]


def test_one_spool_per_crawler_identity(tmp_path):
    assert spool_dir(tmp_path, "host/0-31,40") != spool_dir(tmp_path, "host/all")
    assert spool_dir(tmp_path, "host/all").parent == tmp_path / "spool"


def test_a_parsed_page_comes_back_whole(tmp_path):
    """Links are pickled as plain lists (records.LinksPickledFlat) and the page as its bytes,
    parsed again on recovery: all fields return."""
    from collections import Counter

    from services.crawler.commit.results import FetchedDoc
    from services.crawler.web.fetch_result import FetchResult
    from services.crawler.web.parse import parse_document

    url = "http://a.test/page"
    body = (
        b"<html lang=de><title>T</title><body><p>Text \xc3\xa9</p>"
        b"<a href=/x>X</a> <a href='http://b.test/y'></a> <a href=/z>Zed</a></body></html>"
    )
    parsed = parse_document(FetchResult(url, url, 200, "text/html", body), url)
    result = UrlResult(
        "f" * 40,
        url,
        2,
        state="done",
        status=200,
        doc=FetchedDoc(url, body, parsed, 12.5, content_type="text/html"),
        links=parsed.links[1:],
        counters=Counter(pages=1, html=1),
    )
    spool = Spool(tmp_path)
    spool.recover()
    spool.append(result)
    back = Spool(tmp_path).recover()[result.url_id]
    assert back == result
    assert [link.url for link in back.links] == ["http://b.test/y", "http://a.test/z"]
    assert back.doc is not None and back.doc.parsed.links[0].anchor == "X"


def _fetched_page(url: str, body: bytes, content_type: str) -> UrlResult:
    from services.crawler.commit.results import FetchedDoc
    from services.crawler.web.fetch_result import FetchResult
    from services.crawler.web.parse import parse_document

    parsed = parse_document(FetchResult(url, url, 200, content_type, body), url)
    doc = FetchedDoc(url, body, parsed, 3.0, content_type=content_type)
    return UrlResult("e" * 40, url, 1, state="done", status=200, doc=doc, links=list(parsed.links))


def test_a_page_is_spooled_as_its_bytes_and_parsed_again_the_same(tmp_path):
    """The header's charset (no meta tag) and the canonical link come back: the parse is
    redone from the same bytes and Content-Type, not stored."""
    text = "Привет мир, это страница на русском языке о поисковых системах и индексах. " * 4
    body = (
        f"<html><head><title>Поиск</title><link rel=canonical href=/main></head>"
        f"<body><p>{text}</p><a href=/other>другая</a></body></html>"
    ).encode("cp1251")
    result = _fetched_page("http://a.test/page?ref=1", body, "text/html; charset=windows-1251")
    assert result.doc is not None
    assert result.doc.parsed.charset == "cp1251" and result.doc.parsed.lang == "ru"
    assert [link.url for link in result.doc.parsed.links][-1] == "http://a.test/main"  # canonical
    spool = Spool(tmp_path)
    spool.recover()
    spool.append(result)
    segment = next(tmp_path.glob("segment-*.spool")).read_bytes()
    assert "поисковых".encode() not in segment  # the text is not stored, only the bytes
    back = Spool(tmp_path).recover()[result.url_id]
    assert back == result


def test_a_page_that_no_longer_parses_is_fetched_again(tmp_path, caplog):
    """Recovery parses again; a body the parser now refuses is skipped with a warning (its
    URL is fetched again), and the other results of the segment still come back."""
    from services.crawler.commit.results import FetchedDoc
    from services.crawler.web.parse import ParsedDoc
    from services.storage.formats.blocks import ContentType

    broken = _result(7)
    broken.doc = FetchedDoc(broken.url, b"  ", ParsedDoc(ContentType.HTML), 1.0, content_type="text/html")
    spool = Spool(tmp_path)
    spool.recover()
    spool.append(_result(1))
    spool.append(broken)
    spool.append(_result(2))
    found = Spool(tmp_path).recover()
    assert sorted(found) == sorted([_result(1).url_id, _result(2).url_id])
    assert "unreadable record" in caplog.text and "empty body" in caplog.text


def test_a_parser_failure_on_recovery_does_not_stop_the_crawler(tmp_path, monkeypatch, caplog):
    """Whatever the parser raises when a spooled page is read back (a bug, say), the record
    is skipped: otherwise every restart would fail at the same segment."""
    from services.crawler.commit import results

    spool = Spool(tmp_path)
    spool.recover()
    page = _fetched_page("http://a.test/p", b"<title>T</title><p>words</p>", "text/html")
    spool.append(page)
    spool.append(_result(3))

    def broken(*_args, **_kwargs):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(results, "parse_document", broken)
    assert list(Spool(tmp_path).recover()) == [_result(3).url_id]
    assert "RecursionError" in caplog.text


def test_a_spool_written_by_the_release_before_still_reads_back():
    """Before 2026-11-26 a spooled page held its parse and no Content-Type: both still load
    (a crawler upgraded between a kill and its restart recovers its predecessor's spool)."""
    from services.crawler.commit.results import FetchedDoc
    from services.crawler.web.parse import ParsedDoc
    from services.storage.formats.blocks import ContentType

    parsed = ParsedDoc(ContentType.HTML, title="Old", text="kept as it was")
    old_state = {"url": "http://a.test/", "body": b"<p>x</p>", "parsed": parsed, "fetched_at": 1.0}
    old_state |= {"status": 200, "doc_id": "d" * 40}
    doc = FetchedDoc.__new__(FetchedDoc)
    doc.__setstate__(old_state)
    assert doc.parsed is parsed and doc.content_type == "" and doc.doc_id == "d" * 40
