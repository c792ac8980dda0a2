"""docs/database.md's grant table is the one `nimbus db users` applies (storage/sql/grants.py)."""

from __future__ import annotations

from pathlib import Path

from services.storage.sql.grants import ROLE_GRANTS, ROLES

DOC = Path(__file__).resolve().parents[4] / "docs" / "database.md"
LETTERS = {"S": "SELECT", "I": "INSERT", "U": "UPDATE", "D": "DELETE"}


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
                documented[role][table] = tuple(LETTERS[letter] for letter in cell.split())
    assert documented == {role: dict(grants) for role, grants in ROLE_GRANTS.items()}
