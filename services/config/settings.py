"""``Settings``: the backends every process shares at the top, one section per part below.

A setting keeps one flat name across the sections (``settings.crawl.max_pages``
is ``max_pages``): its environment variable (``NIMBUS_MAX_PAGES``), the key
``with_overrides`` and ``Settings.of`` take, and the name its validation
message gives.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import Field, dataclass, field, fields, is_dataclass, replace
from pathlib import Path
from typing import Any

from services.config.crawl import CrawlSettings
from services.config.deploy import DeploySettings
from services.config.env import convert, env_name
from services.config.errors import SettingsError
from services.config.index import IndexSettings
from services.config.search import SearchSettings


@dataclass(frozen=True)
class Settings:
    # Backends: one URL each.
    database_url: str = "sqlite:///var/nimbus.db"
    blob_url: str = "file://var/blobs"
    aws_endpoint_url: str | None = None  # moto or another S3-compatible endpoint
    aws_region: str | None = None  # AWS_REGION (else AWS_DEFAULT_REGION / the profile's region)
    # Local working directory for caches (downloaded index segments, job scratch).
    var_dir: Path = Path("var")
    # The interface this process's servers listen on: the search service, a crawler's /metrics.
    host: str = "127.0.0.1"

    crawl: CrawlSettings = field(default_factory=CrawlSettings)
    search: SearchSettings = field(default_factory=SearchSettings)
    index: IndexSettings = field(default_factory=IndexSettings)
    deploy: DeploySettings = field(default_factory=DeploySettings)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Read ``NIMBUS_*`` variables (and AWS's own ``AWS_ENDPOINT_URL``, ``AWS_REGION``),
        one for each setting of the top and of every section."""
        env = os.environ if env is None else env
        values: dict[str, object] = {}
        for name, (_, spec) in _SETTINGS.items():
            key = env_name(name)
            raw = env.get(key)
            if raw is None or raw == "":
                continue
            values[name] = convert(key, raw, spec.default)
        settings = cls.of(**values)
        settings.validate()
        return settings

    @staticmethod
    def env_names() -> frozenset[str]:
        """Every environment variable a setting is read from (deployment code checks against it)."""
        return frozenset(env_name(name) for name in _settings_by_name())

    @classmethod
    def of(cls, **values: object) -> Settings:
        """The embedded defaults with some settings changed, by their flat names
        (``Settings.of(crawl_delay=0.0, mr_runner="inline")``); not validated, as a
        constructor is not."""
        return cls()._changed(values)

    def with_overrides(self, **changes: object) -> Settings:
        """A copy with some settings changed, by their flat names (CLI flags override the
        environment); ``None`` leaves a setting as it is."""
        settings = self._changed({k: v for k, v in changes.items() if v is not None})
        settings.validate()
        return settings

    def _changed(self, values: Mapping[str, object]) -> Settings:
        """A copy with ``values`` (flat names) put into the top or their sections; the field
        types are checked by ``validate()``, not here."""
        top: dict[str, Any] = {}
        per_section: dict[str, dict[str, Any]] = {}
        for name, value in values.items():
            if name not in _SETTINGS:
                raise TypeError(f"Settings has no setting named {name!r}")
            section = _SETTINGS[name][0]
            if section is None:
                top[name] = value
            else:
                per_section.setdefault(section, {})[name] = value
        for section, changed in per_section.items():
            top[section] = replace(getattr(self, section), **changed)
        return replace(self, **top)

    def validate(self) -> None:
        if not (self.database_url.startswith("sqlite") or self.database_url.startswith("mysql")):
            raise SettingsError(
                f"NIMBUS_DATABASE_URL={self.database_url!r}: use sqlite:///path or "
                "mysql+pymysql://user:password@host:3306/db"
            )
        if not (self.blob_url.startswith("file://") or self.blob_url.startswith("s3://")):
            raise SettingsError(f"NIMBUS_BLOB_URL={self.blob_url!r}: use file://path or s3://bucket/prefix")
        self.crawl.validate()
        self.search.validate()
        self.index.validate()
        self.deploy.validate()


def _settings_by_name() -> dict[str, tuple[str | None, Field[Any]]]:
    """Every setting by its flat name: the section holding it (``None``: the top) and its field.

    A field of ``Settings`` whose value is a dataclass is a section. A name in two places
    would be one variable for two settings, so it stops the import."""
    found: dict[str, tuple[str | None, Field[Any]]] = {}
    defaults = Settings()
    for outer in fields(Settings):
        value = getattr(defaults, outer.name)
        inner: list[tuple[str | None, Field[Any]]] = (
            [(outer.name, f) for f in fields(value)] if is_dataclass(value) else [(None, outer)]
        )
        for section, spec in inner:
            if spec.name in found:
                raise TypeError(
                    f"setting {spec.name!r} is in two places: {found[spec.name][0]} and {section}"
                )
            found[spec.name] = (section, spec)
    return found


_SETTINGS = _settings_by_name()
