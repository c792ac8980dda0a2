"""The web UI's templates (``webui/templates``) and the filters they use."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from fastapi.templating import Jinja2Templates
from jinja2 import Environment, FileSystemLoader

WEBUI = Path(__file__).resolve().parents[2] / "webui"
PAGE_LINKS = 10  # numbered page links shown around the current page


def build_templates(webui: Path = WEBUI) -> Jinja2Templates:
    env = Environment(
        loader=FileSystemLoader(webui / "templates"),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        auto_reload=False,  # templates change with a deploy, not under a running server
    )
    env.filters["safe_href"] = safe_href
    env.filters["utc"] = utc
    env.filters["display_url"] = display_url
    return Jinja2Templates(env=env)


def safe_href(url: str) -> str:
    """``url`` if it is http(s), else "#": autoescaping stops markup, not ``javascript:`` links."""
    scheme = url.split(":", 1)[0].strip().lower() if ":" in url else ""
    return url if scheme in {"http", "https"} else "#"


MAX_URL_CHARS = 80  # a result's URL as shown; the link itself keeps all of it


def display_url(url: str) -> str:
    """A URL shortened for display as engines do: no scheme, the middle elided when long."""
    shown = url.split("://", 1)[-1]
    if len(shown) <= MAX_URL_CHARS:
        return shown
    keep = MAX_URL_CHARS - 1
    return shown[: keep * 2 // 3] + "…" + shown[-(keep - keep * 2 // 3) :]


def utc(timestamp: float) -> str:
    """A stored Unix time as people read it; "unknown" for none."""
    if not timestamp:
        return "an unknown time"
    return dt.datetime.fromtimestamp(timestamp, dt.UTC).strftime("%d %b %Y %H:%M UTC")


def page_links(page: int, pages: int) -> list[int]:
    """Up to PAGE_LINKS page numbers around ``page``."""
    if pages <= 1:
        return []
    first = max(1, min(page - PAGE_LINKS // 2, pages - PAGE_LINKS + 1))
    return list(range(first, min(pages, first + PAGE_LINKS - 1) + 1))
