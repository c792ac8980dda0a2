"""One typed settings object, read from the environment once and passed in.

Every backend is a URL (database, blob store) or a name (MapReduce runner), so
the embedded defaults, moto and AWS differ only in configuration. Nothing
below ``services`` reads ``os.environ`` itself: components take a
``Settings`` (or the few values they need) as arguments.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path

DEFAULT_USER_AGENT = "NimbusBot/0.1 (+https://github.com/nimbus-search/nimbus; crawler@nimbus.invalid)"


class SettingsError(ValueError):
    """A setting in the environment is malformed; the message names it and the fix."""


@dataclass(frozen=True)
class Settings:
    # Backends: one URL (or name) each.
    database_url: str = "sqlite:///var/nimbus.db"
    blob_url: str = "file://var/blobs"
    mr_runner: str = "local"  # inline | local | emr
    aws_endpoint_url: str | None = None  # moto or another S3-compatible endpoint

    # Local working directory for caches (downloaded index segments, job scratch).
    var_dir: Path = Path("var")

    # Crawler politeness and limits. Polite by default: robots obeyed, one
    # request per host at a time, a second between requests to a host.
    user_agent: str = DEFAULT_USER_AGENT
    crawl_delay: float = 1.0
    max_crawl_delay: float = 30.0  # cap on robots.txt Crawl-delay
    concurrency: int = 16
    max_pages: int = 1000
    max_depth: int = 5
    fetch_timeout: float = 30.0
    max_body_bytes: int = 10 * 1024 * 1024  # 10 MB
    block_max_bytes: int = 200 * 1024 * 1024  # 200 MB: the report's content-block cap
    block_max_docs: int = 10_000
    batch_size: int = 32
    # Crawl scope: comma-separated host names (a name admits its subdomains);
    # empty admits every host. Tests and the demo set "127.0.0.1" so that
    # links to the outside web are never followed.
    allowed_hosts: str = ""

    # Ranking.
    pagerank_weight: float = 1.0  # BM25 points a top-linked page can gain (docs/ranking.md)
    pagerank_damping: float = 0.85
    pagerank_tolerance: float = 1e-8
    pagerank_max_iterations: int = 100
    # memory: sparse power iteration in the build process (graphs that fit in
    # RAM: ~16 bytes per edge); mapreduce: one mrjob step per iteration.
    pagerank_engine: str = "memory"

    # Search service.
    host: str = "127.0.0.1"
    port: int = 8000
    results_per_page: int = 10

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Read ``NIMBUS_*`` variables (and ``AWS_ENDPOINT_URL``) over the defaults."""
        env = os.environ if env is None else env
        values: dict[str, object] = {}
        for f in fields(cls):
            key = "AWS_ENDPOINT_URL" if f.name == "aws_endpoint_url" else f"NIMBUS_{f.name.upper()}"
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
        settings = replace(self, **clean)
        settings.validate()
        return settings

    @property
    def allowed_host_set(self) -> frozenset[str]:
        return frozenset(h.strip().lower() for h in self.allowed_hosts.split(",") if h.strip())

    def validate(self) -> None:
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
            raise SettingsError(
                f"NIMBUS_BLOB_URL={self.blob_url!r}: use file://path or s3://bucket/prefix"
            )
        if self.pagerank_engine not in {"memory", "mapreduce"}:
            raise SettingsError(
                f"NIMBUS_PAGERANK_ENGINE={self.pagerank_engine!r}: use memory or mapreduce"
            )
        if not 0.0 < self.pagerank_damping < 1.0:
            raise SettingsError("NIMBUS_PAGERANK_DAMPING must lie strictly between 0 and 1")


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
