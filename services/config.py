"""One typed settings object, read from the environment once and passed in.

Every backend is a URL (database, blob store) or a name (MapReduce runner), so
the embedded defaults, moto and AWS differ only in configuration. Nothing
below ``services`` reads ``os.environ`` itself: components take a
``Settings`` (or the few values they need) as arguments.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from urllib.parse import urlsplit

from services.errors import NimbusError

DEFAULT_USER_AGENT = "NimbusBot/0.1 (+https://github.com/nimbus-search/nimbus; crawler@nimbus.invalid)"


class SettingsError(NimbusError, ValueError):
    """A setting in the environment is malformed; the message names it and the fix."""

    exit_code = 2


@dataclass(frozen=True)
class Settings:
    # Backends: one URL (or name) each.
    database_url: str = "sqlite:///var/nimbus.db"
    blob_url: str = "file://var/blobs"
    mr_runner: str = "local"  # inline | local | emr
    mr_map_tasks: int = 0  # map tasks per job; 0: one per core (local), 64 (emr)
    # EMR index builds (`nimbus index --runner emr`); roles and subnet are the stack's outputs.
    emr_release_label: str = "emr-7.5.0"  # pinned: Hadoop 3.4 on Amazon Linux 2023
    emr_service_role: str = ""
    emr_instance_profile: str = ""
    emr_subnet: str = ""
    emr_instance_type: str = "m6i.xlarge"
    emr_core_instances: int = 2
    # Index segments kept in the blob store after a publish: the active one and the ones
    # before it (a service still on the previous version keeps it); older ones are
    # deleted, with their index_versions rows. 0 keeps every segment.
    keep_segments: int = 2
    aws_endpoint_url: str | None = None  # moto or another S3-compatible endpoint
    aws_region: str | None = None  # AWS_REGION (else AWS_DEFAULT_REGION / the profile's region)
    # On AWS: the RDS instance whose managed secret holds the password. When it is set and
    # database_url is not, the URL is assembled at start-up (services/aws_database.py), so the
    # password never sits in a file or an environment block.
    database_instance: str = ""
    database_host: str = ""
    database_port: int = 3306
    database_name: str = "nimbus"

    # Local working directory for caches (downloaded index segments, job scratch).
    var_dir: Path = Path("var")

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

    # Ranking.
    near_duplicates: bool = True  # fold pages whose terms are >= 90 % the same (text/minhash.py)
    pagerank_weight: float = 0.2  # a top-linked page's text score times at most 1.2 (docs/ranking.md)
    pagerank_damping: float = 0.85
    pagerank_tolerance: float = 1e-8
    pagerank_max_iterations: int = 100
    # memory: sparse power iteration in the build process (graphs that fit in
    # RAM: ~16 bytes per edge); mapreduce: one mrjob step per iteration.
    pagerank_engine: str = "memory"
    # page: PageRank over documents; host: over the host graph (links between
    # hosts), each document taking its host's score shared among the host's pages.
    pagerank_level: str = "page"
    # Query semantics: AND of the words unless AND finds fewer than this many
    # documents (then OR, ranked by score alone).
    and_min_results: int = 10
    # RM3 pseudo-relevance feedback (docs/ranking.md): 0 switches it off.
    feedback_docs: int = 10
    feedback_terms: int = 10
    feedback_weight: float = 0.5  # weight of the original query in the expanded one
    # Expansion leaves out terms in more than this share of documents (1.0: off; 0.1 helped
    # Cranfield but let a link-list page's rare words win on the sample web: docs/ranking.md).
    feedback_max_df: float = 1.0
    feedback_cap: bool = True  # no expansion term weighs more than the lightest query word
    # Feedback only for queries of at least this many terms: on short web queries RM3 drifts
    # to the feedback documents' topic (docs/ranking.md, issue 14).
    feedback_min_terms: int = 4

    # Search service.
    host: str = "127.0.0.1"
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
    # The operator's dashboard (/admin): off unless a token is set. Never shown in a repr.
    admin_token: str = field(default="", repr=False)
    # The weather answer box: when the whole query names a city, its current weather from an
    # Open-Meteo-style API at this base URL (the public one is https://api.open-meteo.com);
    # empty switches the box off. The page waits for the provider at most weather_timeout
    # seconds; answers are cached per place for weather_cache_seconds (failures for a minute).
    weather_url: str = ""
    weather_timeout: float = 0.3
    weather_cache_seconds: float = 600.0

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Read ``NIMBUS_*`` variables (and AWS's own ``AWS_ENDPOINT_URL``, ``AWS_REGION``)."""
        env = os.environ if env is None else env
        values: dict[str, object] = {}
        for f in fields(cls):
            key = f.name.upper() if f.name.startswith("aws_") else f"NIMBUS_{f.name.upper()}"
            raw = env.get(key)
            if raw is None or raw == "":
                continue
            values[f.name] = _convert(key, raw, f.default)
        settings = cls(**values)  # type: ignore[arg-type]
        settings.validate()
        return settings

    def with_overrides(self, **changes: object) -> Settings:
        """A copy with some fields changed (CLI flags override the environment)."""
        clean = {k: v for k, v in changes.items() if v is not None}
        settings = replace(self, **clean)  # type: ignore[arg-type]  # field types: validate()
        settings.validate()
        return settings

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
        if self.mr_runner not in {"inline", "local", "emr"}:
            raise SettingsError(
                f"NIMBUS_MR_RUNNER={self.mr_runner!r} is not a runner: use inline, local or emr"
            )
        if not (self.database_url.startswith("sqlite") or self.database_url.startswith("mysql")):
            raise SettingsError(
                f"NIMBUS_DATABASE_URL={self.database_url!r}: use sqlite:///path or "
                "mysql+pymysql://user:password@host:3306/db"
            )
        if not (self.blob_url.startswith("file://") or self.blob_url.startswith("s3://")):
            raise SettingsError(f"NIMBUS_BLOB_URL={self.blob_url!r}: use file://path or s3://bucket/prefix")
        if self.pagerank_engine not in {"memory", "mapreduce"}:
            raise SettingsError(f"NIMBUS_PAGERANK_ENGINE={self.pagerank_engine!r}: use memory or mapreduce")
        if self.keep_segments < 0:
            raise SettingsError(f"NIMBUS_KEEP_SEGMENTS={self.keep_segments}: use 0 (keep all) or more")
        if self.pagerank_level not in {"page", "host"}:
            raise SettingsError(f"NIMBUS_PAGERANK_LEVEL={self.pagerank_level!r}: use page or host")
        if not 0.0 <= self.feedback_weight <= 1.0:
            raise SettingsError(f"NIMBUS_FEEDBACK_WEIGHT={self.feedback_weight}: use 0.0 to 1.0")
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
        if not 0.0 < self.pagerank_damping < 1.0:
            raise SettingsError("NIMBUS_PAGERANK_DAMPING must lie strictly between 0 and 1")
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


def _convert(key: str, raw: str, default: object) -> object:
    try:
        if isinstance(default, bool):
            return raw.strip().lower() in {"1", "true", "yes", "on"}
        if isinstance(default, int):
            return int(raw)
        if isinstance(default, float):
            return float(raw)
        if isinstance(default, Path):
            return Path(raw)
    except ValueError as exc:
        raise SettingsError(f"{key}={raw!r} is not a valid {type(default).__name__}") from exc
    return raw
