"""Display copies of stored pages: decoded right, anchored to the original site, inert."""

from __future__ import annotations

from bs4 import BeautifulSoup

from services.search.display.cached_copy import display_html
from services.text.extract.charset import header_charset

URL = "http://old.example.jp/dir/page.html"


def _soup(html: str) -> BeautifulSoup:
    return BeautifulSoup(html, "html.parser")


def test_shift_jis_page_declared_in_meta_is_shown_as_utf8() -> None:
    body = "<html><head><meta charset=shift_jis><title>検索エンジン</title></head><p>日本語の本文</p>"
    html = display_html(body.encode("shift_jis"), URL)
    soup = _soup(html)
    assert soup.title is not None and soup.title.string == "検索エンジン"
    assert "日本語の本文" in html
    charsets = [m.get("charset") for m in soup.find_all("meta") if m.has_attr("charset")]
    assert charsets == ["utf-8"]  # the page's own shift_jis label is gone: it would lie now


def test_windows_1251_from_the_header_charset() -> None:
    body = "<p>Поисковая система</p>".encode("windows-1251")
    assert "Поисковая система" in display_html(body, URL, header_charset("text/html; charset=windows-1251"))


def test_base_points_at_the_original_and_replaces_the_pages_own() -> None:
    body = b"<html><head><base href='http://evil.test/'><link rel=stylesheet href=s.css></head></html>"
    soup = _soup(display_html(body, URL))
    bases = soup.find_all("base")
    assert [b["href"] for b in bases] == [URL]
    head = soup.find("head")
    assert head is not None and head.find("base") is bases[0]


def test_a_page_without_head_or_html_gets_a_head() -> None:
    soup = _soup(display_html(b"<p>Bare page with <img src='pic.png'></p>", URL))
    head = soup.find("head")
    assert head is not None and head.find("base")["href"] == URL
    assert soup.find("img")["src"] == "pic.png"  # left relative: <base> resolves it


def test_nothing_runs_or_navigates_away() -> None:
    body = (
        b"<html><head><meta http-equiv='refresh' content='0; url=http://spam.test/'>"
        b"<script src=track.js></script><script>document.write('x')</script></head>"
        b"<body onload='steal()'><a href='javascript:alert(1)' onclick='x()'>j</a>"
        b"<img src=a.png onerror='x()'><object data=f.swf></object>"
        b"<form action='javascript:x()'><button formaction='JavaScript:y()'>b</button></form></body></html>"
    )
    html = display_html(body, URL)
    soup = _soup(html)
    assert not soup.find_all(["script", "object"])
    assert not [m for m in soup.find_all("meta") if m.get("http-equiv")]
    for node in soup.find_all(True):
        assert not [a for a in node.attrs if a.lower().startswith("on")], node
        for attribute in ("href", "action", "formaction"):
            assert not str(node.get(attribute, "")).lower().startswith("javascript:")
    assert soup.find("a").get_text() == "j" and soup.find("img")["src"] == "a.png"


def test_broken_markup_still_gives_a_page() -> None:
    body = b"<html><title>Unclosed <b>bold <i>italic <p>para <table><tr><td>cell</html>\x00\xff"
    html = display_html(body, URL)
    assert "cell" in html and "para" in html and URL in html


def test_header_charset_reads_the_parameter() -> None:
    assert header_charset('text/html; charset="ISO-8859-1"') == "ISO-8859-1"
    assert header_charset("text/html") is None and header_charset("text/html; charset=") is None


def test_the_querys_words_are_marked_in_text_nodes_only() -> None:
    from services.search.page_views import highlight_terms

    body = (
        b"<html><head><title>dog</title><style>.dog{color:red}</style></head><body>"
        b'<p title="dog" class="dog">The dogs &lt;b&gt;dog&lt;/b&gt; <!-- dog --><a href="/dog">Dog</a></p>'
        b"<script>var dog=1</script><textarea>dog</textarea><svg><text>dog</text></svg></body></html>"
    )
    soup = _soup(display_html(body, URL, terms=highlight_terms("dog")))
    marks = soup.find_all("mark")
    assert [m.get_text() for m in marks] == ["dogs", "dog", "Dog"]
    p = soup.find("p")
    assert p is not None and p["title"] == "dog" and p["class"] == ["dog"]  # attributes untouched
    assert "&lt;b&gt;" in str(p)  # the page's text stays text
    assert soup.find("textarea").get_text() == "dog" and soup.find("title").get_text() == "dog"
    assert "dog -->" in str(soup)  # comments untouched


def test_no_query_no_marks_and_hostile_query_words_stay_text() -> None:
    from services.search.page_views import highlight_terms

    body = b"<p>an <b>onerror</b> script alert</p>"
    assert "<mark" not in display_html(body, URL, terms=highlight_terms(""))
    html = display_html(body, URL, terms=highlight_terms('"><img src=x onerror=alert(1)> script'))
    soup = _soup(html)
    assert soup.find("img") is None and [m.get_text() for m in soup.find_all("mark")] == [
        "onerror",
        "script",
        "alert",
    ]
