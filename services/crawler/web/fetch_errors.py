"""How a fetch can fail, and which failures are worth another attempt: the one retry rule.

``fetch`` names every failure with a ``FetchError``; the crawler counts it
(``fetch_error_<kind>``), stores it as the frontier row's ``last_error`` and
asks ``is_retryable`` whether the URL goes back to the frontier with a backoff
or is given up. robots.txt reads the same kinds (an unreachable robots.txt
disallows the host for a while), so the fetcher, robots.txt and the outcome
rules cannot disagree about what "the server may recover" means.
"""

from __future__ import annotations

from enum import StrEnum


class FetchError(StrEnum):
    """Why a request produced no usable answer. The value is what counters, logs and the
    frontier's ``last_error`` column hold, so a member formats as its value
    (``f"fetch_error_{FetchError.TIMEOUT}"`` is ``fetch_error_timeout``)."""

    TIMEOUT = "timeout"  # no complete response within the connect, read or total limit
    CONNECT = "connect"  # refused, reset, unreachable, or no DNS answer for now
    CLOSED = "closed"  # the connection ended before the body did (see RETRYABLE_ERRORS)
    DNS = "dns"  # the name does not exist (NXDOMAIN): a dead domain, which minutes do not revive
    TLS = "tls"  # a certificate or handshake refused (NIMBUS_VERIFY_TLS, or no TLS setting reaches it)
    HTTP = "http"  # protocol garbage, even to the lenient reader
    DECODE = "decode"  # a corrupt gzip/deflate body, or an encoding we cannot decode
    BAD_URL = "bad_url"  # a URL the HTTP client refuses
    BAD_REDIRECT = "bad_redirect"  # a 3xx without a usable Location, or redirecting to itself twice
    TOO_LARGE = "too_large"  # over the size cap (by Content-Length, or while reading)
    WRONG_TYPE = "wrong_type"  # a Content-Type we do not index: the body is not read


# Failures of the server or the path to it, which may recover: tried again after a backoff.
#
# A body that ends early (the connection cut mid-body, fewer bytes than its Content-Length, a
# compressed stream without its end marker) is CLOSED, not a kind of its own: from the client's
# side a server that stopped sending and a network that dropped the connection look the same,
# and both usually recover, so it is retried as a lost connection is (Heritrix retries
# S_CONNECT_LOST, Nutch retries a fetch that ended in an exception); its partial body is dropped,
# never stored as the page. A body cut at our own size cap is TOO_LARGE instead: asking again
# would cut it again. DNS is not here, since only a name that does not exist is DNS (a lookup
# that failed for now is CONNECT); TLS, HTTP and DECODE answer the same way the next time.
RETRYABLE_ERRORS: frozenset[FetchError] = frozenset(
    {FetchError.TIMEOUT, FetchError.CONNECT, FetchError.CLOSED}
)


def is_retryable(status: int | None, error: FetchError | None) -> bool:
    """Whether a fetch that ended with ``status`` and ``error`` is worth another attempt later.

    A failure is judged by its kind (``RETRYABLE_ERRORS``), whatever status came before it;
    an answer by its status: 5xx (the server is failing now) and 429 (it asks us to slow
    down, with a Retry-After the backoff honours) may recover, every other status is the
    server's considered answer.
    """
    if error is not None:
        return error in RETRYABLE_ERRORS
    return status is not None and (status == 429 or status >= 500)
