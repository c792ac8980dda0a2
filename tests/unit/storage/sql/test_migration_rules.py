"""Every migration expands only (expand_contract.py's rules), so release N−1 runs on release
N's schema; each rule catches the breach it names."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.storage.sql.migrate import MIGRATIONS
from services.storage.sql.models import Base
from tests.unit.storage.sql.expand_contract import RULES, lint, load

VERSIONS = sorted((MIGRATIONS / "versions").glob("[0-9]*.py"))


@pytest.mark.parametrize("path", VERSIONS, ids=[p.stem for p in VERSIONS])
def test_every_migration_expands_only(path: Path) -> None:
    broken = lint(load(path), path)
    assert not broken, "\n".join(map(str, broken))


def test_what_a_migration_contracts_no_model_uses() -> None:
    for path in VERSIONS:
        for item in getattr(load(path), "contract", ()):
            table, _, column = item.partition(".")
            mapped = Base.metadata.tables.get(table)
            assert mapped is None or (column and column not in mapped.c), (
                f"{path.name} drops {item}, which this release's models still use"
            )


IN_BATCH = 'with op.batch_alter_table("hosts") as b:\n        b.'
BREACHES = {
    "no-drop": ['op.drop_table("hosts")', 'op.drop_column("documents", "lang")'],
    "no-rename": [
        'op.rename_table("hosts", "sites")',
        IN_BATCH + 'alter_column("pages", new_column_name="fetched")',
    ],
    "new-column-nullable-or-defaulted": [
        'op.add_column("hosts", sa.Column("country", sa.String(2), nullable=False))',
        IN_BATCH + 'add_column(sa.Column("c", sa.Integer(), nullable=False))',
    ],
    "no-tightening": [
        'op.alter_column("frontier", "last_error", nullable=False)',
        'op.alter_column("documents", "title", type_=sa.String(100))',
    ],
    "no-unique-on-existing": ['op.create_index("ix_u", "documents", ["url"], unique=True)'],
    "no-raw-ddl": ['op.execute("ALTER TABLE hosts DROP COLUMN pages")'],
}
ALLOWED = [
    'op.add_column("hosts", sa.Column("country", sa.String(2), nullable=True))',
    'op.add_column("hosts", sa.Column("n", sa.Integer(), nullable=False, server_default="0"))',
    'op.create_table("t", sa.Column("id", sa.Integer(), primary_key=True), sa.Column("x", sa.Text()))\n'
    '    op.add_column("t", sa.Column("y", sa.Text(), nullable=False))\n'
    '    op.create_index("ix_t_x", "t", ["x"], unique=True)',
    'op.create_index("ix_hosts_pages", "hosts", ["pages"])',
    'op.drop_index("ix_frontier_host", table_name="frontier")',
    'op.execute("UPDATE hosts SET pages = 0 WHERE pages IS NULL")',
]


def _migration(
    tmp_path: Path, body: str, *, name: str = "0007_test.py", down: str = "pass", **extra: str
) -> Path:
    path = tmp_path / name
    lines = "".join(f"{key} = {value}\n" for key, value in extra.items())
    path.write_text(
        "import sqlalchemy as sa\nfrom alembic import op\n\n"
        f'revision = "{name[:4]}"\ndown_revision = "0006"\n{lines}\n\n'
        f"def upgrade() -> None:\n    {body}\n\n\n"
        f"def downgrade() -> None:\n    {down}\n"
    )
    return path


@pytest.mark.parametrize(("rule", "body"), [(r, b) for r, bodies in BREACHES.items() for b in bodies])
def test_each_breach_is_named_by_its_rule(tmp_path: Path, rule: str, body: str) -> None:
    path = _migration(tmp_path, body, down='op.drop_table("t")')
    broken = lint(load(path), path)
    assert [v.rule for v in broken] == [rule]
    assert f"rule {rule!r}" in str(broken[0]) and RULES[rule] in str(broken[0])


@pytest.mark.parametrize("body", ALLOWED)
def test_expanding_passes(tmp_path: Path, body: str) -> None:
    path = _migration(tmp_path, body, down='op.drop_table("t")')
    assert lint(load(path), path) == []


def test_a_declared_contract_may_drop_and_other_rules_still_hold(tmp_path: Path) -> None:
    body = 'op.drop_column("hosts", "sitemaps_fetched_at")\n    op.drop_table("old_things")'
    declared = _migration(
        tmp_path, body, down='op.drop_table("t")', contract='("hosts.sitemaps_fetched_at", "old_things")'
    )
    assert lint(load(declared), declared) == []
    no_down = _migration(tmp_path, "pass", name="0007_nothing.py")
    assert [v.rule for v in lint(load(no_down), no_down)] == ["has-downgrade"]
    skipped = _migration(tmp_path, "pass", name="0009_skips.py", down='op.drop_table("t")')
    assert [v.rule for v in lint(load(skipped), skipped)] == ["numbered"]
