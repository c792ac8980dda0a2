"""The template, read once for the template tests."""

from __future__ import annotations

from typing import Any

import pytest

from services.deploy import template


@pytest.fixture(scope="module")
def tpl() -> dict[str, Any]:
    return template.load()
