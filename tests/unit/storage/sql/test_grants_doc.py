"""docs/database.md's grant table is the one `nimbus db users` applies (storage/sql/grants.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from services.storage.sql import grants
from services.storage.sql.grants import ROLE_GRANTS, ROLES, Privilege, role_privileges

DOC = Path(__file__).resolve().parents[4] / "docs" / "database.md"
LETTERS = {"S": "SELECT", "I": "INSERT", "U": "UPDATE", "D": "DELETE"}
CELL_GRANT = re.compile(r"([SIUD])(?:\(([^)]*)\))?")  # "S", "U(removed_at, commit_seq)"


def _grants(cell: str) -> tuple[str, ...]:
    said = CELL_GRANT.findall(cell)
    assert " ".join(f"{letter}({cols})" if cols else letter for letter, cols in said) == cell, cell
    return tuple(f"{LETTERS[letter]} ({cols})" if cols else LETTERS[letter] for letter, cols in said)


def test_the_documented_grants_are_the_applied_ones() -> None:
    lines = DOC.read_text(encoding="utf-8").splitlines()
    header = "| table | " + " | ".join(ROLES) + " |"
    start = lines.index(header) + 2  # past the header and its rule
    documented: dict[str, dict[str, tuple[str, ...]]] = {role: {} for role in ROLES}
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        table, *cells = (cell.strip() for cell in line.strip("|").split("|"))
        for role, cell in zip(ROLES, cells, strict=True):
            if cell != "–":
                documented[role][table] = _grants(cell)
    assert documented == {role: dict(grants) for role, grants in ROLE_GRANTS.items()}


def test_a_column_grant_is_one_privilege_per_column(monkeypatch: pytest.MonkeyPatch) -> None:
    assert {p for p in role_privileges("search") if p.table == "documents"} == {
        Privilege("documents", "SELECT"),
        Privilege("documents", "UPDATE", "removed_at"),
        Privilege("documents", "UPDATE", "commit_seq"),
    }
    assert str(Privilege("documents", "UPDATE", "removed_at")) == "UPDATE (removed_at) ON documents"
    monkeypatch.setitem(grants.ROLE_GRANTS, "search", {"documents": ("UPDATE(url)",)})
    with pytest.raises(ValueError, match="search's grant 'UPDATE\\(url\\)' on documents"):
        role_privileges("search")
