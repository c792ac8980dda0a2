"""This package's builds run MapReduce tasks on the local runner: the tasks' code zip and numba's
cache of the index job's kernel go to a folder of the test run's (tests/integration/mapreduce/conftest.py)."""

from __future__ import annotations

from tests.integration.mapreduce.conftest import private_cache_home

__all__ = ["private_cache_home"]
