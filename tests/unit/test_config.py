"""Settings from the environment: parsed, validated, named in errors."""

from __future__ import annotations

from dataclasses import fields, is_dataclass
from pathlib import Path

import pytest

from services.config import Settings, SettingsError


def test_keep_segments_from_the_environment():
    assert Settings.from_env({}).index.keep_segments == 2
    assert Settings.from_env({"NIMBUS_KEEP_SEGMENTS": "5"}).index.keep_segments == 5
    assert Settings.from_env({"NIMBUS_KEEP_SEGMENTS": "0"}).index.keep_segments == 0  # keep all
    with pytest.raises(SettingsError, match="NIMBUS_KEEP_SEGMENTS=-1"):
        Settings.from_env({"NIMBUS_KEEP_SEGMENTS": "-1"})


def test_the_merge_policy_from_the_environment():
    index = Settings.from_env({}).index
    assert (index.merge_deltas, index.merge_share) == (8, 0.10)
    index = Settings.from_env({"NIMBUS_MERGE_DELTAS": "1", "NIMBUS_MERGE_SHARE": "0.5"}).index
    assert (index.merge_deltas, index.merge_share) == (1, 0.5)
    with pytest.raises(SettingsError, match="NIMBUS_MERGE_DELTAS=0"):
        Settings.from_env({"NIMBUS_MERGE_DELTAS": "0"})
    with pytest.raises(SettingsError, match="NIMBUS_MERGE_SHARE=0.0"):
        Settings.from_env({"NIMBUS_MERGE_SHARE": "0"})


def test_record_cache_bytes_from_the_environment():
    assert Settings.from_env({}).search.record_cache_bytes == 2 << 30
    assert Settings.from_env({"NIMBUS_RECORD_CACHE_BYTES": "0"}).search.record_cache_bytes == 0  # off
    with pytest.raises(SettingsError, match="NIMBUS_RECORD_CACHE_BYTES=-5"):
        Settings.from_env({"NIMBUS_RECORD_CACHE_BYTES": "-5"})


def test_the_feedback_pool_from_the_environment():
    assert Settings.from_env({}).search.feedback_pool == 30
    assert Settings.from_env({"NIMBUS_FEEDBACK_POOL": "0"}).search.feedback_pool == 0  # every match
    for wrong in ("-1", "100001", "1000000000"):
        with pytest.raises(SettingsError, match=f"NIMBUS_FEEDBACK_POOL={wrong}: use 0"):
            Settings.from_env({"NIMBUS_FEEDBACK_POOL": wrong})


# Every setting's environment variable and where the setting lives (its section, if any): a
# variable must never change its name when the code is reorganised.
PINNED = {
    "NIMBUS_DATABASE_URL": "database_url",
    "NIMBUS_BLOB_URL": "blob_url",
    "NIMBUS_MR_RUNNER": "index.mr_runner",
    "NIMBUS_MR_MAP_TASKS": "index.mr_map_tasks",
    "NIMBUS_EMR_RELEASE_LABEL": "index.emr_release_label",
    "NIMBUS_EMR_SERVICE_ROLE": "deploy.emr_service_role",
    "NIMBUS_EMR_INSTANCE_PROFILE": "deploy.emr_instance_profile",
    "NIMBUS_EMR_SUBNET": "deploy.emr_subnet",
    "NIMBUS_EMR_MASTER_SG": "deploy.emr_master_sg",
    "NIMBUS_EMR_SLAVE_SG": "deploy.emr_slave_sg",
    "NIMBUS_EMR_SERVICE_SG": "deploy.emr_service_sg",
    "NIMBUS_RELEASE_URL": "deploy.release_url",
    "NIMBUS_CLOUDWATCH_NAMESPACE": "deploy.cloudwatch_namespace",
    "NIMBUS_STACK_NAME": "deploy.stack_name",
    "NIMBUS_EMR_INSTANCE_TYPE": "index.emr_instance_type",
    "NIMBUS_EMR_CORE_INSTANCES": "index.emr_core_instances",
    "NIMBUS_KEEP_SEGMENTS": "index.keep_segments",
    "NIMBUS_INDEX_EVERY": "index.index_every",
    "NIMBUS_UPDATE_EVERY": "index.update_every",
    "NIMBUS_MERGE_DELTAS": "index.merge_deltas",
    "NIMBUS_MERGE_SHARE": "index.merge_share",
    "AWS_ENDPOINT_URL": "aws_endpoint_url",
    "AWS_REGION": "aws_region",
    "NIMBUS_DATABASE_INSTANCE": "deploy.database_instance",
    "NIMBUS_DATABASE_HOST": "deploy.database_host",
    "NIMBUS_DATABASE_PORT": "deploy.database_port",
    "NIMBUS_DATABASE_NAME": "deploy.database_name",
    "NIMBUS_DATABASE_SECRET": "deploy.database_secret",
    "NIMBUS_DATABASE_ADMIN_SECRET": "deploy.database_admin_secret",
    "NIMBUS_DATABASE_WORKER_SECRET": "deploy.database_worker_secret",
    "NIMBUS_DATABASE_COMMITTER_SECRET": "deploy.database_committer_secret",
    "NIMBUS_DATABASE_SEARCH_SECRET": "deploy.database_search_secret",
    "NIMBUS_DATABASE_INDEXER_SECRET": "deploy.database_indexer_secret",
    "NIMBUS_DATABASE_TLS_CA": "deploy.database_tls_ca",
    "NIMBUS_VAR_DIR": "var_dir",
    "NIMBUS_USER_AGENT": "crawl.user_agent",
    "NIMBUS_CRAWL_DELAY": "crawl.crawl_delay",
    "NIMBUS_MAX_CRAWL_DELAY": "crawl.max_crawl_delay",
    "NIMBUS_CONCURRENCY": "crawl.concurrency",
    "NIMBUS_PER_HOST_CONCURRENCY": "crawl.per_host_concurrency",
    "NIMBUS_MAX_PAGES": "crawl.max_pages",
    "NIMBUS_MAX_DEPTH": "crawl.max_depth",
    "NIMBUS_MAX_PAGES_PER_HOST": "crawl.max_pages_per_host",
    "NIMBUS_FETCH_TIMEOUT": "crawl.fetch_timeout",
    "NIMBUS_CONNECT_TIMEOUT": "crawl.connect_timeout",
    "NIMBUS_READ_TIMEOUT": "crawl.read_timeout",
    "NIMBUS_HEAD_FIRST": "crawl.head_first",
    "NIMBUS_VERIFY_TLS": "crawl.verify_tls",
    "NIMBUS_RETRY_BACKOFF": "crawl.retry_backoff",
    "NIMBUS_MAX_ATTEMPTS": "crawl.max_attempts",
    "NIMBUS_MAX_REDIRECTS": "crawl.max_redirects",
    "NIMBUS_LANGUAGES": "crawl.languages",
    "NIMBUS_SITEMAPS": "crawl.sitemaps",
    "NIMBUS_SOFT404_PROBE": "crawl.soft404_probe",
    "NIMBUS_METRICS_PORT": "crawl.metrics_port",
    "NIMBUS_HEARTBEAT_SECONDS": "crawl.heartbeat_seconds",
    "NIMBUS_RECRAWL_MIN_INTERVAL": "crawl.recrawl_min_interval",
    "NIMBUS_RECRAWL_MAX_INTERVAL": "crawl.recrawl_max_interval",
    "NIMBUS_PARTITIONS": "crawl.partitions",
    "NIMBUS_CRAWL_PROCESSES": "crawl.crawl_processes",
    "NIMBUS_SEND_WINDOW": "crawl.send_window",
    "NIMBUS_PARTITION_IDS": "crawl.partition_ids",
    "NIMBUS_MAX_BODY_BYTES": "crawl.max_body_bytes",
    "NIMBUS_BLOCK_MAX_BYTES": "crawl.block_max_bytes",
    "NIMBUS_BLOCK_MAX_DOCS": "crawl.block_max_docs",
    "NIMBUS_FLUSH_INTERVAL": "crawl.flush_interval",
    "NIMBUS_BATCH_SIZE": "crawl.batch_size",
    "NIMBUS_ALLOWED_HOSTS": "crawl.allowed_hosts",
    "NIMBUS_NEAR_DUPLICATES": "index.near_duplicates",
    "NIMBUS_PAGERANK_WEIGHT": "search.pagerank_weight",
    "NIMBUS_ENTRY_PAGE_WEIGHT": "search.entry_page_weight",
    "NIMBUS_PAGERANK_DAMPING": "index.pagerank_damping",
    "NIMBUS_PAGERANK_TOLERANCE": "index.pagerank_tolerance",
    "NIMBUS_PAGERANK_MAX_ITERATIONS": "index.pagerank_max_iterations",
    "NIMBUS_PAGERANK_ENGINE": "index.pagerank_engine",
    "NIMBUS_PAGERANK_LEVEL": "index.pagerank_level",
    "NIMBUS_AND_MIN_RESULTS": "search.and_min_results",
    "NIMBUS_FEEDBACK_DOCS": "search.feedback_docs",
    "NIMBUS_FEEDBACK_TERMS": "search.feedback_terms",
    "NIMBUS_FEEDBACK_WEIGHT": "search.feedback_weight",
    "NIMBUS_FEEDBACK_MAX_DF": "search.feedback_max_df",
    "NIMBUS_FEEDBACK_CAP": "search.feedback_cap",
    "NIMBUS_FEEDBACK_MIN_TERMS": "search.feedback_min_terms",
    "NIMBUS_FEEDBACK_EXPLICIT_OR": "search.feedback_explicit_or",
    "NIMBUS_FEEDBACK_POOL": "search.feedback_pool",
    "NIMBUS_HOST": "host",
    "NIMBUS_PORT": "search.port",
    "NIMBUS_SERVE_WORKERS": "search.serve_workers",
    "NIMBUS_METRICS_DIR": "search.metrics_dir",
    "NIMBUS_RESULTS_PER_PAGE": "search.results_per_page",
    "NIMBUS_RESULT_CACHE_SIZE": "search.result_cache_size",
    "NIMBUS_RESULT_CACHE_SECONDS": "search.result_cache_seconds",
    "NIMBUS_RECORD_CACHE_BYTES": "search.record_cache_bytes",
    "NIMBUS_RATE_LIMIT": "search.rate_limit",
    "NIMBUS_PROXY_CIDRS": "search.proxy_cidrs",
    "NIMBUS_ADMIN_TOKEN": "search.admin_token",
    "NIMBUS_ADMIN_URL": "search.admin_url",
    "NIMBUS_WEATHER_URL": "search.weather_url",
    "NIMBUS_WEATHER_TIMEOUT": "search.weather_timeout",
    "NIMBUS_WEATHER_CACHE_SECONDS": "search.weather_cache_seconds",
}
# Values that pass validation, for the settings that check more than their type.
VALID_TEXT = {
    "NIMBUS_DATABASE_URL": "sqlite:///elsewhere.db",
    "NIMBUS_BLOB_URL": "s3://bucket/prefix",
    "NIMBUS_MR_RUNNER": "emr",
    "NIMBUS_PAGERANK_ENGINE": "mapreduce",
    "NIMBUS_PAGERANK_LEVEL": "host",
    "NIMBUS_PARTITION_IDS": "0-3",
    "NIMBUS_RATE_LIMIT": "5/second",
    "NIMBUS_PROXY_CIDRS": "10.40.0.0/20,10.40.16.0/20",
    "NIMBUS_WEATHER_URL": "http://weather.test",
}


def _at(settings: object, path: str) -> object:
    for part in path.split("."):
        settings = getattr(settings, part)
    return settings


def _other_value(variable: str, default: object) -> tuple[str, object]:
    """A variable's text other than its default, and the value it should read as."""
    if variable in VALID_TEXT:
        return VALID_TEXT[variable], VALID_TEXT[variable]
    if isinstance(default, bool):
        return ("0", False) if default else ("1", True)
    if isinstance(default, int):
        return str(default + 1), default + 1
    if isinstance(default, float):
        return repr(default / 2), default / 2
    if isinstance(default, Path):
        return "elsewhere", Path("elsewhere")
    return "some-text", "some-text"


def test_every_setting_is_pinned_once():
    paths = []
    for spec in fields(Settings):
        value = getattr(Settings(), spec.name)
        paths += [f"{spec.name}.{f.name}" for f in fields(value)] if is_dataclass(value) else [spec.name]
    assert sorted(paths) == sorted(PINNED.values())
    names = [path.rpartition(".")[2] for path in paths]
    assert len(set(names)) == len(names)  # one name, one variable, whatever the section


@pytest.mark.parametrize("variable", sorted(PINNED))
def test_each_variable_still_sets_its_setting(variable):
    path = PINNED[variable]
    default = _at(Settings(), path)
    text, value = _other_value(variable, default)
    assert value != default
    assert _at(Settings.from_env({variable: text}), path) == value
    name = path.rpartition(".")[2]  # CLI flags and tests override by the flat name
    assert _at(Settings().with_overrides(**{name: value}), path) == value
    assert _at(Settings.of(**{name: value}), path) == value


def test_an_unknown_setting_is_named():
    with pytest.raises(TypeError, match="max_pagez"):
        Settings().with_overrides(max_pagez=5)
    with pytest.raises(TypeError, match="'crawl'"):  # sections are not settings
        Settings.of(crawl=None)


def test_the_admin_token_is_never_shown():
    assert "s3cret-token" not in repr(Settings().with_overrides(admin_token="s3cret-token"))
