"""The dead-prefix tally that sends the crawl budget to live pages first."""

from __future__ import annotations

import pytest

from services.crawler.frontier.dead_prefixes import MIN_DEAD, UNREACHABLE, LinkYield, is_dead, prefixes
from services.crawler.web.fetch_errors import FetchError


def test_prefixes_are_directory_first_segment_and_host() -> None:
    assert prefixes("http://a.example:8080/old/2004/x.html?id=3") == (
        "http://a.example:8080/old/2004/",
        "http://a.example:8080/old/",
        "http://a.example:8080",
    )
    assert prefixes("http://a.example/x.html") == (
        "http://a.example/",
        "http://a.example/",
        "http://a.example",
    )
    # a slash inside the query is not a directory
    assert prefixes("http://a.example/cgi-bin/show?p=a/b/c")[0] == "http://a.example/cgi-bin/"
    assert prefixes("http://a.example") == ("http://a.example/", "http://a.example/", "http://a.example")


@pytest.mark.parametrize(
    ("status", "error", "dead"),
    [
        (200, None, False),
        (301, None, False),
        (404, None, True),
        (410, None, True),
        (400, None, True),
        (403, None, True),
        (429, None, None),
        (503, None, None),
        (None, "connect", True),
        (None, "dns", True),
        (None, "timeout", None),
    ],
)
def test_what_counts_as_dead(status: int | None, error: str | None, dead: bool | None) -> None:
    assert is_dead(status, error) is dead


def test_the_unreachable_kinds_are_the_fetchers_connect_and_dns() -> None:
    """The frontier names them by value (it does not import the web): a renamed kind fails here."""
    assert {FetchError.CONNECT, FetchError.DNS} == UNREACHABLE
    assert is_dead(None, FetchError.CONNECT) is True and is_dead(None, FetchError.TIMEOUT) is None


def test_a_mostly_dead_prefix_caps_priority_and_a_live_one_does_not() -> None:
    y = LinkYield()
    for k in range(MIN_DEAD):
        y.record(f"http://h/old/{k}.html", True)
    for k in range(5):
        y.record(f"http://h/docs/{k}.html", False)
    cap = y.cap("http://h/old/new.html")
    assert cap is not None and cap < -1.0  # below every link a page found (hub >= 0) and sitemaps (-1)
    assert y.cap("http://h/old/2004/deeper.html") == cap  # new directory: its first segment decides
    assert y.cap("http://h/docs/other.html") is None
    assert y.cap("http://h/fresh/page.html") is None  # host as a whole: 3 dead, 5 live
    assert y.limit("http://h/old/x.html", 5.0) == cap
    assert y.limit("http://h/old/x.html", cap - 1) == cap - 1  # already lower: kept
    assert y.limit("http://h/docs/x.html", 5.0) == 5.0


def test_more_evidence_lowers_the_cap_and_a_specific_live_directory_wins() -> None:
    y = LinkYield()
    for k in range(4):
        y.record(f"http://h/old/{k}.html", True)
    first = y.cap("http://h/old/z.html")
    for k in range(20):
        y.record(f"http://h/old/{k}b.html", True)
    assert first is not None and y.cap("http://h/old/z.html") < first
    for k in range(3):
        y.record(f"http://h/old/kept/{k}.html", False)
    assert y.cap("http://h/old/kept/next.html") is None  # its own directory answered


def test_unknown_answers_and_few_answers_say_nothing() -> None:
    y = LinkYield()
    y.record("http://h/x/1", None)
    y.record("http://h/x/2", True)
    y.record("http://h/x/3", True)
    assert y.cap("http://h/x/4") is None  # two dead answers are not yet a pattern


def test_forget_keeps_only_the_named_hosts() -> None:
    y = LinkYield()
    for k in range(3):
        y.record(f"http://a/old/{k}", True)
        y.record(f"http://b/old/{k}", True)
    y.forget({"http://a"})
    assert y.cap("http://a/old/9") is not None and y.cap("http://b/old/9") is None
