"""Fixtures shared by the crawler's integration tests."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from tests.integration.crawler.slow_chain import slow_chain


@pytest.fixture
def slow_site() -> Iterator[tuple[str, threading.Event, list[str]]]:
    """The slow chain of pages (slow_chain.py): its base URL, its gate and the paths asked."""
    with slow_chain() as site:
        yield site
