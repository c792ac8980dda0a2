"""URL normalization, identity and crawl scope."""

from __future__ import annotations

import pytest

from services.text.urls import BadUrlError, host_key, in_scope, normalize_url, url_id


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("HTTP://Example.COM:80/a/./b/../c?b=2&a=1#frag", "http://example.com/a/c?a=1&b=2"),
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
