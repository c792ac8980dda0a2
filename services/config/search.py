"""The search service's settings: how a query is ranked and answered, and how it is served.

Read by ``nimbus serve`` (the search app with the operator's dashboard on top)
and by the tools that serve or query an index (demo, eval, benchmarks).
"""

from __future__ import annotations

import ipaddress
import math
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from services.config.errors import SettingsError

MAX_FEEDBACK_POOL = 100_000  # a deeper first pass per feedback query is a misconfiguration


@dataclass(frozen=True)
class SearchSettings:
    # Ranking at query time (the index build's PageRank knobs are in IndexSettings).
    pagerank_weight: float = 0.2  # a top-linked page's text score times at most 1.2 (docs/ranking.md)
    # A home page the query names scores (1 + this) times, a named section page (1 + this/2)
    # times (services.ranking.entry_pages); 0 switches it off.
    entry_page_weight: float = 1.0
    # Query semantics: AND of the words unless AND finds fewer than this many
    # documents (then OR, ranked by score alone).
    and_min_results: int = 10
    # RM3 pseudo-relevance feedback (docs/ranking.md): 0 switches it off.
    feedback_docs: int = 10
    feedback_terms: int = 10
    feedback_weight: float = 0.5  # weight of the original query in the expanded one
    # Expansion leaves out terms in more than this share of documents (1.0: off; 0.1 helps
    # Cranfield but lets a link-list page's rare words win on the sample web: docs/ranking.md).
    feedback_max_df: float = 1.0
    feedback_cap: bool = True  # no expansion term weighs more than the lightest query word
    # Feedback only for queries of at least this many terms: on short web queries RM3 drifts
    # to the feedback documents' topic (docs/ranking.md).
    feedback_min_terms: int = 4
    # Feedback for queries with an explicit OR too. Off: a user who writes OR has chosen the
    # alternatives, and the query runs as written, as Lucene, Elasticsearch and tantivy run a
    # boolean query; feedback is for word queries that AND could not answer (docs/ranking.md).
    feedback_explicit_or: bool = False
    # The expanded query rescores the first pass's best this many documents (at least the
    # results asked for), as Elasticsearch's rescore window and Vespa's rerank-count do; 0:
    # it ranks every document holding a word of the query again (docs/ranking.md).
    feedback_pool: int = 30

    # Search service (it listens on Settings.host).
    port: int = 8000
    serve_workers: int = 1  # uvicorn worker processes (`nimbus serve --workers`)
    # Where several workers keep their /metrics values (prometheus-client's multiprocess mode),
    # so a scrape that reaches any of them reports all; `nimbus serve --workers N` sets it.
    metrics_dir: str = ""
    results_per_page: int = 10
    # Answers kept per search worker (query, page, size, index version), for at most
    # result_cache_seconds, so a recrawled page's new title shows within that time. 0: off.
    result_cache_size: int = 2048
    result_cache_seconds: float = 300.0
    # Record blocks a search instance keeps whole on its disk (under var_dir/blocks) when the
    # blob store is remote (S3): a results page then reads its ten records locally, not by
    # ten ranged GETs. Blocks are written once and never change. Bytes; 0: off.
    record_cache_bytes: int = 2 << 30
    # Requests per client address and worker process, in the `limits` notation ("20/second",
    # "1200/minute"); "off" for none (a load test). /healthz, /metrics and static files are free.
    rate_limit: str = "1200/minute"
    # The proxies whose X-Forwarded-For/-Proto are believed (comma-separated CIDRs: the load
    # balancer's subnets when deployed); empty: none, the peer is the client. Anything else
    # could name any address and so get a fresh rate limit with every request
    # (services/search/http/forwarded.py).
    proxy_cidrs: str = ""
    # The operator's dashboard (/admin): off unless a token is set. Never shown in a repr.
    admin_token: str = field(default="", repr=False)
    # The operator's laptop (`nimbus crawl ... --remote`): the site whose admin API the
    # operator commands go through, with admin_token as the bearer token. Empty: the database.
    admin_url: str = ""
    # The weather answer box: when the whole query names a city, its current weather from an
    # Open-Meteo-style API at this base URL (the public one is https://api.open-meteo.com);
    # empty switches the box off. The page waits for the provider at most weather_timeout
    # seconds; answers are cached per place for weather_cache_seconds (failures for a minute).
    weather_url: str = ""
    weather_timeout: float = 0.3
    weather_cache_seconds: float = 600.0

    def validate(self) -> None:
        if self.record_cache_bytes < 0:
            raise SettingsError(
                f"NIMBUS_RECORD_CACHE_BYTES={self.record_cache_bytes}: use 0 (off) or a number of bytes"
            )
        if self.result_cache_size < 0 or self.result_cache_seconds < 0:
            raise SettingsError(
                "NIMBUS_RESULT_CACHE_SIZE and NIMBUS_RESULT_CACHE_SECONDS must be 0 (off) or more"
            )
        if self.rate_limit != "off":
            from limits import parse

            try:
                parse(self.rate_limit)
            except ValueError as exc:
                raise SettingsError(
                    f"NIMBUS_RATE_LIMIT={self.rate_limit!r}: use a rate like 20/second or 1200/minute, or off"
                ) from exc
        if self.proxy_cidrs:
            try:
                for entry in self.proxy_cidrs.split(","):
                    if entry.strip():
                        ipaddress.ip_network(entry.strip(), strict=False)
            except ValueError as exc:
                raise SettingsError(
                    f"NIMBUS_PROXY_CIDRS={self.proxy_cidrs!r}: {exc}; give the load balancer's "
                    "networks as CIDRs separated by commas, like 10.40.0.0/20,10.40.16.0/20"
                ) from exc
        if not 0 <= self.feedback_pool <= MAX_FEEDBACK_POOL:
            raise SettingsError(
                f"NIMBUS_FEEDBACK_POOL={self.feedback_pool}: use 0 (rank every match again) or up to "
                f"{MAX_FEEDBACK_POOL} documents (each feedback query's first pass ranks that deep)"
            )
        if not 0.0 <= self.feedback_weight <= 1.0:
            raise SettingsError(f"NIMBUS_FEEDBACK_WEIGHT={self.feedback_weight}: use 0.0 to 1.0")
        if not self.entry_page_weight >= 0.0:
            raise SettingsError(
                f"NIMBUS_ENTRY_PAGE_WEIGHT={self.entry_page_weight}: use 0 (off) or a positive number"
            )
        if self.weather_url:
            try:
                parts = urlsplit(self.weather_url)
                usable = parts.scheme in {"http", "https"} and bool(parts.hostname)
            except ValueError:  # "http://[::1" and the like
                usable = False
            if not usable:
                raise SettingsError(
                    f"NIMBUS_WEATHER_URL={self.weather_url!r}: use an http(s) base URL like "
                    "https://api.open-meteo.com, or leave it empty (no weather answer)"
                )
        if not (self.weather_timeout > 0.0 and math.isfinite(self.weather_timeout)):
            raise SettingsError(
                f"NIMBUS_WEATHER_TIMEOUT={self.weather_timeout}: use a positive number of seconds, like 0.3"
            )
        if not (self.weather_cache_seconds >= 0.0 and math.isfinite(self.weather_cache_seconds)):
            raise SettingsError(
                f"NIMBUS_WEATHER_CACHE_SECONDS={self.weather_cache_seconds}: use 0 (no cache) or more seconds"
            )
