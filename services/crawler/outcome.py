"""What a fetch means for the frontier: pure decisions, no I/O.

Redirects become their own frontier entries (the hop count travels with
them, so a chain ends at ``max_redirects``; a loop ends sooner, because a URL
is only ever added once). A permanent one (301, 308) also makes the URL an
alias of its target (``url_aliases``, as an archive's redirects), so the index
build counts links to the old URL for the page it moved to; a temporary one
(302, 303, 307: a login wall, a load balancer) says nothing lasting.

Retryable failures (5xx, 429, timeouts, refused or cut connections) go back to
``new`` with an exponential backoff that honours Retry-After, until
``max_attempts``; then the URL is given up.
"""

from __future__ import annotations

from services.config import Settings
from services.crawler.commit.results import UrlResult
from services.crawler.frontier.entries import NewUrl, UrlState
from services.crawler.frontier.leases import LeasedUrl
from services.crawler.web.fetch_errors import FetchError
from services.crawler.web.fetch_result import FetchResult

# Fetches that answered but are not taken, by our own policy: counted under their own name and
# never retried (asking again gets the same answer).
_REFUSED = frozenset({FetchError.TOO_LARGE, FetchError.WRONG_TYPE, FetchError.BAD_REDIRECT})
PERMANENT_REDIRECTS = frozenset({301, 308})  # RFC 9110 15.4: the target is the URL's new name


def redirect_hop(result: UrlResult, entry: LeasedUrl, target: str, settings: Settings, *, via: str) -> None:
    """Queue ``target`` as the next hop of ``entry``'s redirect chain, or end the chain once
    it would pass ``max_redirects`` hops.

    The hop count travels with the new frontier entry, so however a chain redirects (a 3xx,
    a ``<meta http-equiv=refresh>``, a Refresh header, in any mix) it ends at one limit.
    ``via`` names the kind of hop in the URL's error text (``redirect to ...``).
    """
    if entry.hops + 1 > settings.crawl.max_redirects:
        result.error = f"redirect chain longer than {settings.crawl.max_redirects} hops"
        result.counters["redirect_limit"] += 1
        return
    result.error = f"{via} to {target}"
    result.found.append(NewUrl(target, entry.depth, entry.priority, entry.url_id, hops=entry.hops + 1))


def backoff(settings: Settings, attempts: int, retry_after: float | None, jitter: float) -> float:
    """Seconds before the next attempt: ``retry_backoff * 2**attempts`` (+ up to 25 % jitter),
    or the server's Retry-After when that is longer."""
    wait = settings.crawl.retry_backoff * 2**attempts * (1.0 + 0.25 * jitter)
    return max(wait, retry_after or 0.0)


def schedule_retry(
    result: UrlResult,
    entry: LeasedUrl,
    settings: Settings,
    *,
    now: float,
    reason: str,
    retry_after: float | None,
    jitter: float,
) -> None:
    """Put the URL back with a backoff, or give it up after ``max_attempts`` fetches."""
    attempts = entry.attempts + 1
    if attempts >= settings.crawl.max_attempts:
        result.state, result.error = UrlState.FAILED, f"gave up after {attempts} attempts: {reason}"
        result.counters["gave_up"] += 1
        return
    result.state, result.error = UrlState.NEW, reason
    result.retry_at = now + backoff(settings, entry.attempts, retry_after, jitter)
    result.counters["retry"] += 1


def judge_fetch(
    result: UrlResult,
    entry: LeasedUrl,
    fetched: FetchResult,
    settings: Settings,
    *,
    now: float,
    jitter: float,
) -> bool:
    """Record what ``fetched`` means in ``result``; True when its body should be parsed."""
    counters = result.counters
    result.status = fetched.status
    if fetched.status is not None:
        counters[f"status_{fetched.status}"] += 1
    if fetched.redirect_to:
        counters["redirect"] += 1
        if fetched.status in PERMANENT_REDIRECTS:
            result.alias_of = fetched.redirect_to
        redirect_hop(result, entry, fetched.redirect_to, settings, via="redirect")
        return False
    if fetched.error in _REFUSED:
        result.error = fetched.error.value
        counters[fetched.error.value] += 1
        return False
    retry_after = fetched.retry_after
    if fetched.error is not None:
        counters["fetch_error"] += 1
        counters[f"fetch_error_{fetched.error}"] += 1
        reason = f"{fetched.error}: {fetched.detail}"
        if fetched.retryable:
            schedule_retry(
                result, entry, settings, now=now, reason=reason, retry_after=retry_after, jitter=jitter
            )
        else:
            result.state, result.error = UrlState.FAILED, reason
        return False
    if not fetched.ok:
        result.error = f"http {fetched.status}"
        if fetched.retryable:
            schedule_retry(
                result, entry, settings, now=now, reason=result.error, retry_after=retry_after, jitter=jitter
            )
        return False
    return True
