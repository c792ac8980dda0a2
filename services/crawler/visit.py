"""One URL's visit: robots, per-host cap, politeness, fetch, parse, language, links.

The ``Visitor`` fills a ``UrlResult``; the committer turns results into
documents and frontier rows. Every policy decision becomes a counter.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections import Counter

from sqlalchemy.orm import Session

from services.crawler.commit.results import FetchedDoc, UrlResult
from services.crawler.context import VisitContext
from services.crawler.frontier.dead_prefixes import is_dead
from services.crawler.frontier.entries import SEED_PRIORITY, SITEMAP_PRIORITY, NewUrl, UrlState
from services.crawler.frontier.host_queues import HostQueue
from services.crawler.frontier.leases import LeasedUrl
from services.crawler.outcome import judge_fetch, redirect_hop
from services.crawler.report.metrics import LatencyHistogram
from services.crawler.web.client_session import Timeouts
from services.crawler.web.fetch_errors import FetchError
from services.crawler.web.fetch_result import FetchResult
from services.crawler.web.parse import (
    INDEXABLE,
    MAX_REFRESH_DELAY,
    ParsedDoc,
    ParseError,
    accept_content_type,
    classify,
    parse_document,
)
from services.crawler.web.robots import RobotsCache, RobotsRules, effective_delay
from services.crawler.web.sitemaps import discover_sitemap_urls
from services.crawler.web.soft404 import NotFoundPage, is_soft_404, probe_path, words_of
from services.storage.formats.blocks import ContentType
from services.storage.formats.records import Link
from services.storage.sql.models import Host
from services.text.analysis.lang import keep_language
from services.text.errors import BadUrlError
from services.text.extract.robots_directives import NOARCHIVE, NOFOLLOW, NOINDEX, robots_tag_directives
from services.text.urls import in_scope, normalize_url, trap_path

log = logging.getLogger(__name__)

# HEAD before GET (settings.crawl.head_first) costs a round trip per page. It pays on
# hosts that serve large or non-HTML files, so it stops once a host has served
# this many acceptable pages in a row, and comes back after a refused one (a
# GET is cut off after its headers anyway; HEAD only spares the server the body).
HEAD_TRUST = 8
_BINARY_EXTENSIONS = frozenset({
    "7z", "apk", "avi", "bin", "bmp", "bz2", "deb", "dmg", "exe", "flac", "gif", "gz", "ico", "iso",
    "jar", "jpeg", "jpg", "m4a", "mkv", "mov", "mp3", "mp4", "mpeg", "msi", "ogg", "png", "rar",
    "rpm", "svg", "tar", "tgz", "tif", "tiff", "wav", "webm", "webp", "wmv", "xz", "zip", "zst",
})  # fmt: skip


class Visitor:
    """Visits URLs with what a ``VisitContext`` gives it (never the crawl that runs it)."""

    def __init__(self, ctx: VisitContext) -> None:
        self.ctx = ctx
        self.settings = ctx.settings
        self.robots = RobotsCache(ctx.db.sessions, self.settings.crawl.user_agent, ctx.clock, fetch=ctx.fetch)
        self.scope = self.settings.crawl.allowed_host_set
        self.languages = self.settings.crawl.language_set
        self.bytes = 0
        self.latency = LatencyHistogram()  # page fetches, for /metrics
        self.live_counters: Counter[str] = Counter()  # not yet committed, for the progress line
        self.rng = random.Random()
        self.timeouts = Timeouts.from_settings(self.settings)
        self.rules: dict[str, RobotsRules] = {}  # fresh rules by host (bounded like the host queues)
        # Each host's answer to a path that cannot exist (soft404.py); None: a real 404.
        self.not_found: dict[str, NotFoundPage | None] = {}

    async def visit(self, host: str, entry: LeasedUrl, result: UrlResult) -> None:
        """Fill ``result`` for ``entry``."""
        ctx, settings = self.ctx, self.settings
        if ctx.budget.exhausted:
            result.state = UrlState.NEW  # released: the next run fetches it
            return
        if self._defer_dead(entry, result):
            return
        blocked = ctx.blocked()
        if blocked and in_scope(entry.url, blocked):
            result.error = "blocked_by_operator"
            result.counters["blocked_by_operator"] += 1
            return
        queue = ctx.hosts.queue(host)
        if queue.pages is None:
            queue.pages = await ctx.db.transaction(_host_pages, host)
        if queue.pages >= settings.crawl.max_pages_per_host:
            result.error = "host_page_cap"
            result.counters["host_page_cap"] += 1
            return
        rules = await self._rules(host, queue, result)
        if not rules.allowed(entry.url, settings.crawl.user_agent):
            if rules.unavailable:
                result.state, result.error = UrlState.FAILED, "robots_unavailable"
            else:
                result.error = "robots_denied"
            result.counters[result.error] += 1
            return
        if ctx.budget.exhausted:  # again: other workers ran while robots.txt loaded
            result.state = UrlState.NEW
            return
        ctx.budget.spend()
        queue.pages += 1
        result.counters["pages"] += 1
        await self._polite_wait(queue)
        head = settings.crawl.head_first and (queue.trusted < HEAD_TRUST or _looks_binary(entry.url))
        async with ctx.slots:
            started = time.perf_counter()
            fetched = await ctx.fetch(
                ctx.http,
                entry.url,
                max_bytes=settings.crawl.max_body_bytes,
                accept=accept_content_type,
                head_first=head,
                timeouts=self.timeouts,
            )
            self.latency.observe(time.perf_counter() - started)
        self.bytes += len(fetched.body)
        if fetched.error in (FetchError.TOO_LARGE, FetchError.WRONG_TYPE):
            queue.trusted = 0
        elif fetched.ok:
            queue.trusted += 1
        if fetched.retryable:
            queue.failed(settings.crawl.max_crawl_delay)
        else:
            queue.succeeded()
        judged = judge_fetch(result, entry, fetched, settings, now=self.ctx.clock(), jitter=self.rng.random())
        ctx.yields.record(entry.url, is_dead(fetched.status, fetched.error))
        if not judged:
            self._live(result)
            return
        await self._parse(entry, fetched, result)
        html = result.doc is not None and result.doc.parsed.content_type == ContentType.HTML
        if html and settings.crawl.soft404_probe and result.doc is not None:
            not_found = await self._not_found_page(host, rules)
            # Words only for hosts whose missing pages answer 200 (most answer 404: no cost).
            if (
                not_found is not None
                and not_found.words
                and is_soft_404(words_of(result.doc.parsed.text, result.doc.url), not_found)
            ):
                result.doc = None
                result.error = "soft 404: the host's 'not found' page, answered with 200"
                result.counters["soft_404"] += 1
                ctx.yields.record(entry.url, True)  # counted live above; now known dead
        self._live(result)

    def _defer_dead(self, entry: LeasedUrl, result: UrlResult) -> bool:
        """Put a URL whose path prefix turned out mostly dead since it was queued back behind
        the live ones, unfetched (no request spent); it comes back when nothing better waits."""
        if entry.recrawl or entry.priority >= SEED_PRIORITY:
            return False
        cap = self.ctx.yields.defers(entry.url, entry.priority)
        if cap is None:
            return False
        result.state, result.priority = UrlState.NEW, cap
        result.counters["deferred_dead_prefix"] += 1
        return True

    async def _not_found_page(self, host: str, rules: RobotsRules) -> NotFoundPage | None:
        """The host's answer to a path that cannot exist, asked once per host and crawl (one
        extra polite request), or None when it answers honestly (4xx) or may not be asked."""
        if host in self.not_found:
            return self.not_found[host]
        url = host + probe_path()
        self.not_found[host] = None
        if not rules.allowed(url, self.settings.crawl.user_agent):
            return None
        await self._polite_wait(self.ctx.hosts.queue(host))
        async with self.ctx.slots:
            probe = await self.ctx.fetch(
                self.ctx.http, url, max_bytes=self.settings.crawl.max_body_bytes, accept=accept_content_type,
                timeouts=self.timeouts,
            )  # fmt: skip
        if probe.ok and probe.status == 200 and probe.body:
            try:
                parsed = parse_document(probe, normalize_url(probe.final_url))
            except (ParseError, BadUrlError):
                return None
            self.not_found[host] = NotFoundPage(words_of(parsed.text, url))
        return self.not_found[host]

    def forget(self, hosts: set[str]) -> None:
        """Keep robots rules only for ``hosts`` (the others reload from the hosts table)."""
        self.rules = {h: r for h, r in self.rules.items() if h in hosts}
        self.not_found = {h: page for h, page in self.not_found.items() if h in hosts}

    def _live(self, result: UrlResult) -> None:
        for key, value in result.counters.items():
            if key.startswith("status_"):
                self.live_counters[key] += value

    async def _parse(self, entry: LeasedUrl, fetched: FetchResult, result: UrlResult) -> None:
        counters = result.counters
        try:
            final = normalize_url(fetched.final_url)
        except BadUrlError:
            result.error = f"redirected to an uncrawlable URL {fetched.final_url}"
            counters[FetchError.BAD_REDIRECT.value] += 1  # as fetch's bad_redirect: one counter
            return
        if final != entry.url:
            counters["redirect"] += 1
        ctype = classify(fetched.content_type, fetched.body)
        if ctype not in INDEXABLE:
            result.error = FetchError.WRONG_TYPE.value  # as fetch's wrong_type: one counter
            counters[FetchError.WRONG_TYPE.value] += 1
            return
        try:
            if ctype == ContentType.HTML:  # inline: cheaper than a thread hop per page
                parsed = parse_document(fetched, final)
            else:
                parsed = await asyncio.to_thread(parse_document, fetched, final)
        except ParseError as exc:
            result.error = f"parse: {exc}"
            counters["parse_error"] += 1
            return
        if fetched.robots_tag:
            self._obey_robots_tag(fetched.robots_tag, parsed, counters)
        if self._refreshes_away(entry, parsed, final, result):
            return
        if parsed.canonical and parsed.canonical != final:
            counters["canonical_elsewhere"] += 1  # parse_document added it to the links
        if parsed.links_dropped:
            counters["links_over_cap"] += parsed.links_dropped  # parse.MAX_LINKS a page
        if parsed.links_bad:
            counters["bad_url_links"] += parsed.links_bad  # http://[::1/, a port of 99999, ...
        links = self._admissible(parsed.links, counters)
        if entry.depth + 1 <= self.ctx.max_depth:
            result.links = links
        elif links:
            counters["depth_limit"] += len(links)
        if parsed.noindex:
            counters["noindex"] += 1
            return
        if not keep_language(parsed.lang, self.languages):
            result.error = f"language {parsed.lang}"
            counters["language_skipped"] += 1
            return
        result.doc = FetchedDoc(
            final, fetched.body, parsed, self.ctx.clock(), fetched.status or 200,
            content_type=fetched.content_type,
        )  # fmt: skip

    def _obey_robots_tag(self, values: tuple[str, ...], parsed: ParsedDoc, counters: Counter[str]) -> None:
        """The page's ``X-Robots-Tag`` header, as its ``<meta name=robots>`` is obeyed: noindex
        leaves the page unstored, nofollow leaves its links unfollowed, noarchive its cached
        copy unshown."""
        directives = robots_tag_directives(values, self.settings.crawl.user_agent)
        if directives & NOFOLLOW:
            counters["nofollow_header"] += 1
            parsed.links = []
        if directives & NOINDEX:
            parsed.noindex = True
        if directives & NOARCHIVE:
            parsed.noarchive = True

    def _refreshes_away(self, entry: LeasedUrl, parsed: ParsedDoc, final: str, result: UrlResult) -> bool:
        """A short ``<meta http-equiv=refresh>`` to another URL is a redirect (as Google and
        browsers treat it): the target is queued as the next hop and this page is not stored,
        so a refresh-only home page neither stops the crawl nor collects the site's PageRank.
        Longer delays ("you will be taken there in a minute") leave the page a page."""
        target = parsed.refresh_url
        if not target or target == final or parsed.refresh_delay > MAX_REFRESH_DELAY:
            return False
        result.counters["meta_refresh"] += 1
        redirect_hop(result, entry, target, self.settings, via="meta refresh")
        return True

    def _admissible(self, links: list[Link], counters: Counter[str]) -> list[Link]:
        """Links in scope, not blocked by the operator, not shaped like a trap, whose host is
        not at its page cap."""
        kept = [link for link in links if in_scope(link.url, self.scope)] if self.scope else list(links)
        if len(kept) < len(links):
            counters["out_of_scope"] += len(links) - len(kept)
        blocked = self.ctx.blocked()
        if blocked:
            allowed = [link for link in kept if not in_scope(link.url, blocked)]
            if len(allowed) < len(kept):
                counters["blocked_by_operator_links"] += len(kept) - len(allowed)
                kept = allowed
        sane = [link for link in kept if not trap_path(link.url)]
        if len(sane) < len(kept):
            counters["trap_path_links"] += len(kept) - len(sane)
            kept = sane
        hosts = self.ctx.hosts.hosts
        cap = self.settings.crawl.max_pages_per_host
        capped = [link for link in kept if _at_cap(hosts, link.url, cap)]
        if capped:
            counters["host_page_cap_links"] += len(capped)
            kept = [link for link in kept if not _at_cap(hosts, link.url, cap)]
        return kept

    async def _rules(self, host: str, queue: HostQueue, result: UrlResult) -> RobotsRules:
        """The host's robots rules; the first visit fetches robots.txt (one polite request)."""
        ctx = self.ctx
        now = ctx.clock()
        rules = self.rules.get(host)
        if rules is None or now - rules.fetched_at > rules.ttl:
            # On the database thread, but not in a transaction: cached() opens its own read-only
            # session, and an empty (IMMEDIATE) transaction around it would take the write lock.
            rules = await ctx.db.call(self.robots.cached, host, now)
        fetched_now = rules is None
        if rules is None:
            await self._polite_wait(queue)
            async with ctx.slots:
                rules = await self.robots.fetch(ctx.http, host)
            result.counters["robots_fetched"] += 1
        self.rules[host] = rules
        if fetched_now or queue.delay is None:
            delay, clamped = effective_delay(
                rules,
                self.settings.crawl.user_agent,
                self.settings.crawl.crawl_delay,
                self.settings.crawl.max_crawl_delay,
            )
            queue.delay = delay
            if clamped:
                log.info(
                    "%s asks for a Crawl-delay over the %.0f s cap; using %.0f s",
                    host,
                    self.settings.crawl.max_crawl_delay,
                    delay,
                )
                result.counters["crawl_delay_clamped"] += 1
        if fetched_now and self.settings.crawl.sitemaps and not rules.unavailable:
            await self._sitemaps(host, queue, rules, result)
        return rules

    async def _sitemaps(self, host: str, queue: HostQueue, rules: RobotsRules, result: UrlResult) -> None:
        """Seed the frontier from the host's sitemaps, once per robots.txt fetch, politely."""
        await self._polite_wait(queue)
        async with self.ctx.slots:
            found = await discover_sitemap_urls(
                self.ctx.http,
                host,
                rules.sitemaps,
                max_bytes=self.settings.crawl.max_body_bytes,
                delay=queue.spacing,
                timeouts=self.timeouts,
                fetch=self.ctx.fetch,
            )
        urls = [u for u in found.urls if in_scope(u, self.scope)] if self.scope else found.urls
        result.found += [NewUrl(u, 1, SITEMAP_PRIORITY, result.url_id) for u in urls]
        result.counters["sitemap_urls"] += len(urls)
        result.counters["sitemaps_fetched"] += found.sitemaps_fetched
        result.counters["sitemap_errors"] += found.errors

    async def _polite_wait(self, queue: HostQueue) -> None:
        wait = queue.reserve(asyncio.get_running_loop().time())
        if wait > 0:
            await asyncio.sleep(wait)


def _looks_binary(url: str) -> bool:
    """A path ending in an extension of media, archives or programs: HEAD first, however trusted."""
    path = url.split("?", 1)[0]
    dot = path.rfind(".")
    return dot > path.rfind("/") and path[dot + 1 :].lower() in _BINARY_EXTENSIONS


def _at_cap(hosts: dict[str, HostQueue], url: str, cap: int) -> bool:
    scheme_end = url.find("://") + 3
    slash = url.find("/", scheme_end)
    queue = hosts.get(url if slash < 0 else url[:slash])
    return queue is not None and queue.pages is not None and queue.pages >= cap


def _host_pages(session: Session, host: str) -> int:
    row = session.get(Host, host)
    return 0 if row is None else row.pages or 0
