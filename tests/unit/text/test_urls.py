"""URL normalization, identity and crawl scope."""

from __future__ import annotations

import pytest

from services.text.urls import (
    BadUrlError,
    bare_host,
    browser_href,
    header_href,
    host_key,
    in_scope,
    normalize_url,
    shown_url,
    trap_path,
    url_id,
)
from tests.hostile_urls import GOOD_URLS, HOSTILE_URLS


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("HTTP://Example.COM:80/a/./b/../c?b=2&a=1#frag", "http://example.com/a/c?b=2&a=1"),
        ("https://x.org:443", "https://x.org/"),
        ("http://127.0.0.1:8123/x?utm_source=q&id=3&fbclid=z", "http://127.0.0.1:8123/x?id=3"),
        ("http://x.org/%7euser/a b", "http://x.org/~user/a%20b"),
        ("http://Example.com./", "http://example.com/"),
    ],
)
def test_normalize(raw, expected):
    assert normalize_url(raw) == expected


@pytest.mark.parametrize("bad", ["ftp://x.org/", "mailto:a@b", "/relative", "http://", "http://x:99999/"])
def test_uncrawlable_urls_rejected(bad):
    with pytest.raises(BadUrlError):
        normalize_url(bad)


def test_overlong_url_rejected():
    with pytest.raises(BadUrlError, match="longer than"):
        normalize_url("http://x.org/" + "a" * 3000)


def test_same_page_same_id():
    assert url_id(normalize_url("http://X.org:80/a#f")) == url_id(normalize_url("http://x.org/a"))
    assert host_key("http://x.org:8080/a/b") == "http://x.org:8080"


def test_scope_admits_listed_hosts_and_subdomains():
    scope = frozenset({"127.0.0.1", "example.org"})
    assert in_scope("http://127.0.0.1:9000/x", scope)
    assert in_scope("http://www.example.org/", scope)
    assert not in_scope("http://www.icann.org/", scope)
    assert not in_scope("http://badexample.org/", scope)
    assert in_scope("http://anything.test/", frozenset())


# RFC 3986 section 6.2.2 (case, percent-encoding, dot segments) and 5.4 (dot segments in
# resolved paths), plus what servers must receive unchanged (the failures seen on real sites).
@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("HTTP://www.Example.com/", "http://www.example.com/"),  # 6.2.2.1
        ("http://example.com/%7Efoo", "http://example.com/~foo"),  # 6.2.2.2
        ("http://example.com/%7efoo%2fbar%3a", "http://example.com/~foo%2Fbar%3A"),
        ("http://example.com/a/./b/../c", "http://example.com/a/c"),  # 6.2.2.3
        ("http://a/b/c/./../../g", "http://a/g"),  # 5.4.2
        ("http://a/b/c/g;x=1/../y", "http://a/b/c/y"),
        ("http://a/../../g", "http://a/g"),
        ("http://a/b/c/d;p?q=1#s", "http://a/b/c/d;p?q=1"),
        ("http://x.org/search?q=a%20b", "http://x.org/search?q=a%20b"),  # not "+"
        ("http://x.org/search?q=a+b", "http://x.org/search?q=a+b"),  # not "%2B"
        ("http://x.org/p?path=/a/b&x=1", "http://x.org/p?path=/a/b&x=1"),  # "/" stays "/"
        ("http://x.org/p;jsessionid=ab?x=1;y=2", "http://x.org/p;jsessionid=ab?x=1;y=2"),  # ";" stays
        ("http://x.org/a b/ü?q=é", "http://x.org/a%20b/%C3%BC?q=%C3%A9"),  # as browsers send them
        ("http://x.org/100%/x", "http://x.org/100%25/x"),  # a stray "%" is encoded
        ("http://x.org/?z=1&utm_medium=x&a=2", "http://x.org/?z=1&a=2"),  # order kept, tracking gone
        ("http://x.org/?utm_source=feed", "http://x.org/"),
        ("http://x.org/a?", "http://x.org/a"),
        ("http://Bücher.example/", "http://xn--bcher-kva.example/"),
        ("http://[::1]:8080/x", "http://[::1]:8080/x"),
    ],
)
def test_rfc3986_normalization_keeps_what_the_server_receives(raw, expected):
    assert normalize_url(raw) == expected
    assert normalize_url(expected) == expected  # idempotent


# Apache Nutch's BasicURLNormalizer cases (NUTCH-1098, percent-encoding; and its port,
# fragment and dot-segment cases): another crawler's canonicalization suite.
@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("http://foo.com/%66oo.html", "http://foo.com/foo.html"),
        ("http://foo.com/%66oo.htm%6c", "http://foo.com/foo.html"),  # at the end of the URL
        ("http://foo.com/%66oo.ht%6d%6c", "http://foo.com/foo.html"),  # adjacent escapes
        ("http://foo.com/%66oo.htm%C0", "http://foo.com/foo.htm%C0"),  # high-bit bytes stay encoded
        ("http://foo.com/%66oo.htm%1A", "http://foo.com/foo.htm%1A"),  # control bytes stay encoded
        ("http://foo.com/%66oo.htm%c0", "http://foo.com/foo.htm%C0"),  # escapes in upper case
        ("http://foo.com:80/index.html", "http://foo.com/index.html"),
        ("https://foo.com:443/", "https://foo.com/"),
        ("http://foo.com:8080", "http://foo.com:8080/"),
        ("http://foo.com/foo.html#ref", "http://foo.com/foo.html"),
        ("http://foo.com/aa/./foo.html", "http://foo.com/aa/foo.html"),
        ("http://foo.com/aa/bb/../../foo.html", "http://foo.com/foo.html"),
        ("HTTP://FOO.COM/Foo.html", "http://foo.com/Foo.html"),  # the path keeps its case
    ],
)
def test_nutch_basic_url_normalizer_cases(raw, expected):
    assert normalize_url(raw) == expected


JSID = "0A1B2C3D4E5F60718293A4B5C6D7E8F9"  # Tomcat: 32 hex digits
PHPSID = "k3v9r1q0b7m2c5n8t6p4s1d2f3"  # PHP: 26 characters of [a-v0-9]


# Session identifiers: the pages a cookieless server serves with a new session in every link.
@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (f"http://x.org/shop/item.jsp;jsessionid={JSID}?id=3", "http://x.org/shop/item.jsp?id=3"),
        (f"http://x.org/a;JSESSIONID={JSID}.node01", "http://x.org/a"),  # with its route suffix
        (f"http://x.org/a;jsessionid={JSID}", "http://x.org/a"),
        (f"http://x.org/index.php?PHPSESSID={PHPSID}&page=2", "http://x.org/index.php?page=2"),
        (f"http://x.org/index.php?page=2&phpsessid={PHPSID}", "http://x.org/index.php?page=2"),
        (f"http://x.org/p.php?cat=1&osCsid={JSID}&x=2", "http://x.org/p.php?cat=1&x=2"),  # osCommerce
        (f"http://x.org/forum/viewtopic.php?t=9&sid={JSID.lower()}", "http://x.org/forum/viewtopic.php?t=9"),
        ("http://x.org/a.asp?ASPSESSIONIDQARDSBTC=GKLMNOPQRSTUVWXYZABCDEFG&y=1", "http://x.org/a.asp?y=1"),
        ("http://x.org/a.cfm?id=4&CFID=1234567&CFTOKEN=87654321", "http://x.org/a.cfm?id=4"),
        (f"http://x.org/?jsessionid={JSID}", "http://x.org/"),
    ],
)
def test_session_identifiers_are_removed(raw, expected):
    assert normalize_url(raw) == expected
    assert normalize_url(expected) == expected


@pytest.mark.parametrize(
    "kept",
    [
        "http://x.org/station?sid=3",  # a short value names a thing, not a session
        "http://x.org/p;jsessionid=ab?x=1",
        "http://x.org/a.cfm?cfid=12",  # CFID without CFTOKEN: not ColdFusion's pair
        "http://x.org/s?session=0A1B2C3D4E5F60718293A4B5C6D7E8F9",  # not a session parameter's name
        "http://x.org/s?sid=not+a+token+at+all+but+words",
    ],
)
def test_parameters_that_only_look_like_sessions_are_kept(kept):
    assert normalize_url(kept) == kept


@pytest.mark.parametrize(
    ("href", "expected"),
    [
        ("  page.html\t", "page.html"),  # spaces and controls around it
        ("\x00\x1f/a", "/a"),
        ("long/path/\n   to/page.html", "long/path/   to/page.html"),  # a wrapped attribute
        ("a\tb\rc", "abc"),
        ("..\\docs\\page.htm", "../docs/page.htm"),  # IIS-era paths
        ("http:\\\\host.test\\x", "http://host.test/x"),
        ("\\x?q=a\\b#f\\g", "/x?q=a\\b#f\\g"),  # only before the query: a query keeps its bytes
        ("/x#frag\\y", "/x#frag\\y"),
        ("", ""),
    ],
)
def test_browser_href_reads_a_link_as_browsers_do(href: str, expected: str) -> None:
    assert browser_href(href) == expected


def test_a_backslashed_link_normalizes_to_the_browsers_url() -> None:
    from urllib.parse import urljoin

    url = normalize_url(urljoin("http://old.test/a/b/index.htm", browser_href("..\\c\\d.htm")))
    assert url == "http://old.test/a/c/d.htm"


@pytest.mark.parametrize(
    "url",
    [
        "http://x.org/docs/docs/docs/index.html",  # a relative "docs/" followed three times
        "http://x.org/a/b/a/b/a/b/",  # a pair of segments looping
        "http://x.org/en/page/en/other/en/x.html",  # Nutch's shape: the segment every other level
        "http://x.org/" + "/".join(f"s{i}" for i in range(21)),  # deeper than Heritrix allows
    ],
)
def test_trap_shaped_paths(url):
    assert trap_path(url)


@pytest.mark.parametrize(
    "url",
    [
        "http://x.org/",
        "http://x.org/2020/01/01/new-year.html",  # a segment twice is a date, not a loop
        "http://x.org/a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q/r/s/t",  # 20 segments: still a page
        "http://x.org/search?q=/a/a/a/a",  # the query is not the path
        "http://x.org/a//b//c//d",  # empty segments are not a repeated name
    ],
)
def test_ordinary_paths_are_no_trap(url):
    assert not trap_path(url)


def test_a_location_header_keeps_the_bytes_the_server_sent():
    # aiohttp reads header bytes as UTF-8 with surrogateescape: Latin-1 "é" arrives as \udce9.
    latin1 = b"/caf\xe9 menu.html".decode("utf-8", "surrogateescape")
    assert header_href(latin1) == "/caf%E9 menu.html"
    assert normalize_url("http://x.org" + header_href(latin1)) == "http://x.org/caf%E9%20menu.html"
    assert header_href("/café.html") == "/café.html"  # valid UTF-8 is left to normalize_url
    assert header_href(" \\docs\\a.htm ") == "/docs/a.htm"  # browser_href's rules too


@pytest.mark.parametrize(
    ("given", "host"),
    [
        ("Example.COM", "example.com"),
        ("http://www.example.com:8080/a/b?c", "www.example.com"),
        ("bücher.example.", "xn--bcher-kva.example"),
        (" 127.0.0.1 ", "127.0.0.1"),
    ],
)
def test_the_host_an_operator_means(given, host):
    assert bare_host(given) == host


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "not a host",
        "http://",
        "exa_mple.com",
        "-x.org",
        "a" * 300,
        "xn--",
        "http://[::1/",
        "xn--zz-zz.org",
    ],
)
def test_what_names_no_host_is_refused(bad):
    with pytest.raises(BadUrlError, match="host name"):
        bare_host(bad)


@pytest.mark.parametrize(("url", "why"), HOSTILE_URLS, ids=[repr(u)[:40] for u, _ in HOSTILE_URLS])
def test_every_hostile_url_is_refused_with_a_message_naming_it(url: str, why: str) -> None:
    """One typed error for every way a URL can be bad (a ValueError from urlsplit or the IDNA
    codec escaped as a 500 and as tracebacks), its message naming the URL and the problem."""
    with pytest.raises(BadUrlError) as refused:
        normalize_url(url)
    message = str(refused.value)
    assert why in message
    assert shown_url(url) in message or "longer than" in message
    assert len(message) < 300  # an overlong URL is not repeated whole


@pytest.mark.parametrize(("url", "expected"), GOOD_URLS)
def test_urls_that_only_look_hostile_are_kept(url: str, expected: str) -> None:
    assert normalize_url(url) == expected


def test_the_fast_path_checks_what_the_slow_path_checks() -> None:
    """Hosts the already-normal shortcut would have passed whole."""
    for url in ("http://1.2.3.999/", "http://xn--zz-zz.org/", f"http://{'a' * 64}.org/"):
        with pytest.raises(BadUrlError, match="host"):
            normalize_url(url)
    assert normalize_url("http://10.0.0.1:8080/a") == "http://10.0.0.1:8080/a"
    assert normalize_url("http://server1/") == "http://server1/"
