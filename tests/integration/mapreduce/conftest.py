"""This package's builds run MapReduce tasks on the local runner: they keep the tasks' code zip
and numba's cache of the index job's kernel under XDG_CACHE_HOME
(``services.indexing.runner.task_packages_folder``), here a folder of the test run's, not
the user's ~/.cache."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(autouse=True, scope="package")
def private_cache_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("cache-home")
    before = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(folder)
    try:
        yield folder
    finally:
        if before is None:
            os.environ.pop("XDG_CACHE_HOME", None)
        else:
            os.environ["XDG_CACHE_HOME"] = before
