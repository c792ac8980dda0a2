"""MySQL literals built by type (``storage.bulk_sql.mysql_literal``): numbers exact, NULL, strings
through the connection's quoting, and nothing else."""

from __future__ import annotations

import math

import pytest

from services.storage.sql.bulk_sql import mysql_literal


def _quote(text: str) -> str:
    return "Q[" + text + "]"


def test_numbers_null_and_strings() -> None:
    assert mysql_literal(None, _quote) == "NULL"
    assert mysql_literal(True, _quote) == "1" and mysql_literal(False, _quote) == "0"
    assert mysql_literal(-42, _quote) == "-42"
    assert float(mysql_literal(1764123456.123456, _quote)) == 1764123456.123456  # repr round-trips
    assert mysql_literal("it's", _quote) == "Q[it's]"  # strings only through the quoting


def test_what_mysql_cannot_store_is_refused() -> None:
    for bad in (math.inf, -math.inf, math.nan):
        with pytest.raises(ValueError, match="not a finite number"):
            mysql_literal(bad, _quote)
    with pytest.raises(TypeError, match="no MySQL literal for bytes"):
        mysql_literal(b"raw", _quote)
