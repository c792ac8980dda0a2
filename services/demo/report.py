"""What the demo tells its visitor: what the crawl's requests were (from the crawl's own
counters, so "crawled 2050 pages" beside 124 documents cannot happen again) and where the
search UI and the admin dashboard are, with how to sign in."""

from __future__ import annotations

from collections.abc import Mapping

from services.crawler.report.progress import CrawlStats


def status_classes(counters: Mapping[str, int]) -> dict[str, int]:
    """``status_<code>`` counters summed by class: ``{"2xx": n, "3xx": n, ...}``, zeros left out."""
    classes: dict[str, int] = {}
    for name, n in counters.items():
        code = name.removeprefix("status_")
        if name.startswith("status_") and code.isdigit() and n:
            key = f"{code[0]}xx"
            classes[key] = classes.get(key, 0) + n
    return dict(sorted(classes.items()))


def crawl_summary(stats: CrawlStats, index_seconds: float) -> str:
    """One line: the requests, what they answered, and how many documents came of them;
    documents, redirects and not-found always named, other kinds when there are any.

    "documents" are the pages stored and indexed; the rest of the 200s were duplicates,
    soft 404s, noindex pages and the like (the admin's policy counters say which)."""
    c = stats.counters
    by_class = status_classes(c)
    documents = c.get("documents", 0)
    parts = [f"{_n(documents)} documents"]
    not_kept = by_class.get("2xx", 0) - documents
    if not_kept > 0:
        parts.append(f"{_n(not_kept)} other 200s not kept (duplicates, soft 404s, noindex)")
    redirects = by_class.get("3xx", 0)
    parts.append(f"{_n(redirects)} {_plural(redirects, 'redirect')}")
    not_found = c.get("status_404", 0) + c.get("status_410", 0)
    parts.append(f"{_n(not_found)} not found (404, 410)")
    other_4xx = by_class.get("4xx", 0) - not_found
    if other_4xx:
        parts.append(f"{_n(other_4xx)} other 4xx")
    if by_class.get("5xx"):
        parts.append(f"{_n(by_class['5xx'])} server errors (5xx)")
    if stats.errors:
        parts.append(f"{_n(stats.errors)} failed fetches")
    return (
        f"demo: crawled {_n(stats.pages)} URLs in {stats.seconds:.1f} s: {', '.join(parts)}; "
        f"indexed in {index_seconds:.1f} s"
    )


def admin_lines(origin: str, token: str, generated: bool) -> list[str]:
    """Where the dashboard is and how to sign in; a generated token is printed (it lives as
    long as this demo), one from the environment is not (the operator knows it)."""
    where = f"admin dashboard: {origin}admin"
    if generated:
        return [
            f"{where} (sign in with this session's token {token}; set NIMBUS_ADMIN_TOKEN to choose your own)"
        ]
    return [f"{where} (sign in with your NIMBUS_ADMIN_TOKEN)"]


def _n(n: int | float) -> str:
    return f"{int(n):,}"


def _plural(n: int, word: str) -> str:
    return word if n == 1 else word + "s"
