"""Why a crawl fetched nothing, in words: read back from the frontier after the run.

"crawled 0 pages" alone sends a new user guessing; each seed's row says what
happened to it (robots.txt unreachable, disallowed, out of scope, not due yet,
a network error after retries).
"""

from __future__ import annotations

import time
from urllib.parse import urlsplit

from sqlalchemy import select

from services.config import Settings
from services.crawler.frontier.entries import UrlState
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.models import FrontierEntry
from services.storage.sql.schema import init_db
from services.text.urls import normalize_url, url_id

_ERRORS = {
    "robots_unavailable": (
        "its host's robots.txt could not be fetched (no answer, or a server error), which crawlers "
        "read as 'disallow all'; the host is tried again after 10 minutes"
    ),
    "robots_denied": "the host's robots.txt disallows it for our User-Agent",
    "host_page_cap": "its host already reached NIMBUS_MAX_PAGES_PER_HOST",
    "wrong_type": "it is neither HTML nor PDF",
}


def why_nothing(settings: Settings, seeds: list[str], *, now: float | None = None) -> list[str]:
    """One line per seed that produced no page, saying why."""
    moment = time.time() if now is None else now
    engine = make_engine(settings.database_url)
    try:
        init_db(engine)
        with session_factory(engine)() as session:
            lines = []
            for seed in seeds:
                url = normalize_url(seed)
                if (
                    settings.crawl.allowed_host_set
                    and (urlsplit(url).hostname or "") not in settings.crawl.allowed_host_set
                ):
                    lines.append(f"{seed}: outside NIMBUS_ALLOWED_HOSTS ({settings.crawl.allowed_hosts})")
                    continue
                row = session.scalars(
                    select(FrontierEntry).where(FrontierEntry.url_id == url_id(url))
                ).first()
                lines.append(f"{seed}: {_reason(row, moment)}")
            return lines
    finally:
        engine.dispose()


def _reason(row: FrontierEntry | None, now: float) -> str:
    if row is None:
        return "not in the frontier (an invalid or excluded URL)"
    if row.state == UrlState.DONE:
        due = time.strftime("%Y-%m-%d %H:%M", time.localtime(row.available_at))
        return f"already crawled; its recrawl is due {due}"
    error = row.last_error or ""
    text = _ERRORS.get(error, error or (f"HTTP status {row.last_status}" if row.last_status else ""))
    if row.state == UrlState.FAILED:
        return f"failed: {text or 'no reason recorded'}"
    if row.available_at > now:
        wait = row.available_at - now
        return f"waiting {wait:.0f} s before the next try" + (f" ({text})" if text else "")
    return f"not fetched this run ({text or 'the page budget or the politeness delay'})"
