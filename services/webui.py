"""The web UI's templates (``webui/templates``), its static files and the filters the
templates use.

The search pages and the admin pages both render from these templates, so they live on
the ground floor, below both. The files are read from ``webui/`` beside the ``services``
package: the customer's top-level folder in a checkout, and the same folder in an installed
wheel, which carries it as package data at the same place (pyproject.toml), so one path
serves both. A release installed outside any checkout is tested to serve its pages and
styles (tests/integration/release).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from fastapi.templating import Jinja2Templates
from jinja2 import Environment, FileSystemLoader

WEBUI = Path(__file__).resolve().parents[1] / "webui"  # the checkout's root, or site-packages


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
