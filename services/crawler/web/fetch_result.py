"""What one request produced (``FetchResult``), handed from ``fetch`` to the parser, the
visitor, robots.txt, sitemaps and the commit path; and how a failure is recorded on it
(``fail``: a retryable failure never leaves a partial body to be stored as the page).
"""

from __future__ import annotations

from dataclasses import dataclass

from services.crawler.web.fetch_errors import RETRYABLE_ERRORS, FetchError, is_retryable


@dataclass
class FetchResult:
    """What one request produced.

    ``error`` is ``None`` on success (any HTTP status) or the ``FetchError`` that ended
    it; after ``too_large``, ``body`` holds the first ``max_bytes`` bytes (nothing when HEAD
    or the Content-Length told), after ``wrong_type`` it was not read.
    ``final_url`` is always ``url``, since redirects are not followed here; it is
    kept for the parser, which resolves relative links against it.
    """

    url: str
    final_url: str
    status: int | None = None
    content_type: str = ""
    body: bytes = b""
    error: FetchError | None = None
    detail: str = ""
    redirect_to: str | None = None  # normalized absolute target of a 3xx
    retry_after: float | None = None  # seconds asked by Retry-After on 429/503
    charset: str | None = None  # charset declared by the Content-Type header
    head_status: int | None = None  # status of the HEAD pre-check, when one ran
    robots_tag: tuple[
        str, ...
    ] = ()  # the X-Robots-Tag header's values (text/robots_directives.py reads them)
    refresh: str = ""  # the Refresh header ("0; url=/new"), which browsers obey as a meta refresh

    @property
    def ok(self) -> bool:
        """A 2xx response whose body was read completely."""
        return self.error is None and self.status is not None and 200 <= self.status < 300

    @property
    def retryable(self) -> bool:
        """Worth another attempt later (5xx, 429, timeouts, network trouble): ``is_retryable``."""
        return is_retryable(self.status, self.error)


def fail(result: FetchResult, kind: FetchError, detail: str) -> None:
    """``result`` ended by ``kind``; a retryable failure drops what was read of the body."""
    result.error, result.detail = kind, detail
    if kind in RETRYABLE_ERRORS:
        result.body = b""  # a partial body must never be stored as the page
