"""Fixtures shared by the search tests."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from services.search.http.app import create_app


@pytest.fixture
def client(published):
    """The app on the module's ``published`` settings, re-checking the index on every request."""
    with TestClient(create_app(published, recheck_seconds=0)) as c:
        yield c
