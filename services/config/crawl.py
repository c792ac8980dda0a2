"""The crawl's settings: politeness, limits, scope, partitions and content blocks.

Read by the crawler's processes (worker, committer, ``nimbus crawl``, ``nimbus archive
crawl``, which ``nimbus eval`` runs on a judged collection) and by the operator's
commands and dashboard that speak to them.
"""

from __future__ import annotations

from dataclasses import dataclass

from services.config.errors import SettingsError

DEFAULT_USER_AGENT = "NimbusBot/0.1 (+https://github.com/nimbus-search/nimbus; crawler@nimbus.invalid)"


@dataclass(frozen=True)
class CrawlSettings:
    # Crawler politeness and limits. Polite by default: robots obeyed, one
    # request per host at a time, a second between requests to a host.
    user_agent: str = DEFAULT_USER_AGENT
    crawl_delay: float = 1.0
    max_crawl_delay: float = 30.0  # cap on robots.txt Crawl-delay
    concurrency: int = 16
    # Requests in flight to one host. 1 is polite; a crawl of your own hosts
    # (the benchmark's loopback web) may raise it. The delay still applies
    # between the starts of requests to a host.
    per_host_concurrency: int = 1
    max_pages: int = 1000
    max_depth: int = 5
    max_pages_per_host: int = 50_000  # per-host page cap: calendar-style link spaces end here
    fetch_timeout: float = 30.0  # total seconds for one response (slow-drip servers)
    connect_timeout: float = 10.0
    read_timeout: float = 20.0  # seconds without a byte
    head_first: bool = True  # HEAD before GET: skip bodies too large or of a type we do not index
    # Verify crawled sites' TLS certificates (off, as in Nutch and Heritrix: crawler/web/tls.py).
    verify_tls: bool = False
    retry_backoff: float = 2.0  # seconds; the n-th retry waits retry_backoff * 2**n (+ jitter)
    max_attempts: int = 3  # fetches of one URL before it is given up (5xx, 429, network errors)
    max_redirects: int = 5  # hops in one redirect chain; each hop is its own frontier entry
    languages: str = "en"  # languages whose pages are stored (comma list); empty keeps all
    sitemaps: bool = True  # seed each new host's frontier from its sitemaps
    # Ask each host once for a path that cannot exist; pages like its answer are soft 404s.
    soft404_probe: bool = True
    metrics_port: int = 0  # crawler /metrics (Prometheus) on this port, + i for process i; 0: off
    heartbeat_seconds: float = 5.0  # crawler heartbeats; operator commands take effect within one
    recrawl_min_interval: float = 86_400.0  # 1 day: a page that changes every visit
    recrawl_max_interval: float = 30 * 86_400.0  # 30 days: a page that never changes
    # Hosts hash into ``partitions`` virtual partitions; a crawler process
    # leases only URLs of ``partition_ids`` (comma list or ranges "0-31";
    # empty: all), so processes given disjoint ids never share a host.
    partitions: int = 64
    crawl_processes: int = 1  # `nimbus crawl` splits the partitions among this many processes
    # A crawl cluster's send window: batches out (leased or acknowledged, not yet committed)
    # per live worker. Commit is in sequence order, so one slow batch holds back the rest;
    # the window bounds what piles up behind it.
    send_window: int = 64
    partition_ids: str = ""
    max_body_bytes: int = 10 * 1024 * 1024  # 10 MB
    block_max_bytes: int = 200 * 1024 * 1024  # 200 MB: the report's content-block cap
    block_max_docs: int = 10_000
    # Seconds of fetched work one commit collects at most: bigger blocks, but
    # what kill -9 makes the crawler fetch again (Ctrl-C commits it first).
    flush_interval: float = 5.0
    batch_size: int = 32
    # Crawl scope: comma-separated host names (a name admits its subdomains);
    # empty admits every host. Tests and the demo set "127.0.0.1" so that
    # links to the outside web are never followed.
    allowed_hosts: str = ""

    @property
    def language_set(self) -> frozenset[str]:
        return frozenset(x.strip().lower() for x in self.languages.split(",") if x.strip())

    @property
    def partition_list(self) -> list[int] | None:
        """The partitions this process leases from; ``None`` means all of them."""
        ids: set[int] = set()
        for part in (p.strip() for p in self.partition_ids.split(",")):
            if not part:
                continue
            low, _, high = part.partition("-")
            try:
                ids.update(range(int(low), int(high or low) + 1))
            except ValueError as exc:
                raise SettingsError(
                    f"NIMBUS_PARTITION_IDS={self.partition_ids!r}: use numbers and ranges like 0-31,40"
                ) from exc
        return sorted(ids) if ids else None

    @property
    def allowed_host_set(self) -> frozenset[str]:
        return frozenset(h.strip().lower() for h in self.allowed_hosts.split(",") if h.strip())

    def validate(self) -> None:
        if self.per_host_concurrency < 1 or self.concurrency < 1:
            raise SettingsError("NIMBUS_CONCURRENCY and NIMBUS_PER_HOST_CONCURRENCY must be at least 1")
        if not 1 <= self.crawl_processes <= max(1, self.partitions):
            raise SettingsError(
                f"NIMBUS_CRAWL_PROCESSES={self.crawl_processes}: "
                f"use 1 to NIMBUS_PARTITIONS ({self.partitions})"
            )
        if self.partitions < 1:
            raise SettingsError("NIMBUS_PARTITIONS must be at least 1")
        if self.send_window < 1:
            raise SettingsError(f"NIMBUS_SEND_WINDOW={self.send_window}: use 1 or more batches per worker")
        bad = [p for p in self.partition_list or [] if not 0 <= p < self.partitions]
        if bad:
            raise SettingsError(
                f"NIMBUS_PARTITION_IDS={self.partition_ids!r} names partitions {bad} outside "
                f"0..{self.partitions - 1} (NIMBUS_PARTITIONS={self.partitions})"
            )
        if not 0 < self.recrawl_min_interval <= self.recrawl_max_interval:
            raise SettingsError(
                "NIMBUS_RECRAWL_MIN_INTERVAL must be positive and at most NIMBUS_RECRAWL_MAX_INTERVAL"
            )
