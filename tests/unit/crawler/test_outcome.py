"""What a fetch means for the frontier (outcome.judge_fetch), case by case: one table row per
kind of answer, with the state, error text, counters, retry time and found URLs it must give."""

from __future__ import annotations

from typing import Any

import pytest

from services.config import Settings
from services.crawler.commit.results import UrlResult
from services.crawler.frontier.entries import NewUrl, UrlState
from services.crawler.frontier.leases import LeasedUrl
from services.crawler.frontier.ledger import BatchState
from services.crawler.outcome import backoff, judge_fetch
from services.crawler.web.fetch_errors import RETRYABLE_ERRORS, FetchError, is_retryable
from services.crawler.web.fetch_result import FetchResult

URL = "http://a.test/page"
TARGET = "http://a.test/moved"
NOW = 1000.0
JITTER = 0.5  # backoff: retry_backoff * 2**attempts * (1 + 0.25 * JITTER)
SETTINGS = Settings.of(retry_backoff=2.0, max_attempts=3, max_redirects=5)
HOP = NewUrl(TARGET, 2, 3.0, "uid", hops=1)


def case(
    fetched: dict[str, Any],
    state: UrlState,
    error: str | None,
    counters: dict[str, int],
    retry_at: float | None = None,
    found: list[NewUrl] | None = None,
    *,
    parse: bool = False,
    attempts: int = 0,
    hops: int = 0,
    name: str,
) -> Any:
    return pytest.param(
        fetched, attempts, hops, parse, state, error, counters, retry_at, found or [], id=name
    )


CASES = [
    case({"status": 200}, UrlState.DONE, None, {"status_200": 1}, parse=True, name="200"),
    case({"status": 204}, UrlState.DONE, None, {"status_204": 1}, parse=True, name="204"),
    case({"status": 404}, UrlState.DONE, "http 404", {"status_404": 1}, name="404"),
    case({"status": 410}, UrlState.DONE, "http 410", {"status_410": 1}, name="410"),
    case({"status": 304}, UrlState.DONE, "http 304", {"status_304": 1}, name="304-no-location"),
    # Redirects: the target is the next hop, with the hop count; the chain ends at max_redirects.
    case({"status": 301, "redirect_to": TARGET}, UrlState.DONE, f"redirect to {TARGET}",
         {"status_301": 1, "redirect": 1}, found=[HOP], name="301"),
    case({"status": 302, "redirect_to": TARGET}, UrlState.DONE, f"redirect to {TARGET}",
         {"status_302": 1, "redirect": 1}, found=[NewUrl(TARGET, 2, 3.0, "uid", hops=5)], hops=4,
         name="302-last-hop"),
    case({"status": 301, "redirect_to": TARGET}, UrlState.DONE, "redirect chain longer than 5 hops",
         {"status_301": 1, "redirect": 1, "redirect_limit": 1}, hops=5, name="301-over-the-limit"),
    # Answers our own policy refuses: counted under their kind, never retried.
    case({"status": 301, "error": FetchError.BAD_REDIRECT}, UrlState.DONE, "bad_redirect",
         {"status_301": 1, "bad_redirect": 1}, name="bad-redirect"),
    case({"status": 200, "error": FetchError.TOO_LARGE}, UrlState.DONE, "too_large",
         {"status_200": 1, "too_large": 1}, name="too-large"),
    case({"status": 200, "error": FetchError.WRONG_TYPE}, UrlState.DONE, "wrong_type",
         {"status_200": 1, "wrong_type": 1}, name="wrong-type"),
    # Server trouble: back to new after a backoff (or the server's longer Retry-After).
    case({"status": 503}, UrlState.NEW, "http 503", {"status_503": 1, "retry": 1}, NOW + 2.25, name="503"),
    case({"status": 500}, UrlState.NEW, "http 500", {"status_500": 1, "retry": 1}, NOW + 4.5,
         attempts=1, name="500-second-attempt"),
    case({"status": 429, "retry_after": 120.0}, UrlState.NEW, "http 429", {"status_429": 1, "retry": 1},
         NOW + 120.0, name="429-retry-after"),
    case({"status": 503, "retry_after": 1.0}, UrlState.NEW, "http 503", {"status_503": 1, "retry": 1},
         NOW + 2.25, name="503-short-retry-after"),
    case({"status": 502}, UrlState.FAILED, "gave up after 3 attempts: http 502",
         {"status_502": 1, "gave_up": 1}, attempts=2, name="502-last-attempt"),
    # Network failures: the retryable kinds come back, the others fail at once.
    case({"error": FetchError.TIMEOUT, "detail": "slow"}, UrlState.NEW, "timeout: slow",
         {"fetch_error": 1, "fetch_error_timeout": 1, "retry": 1}, NOW + 2.25, name="timeout"),
    case({"error": FetchError.CONNECT, "detail": "refused"}, UrlState.NEW, "connect: refused",
         {"fetch_error": 1, "fetch_error_connect": 1, "retry": 1}, NOW + 2.25, name="connect"),
    case({"status": 200, "error": FetchError.CLOSED, "detail": "cut"}, UrlState.NEW, "closed: cut",
         {"status_200": 1, "fetch_error": 1, "fetch_error_closed": 1, "retry": 1}, NOW + 2.25,
         name="body-cut-short"),
    case({"error": FetchError.CONNECT, "detail": "refused"}, UrlState.FAILED,
         "gave up after 3 attempts: connect: refused",
         {"fetch_error": 1, "fetch_error_connect": 1, "gave_up": 1}, attempts=2, name="connect-last-attempt"),
    case({"error": FetchError.DNS, "detail": "no such name"}, UrlState.FAILED, "dns: no such name",
         {"fetch_error": 1, "fetch_error_dns": 1}, name="dns"),
    case({"error": FetchError.TLS, "detail": "bad cert"}, UrlState.FAILED, "tls: bad cert",
         {"fetch_error": 1, "fetch_error_tls": 1}, name="tls"),
    case({"status": 200, "error": FetchError.DECODE, "detail": "bad gzip"}, UrlState.FAILED,
         "decode: bad gzip", {"status_200": 1, "fetch_error": 1, "fetch_error_decode": 1}, name="decode"),
    case({"error": FetchError.HTTP, "detail": "garbage"}, UrlState.FAILED, "http: garbage",
         {"fetch_error": 1, "fetch_error_http": 1}, name="protocol-garbage"),
    case({"error": FetchError.BAD_URL, "detail": "no"}, UrlState.FAILED, "bad_url: no",
         {"fetch_error": 1, "fetch_error_bad_url": 1}, name="bad-url"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("fetched", "attempts", "hops", "parse", "state", "error", "counters", "retry_at", "found"), CASES
)
def test_judge_fetch(
    fetched: dict[str, Any],
    attempts: int,
    hops: int,
    parse: bool,
    state: UrlState,
    error: str | None,
    counters: dict[str, int],
    retry_at: float | None,
    found: list[NewUrl],
) -> None:
    entry = LeasedUrl("uid", URL, "http://a.test", 2, priority=3.0, attempts=attempts, hops=hops)
    result = UrlResult(entry.url_id, entry.url, entry.depth, state=UrlState.DONE)
    answer = FetchResult(URL, URL, **fetched)

    assert judge_fetch(result, entry, answer, SETTINGS, now=NOW, jitter=JITTER) is parse
    assert (result.state, result.error, result.retry_at) == (state, error, retry_at)
    assert result.status == answer.status
    assert dict(result.counters) == counters
    assert result.found == found
    # Stored and counted as plain strings (the enums' values), never as enum members.
    assert result.error is None or type(result.error) is str
    assert all(type(name) is str for name in result.counters)


@pytest.mark.parametrize(("status", "alias"), [(301, TARGET), (308, TARGET), (302, ""), (303, ""), (307, "")])
def test_a_permanent_redirect_makes_the_url_an_alias_of_its_target(status: int, alias: str) -> None:
    """301 and 308 say the page moved for good: links to the old URL count for the target
    (``url_aliases``, as an archive's redirects); 302, 303 and 307 say nothing lasting."""
    entry = LeasedUrl("uid", URL, "http://a.test", 2, priority=3.0)
    result = UrlResult(entry.url_id, entry.url, entry.depth, state=UrlState.DONE)
    judge_fetch(result, entry, FetchResult(URL, URL, status, redirect_to=TARGET), SETTINGS, now=NOW, jitter=0)
    assert result.alias_of == alias and result.found == [HOP]


def test_the_retry_rule_is_the_retryable_kinds_else_5xx_and_429() -> None:
    assert set(RETRYABLE_ERRORS) == {FetchError.TIMEOUT, FetchError.CONNECT, FetchError.CLOSED}
    assert [s for s in (200, 301, 404, 408, 429, 499, 500, 501, 503, 599) if is_retryable(s, None)] == [
        429, 500, 501, 503, 599,
    ]  # fmt: skip
    assert not is_retryable(None, None)  # no answer and no error: nothing to retry
    assert not is_retryable(503, FetchError.DECODE)  # judged by its kind, whatever came before
    assert is_retryable(200, FetchError.CLOSED)
    assert (
        FetchResult(URL, URL, 503).retryable
        and not FetchResult(URL, URL, 503, error=FetchError.TLS).retryable
    )


def test_counter_names_and_stored_text_are_the_kinds_values() -> None:
    assert f"fetch_error_{FetchError.TOO_LARGE}" == "fetch_error_too_large"
    assert str(FetchError.BAD_REDIRECT) == "bad_redirect" and f"{UrlState.FAILED}" == "failed"
    assert {k.value for k in FetchError} == {
        "timeout", "connect", "closed", "dns", "tls", "http", "decode", "bad_url", "bad_redirect",
        "too_large", "wrong_type",
    }  # fmt: skip
    assert [s.value for s in UrlState] == ["new", "leased", "done", "failed"]
    assert [s.value for s in BatchState] == ["leased", "acked", "committed"]


def test_backoff_grows_exponentially_and_honours_retry_after() -> None:
    settings = Settings.of(retry_backoff=2.0)
    assert [backoff(settings, n, None, 0.0) for n in range(3)] == [2.0, 4.0, 8.0]
    assert backoff(settings, 0, None, 1.0) == 2.5  # at most 25 % jitter
    assert backoff(settings, 0, 120.0, 0.5) == 120.0
