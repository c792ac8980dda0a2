"""The expand/contract rules every migration's upgrade() is held to, so release N−1 runs on
release N's schema (docs/database.md): its operations are recorded by running upgrade() against
a stand-in for ``alembic.op``, then checked one rule at a time.

A release only expands: new tables, new nullable or server-defaulted columns, new indexes. A
column or table leaves in two releases: release K stops using it (its models no longer map it),
release K+1 drops it, naming it in the migration's ``contract = ("table.column", "table")``.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import sqlalchemy as sa

RULES = {
    "no-drop": "a table or column the previous release may still use is dropped: drop it one release "
    "after the release that stopped using it, and name it in the migration's `contract`",
    "no-rename": "a rename breaks the previous release, which still uses the old name: add the new "
    "table or column, copy, and drop the old one releases later",
    "new-column-nullable-or-defaulted": "a NOT NULL column without a server default on an existing table "
    "refuses the previous release's inserts, which do not know it: make it nullable or give it a "
    "server_default",
    "no-tightening": "making an existing column NOT NULL, or changing its type, breaks rows and statements "
    "of the previous release: add a new column instead",
    "no-unique-on-existing": "a unique index or constraint on an existing table refuses rows the previous "
    "release may write: add it in a later release, once no release writes duplicates",
    "no-raw-ddl": "DDL in op.execute() escapes these checks: use op's operations",
    "has-downgrade": "every migration needs a downgrade, for `nimbus migrate --to`",
    "numbered": "revisions are numbered in order (0001, 0002, ...: the parent's number plus one, the file "
    "named after it), so a release can tell a newer release's schema from a foreign one",
}


@dataclass(frozen=True)
class Operation:
    name: str
    table: str | None
    args: tuple[Any, ...]
    kwargs: dict[str, Any]


@dataclass(frozen=True)
class Violation:
    revision: str
    rule: str
    detail: str

    def __str__(self) -> str:
        return f"migration {self.revision}: rule {self.rule!r}: {self.detail}: {RULES[self.rule]}"


@dataclass
class Recorder:
    """Stands in for ``alembic.op`` while upgrade() runs: every call is recorded, none run."""

    ops: list[Operation] = field(default_factory=list)
    table: str | None = None  # inside batch_alter_table: the table every call is about

    def f(self, name: str) -> str:
        return name

    @contextmanager
    def batch_alter_table(self, table_name: str, **_kw: Any) -> Iterator[Recorder]:
        yield Recorder(self.ops, table_name)

    def __getattr__(self, name: str) -> Any:
        def record(*args: Any, **kwargs: Any) -> None:
            self.ops.append(Operation(name, self.table or _table_of(name, args, kwargs), args, kwargs))

        return record


_TABLE_ARG = {  # alembic.op's operations: where the table's name is, positional index or keyword
    "create_table": (0, "table_name"),
    "drop_table": (0, "table_name"),
    "add_column": (0, "table_name"),
    "drop_column": (0, "table_name"),
    "alter_column": (0, "table_name"),
    "rename_table": (0, "old_table_name"),
    "create_index": (1, "table_name"),
    "drop_index": (1, "table_name"),
    "create_unique_constraint": (1, "table_name"),
    "drop_constraint": (1, "table_name"),
    "create_foreign_key": (1, "source_table"),
}


def _table_of(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    if name not in _TABLE_ARG:
        return None
    index, key = _TABLE_ARG[name]
    return str(kwargs[key]) if key in kwargs else (str(args[index]) if len(args) > index else None)


def load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"nimbus_migration_{path.stem}", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def record(module: ModuleType) -> list[Operation]:
    recorder = Recorder()
    saved = module.op
    module.op = recorder
    try:
        module.upgrade()
    finally:
        module.op = saved
    return recorder.ops


def lint(module: ModuleType, path: Path | None = None) -> list[Violation]:
    """Every rule ``module``'s upgrade() breaks (none: it expands only)."""
    revision = str(module.revision)
    found: list[Violation] = []

    def broke(rule: str, detail: str) -> None:
        found.append(Violation(revision, rule, detail))

    ops = record(module)
    contract = set(getattr(module, "contract", ()))
    new_tables = {op.table for op in ops if op.name == "create_table"}
    for op in ops:
        existing = op.table not in new_tables
        if op.name == "drop_table" and op.table not in contract:
            broke("no-drop", f"drop_table({op.table!r})")
        elif op.name == "drop_column":
            column = op.kwargs.get("column_name", op.args[-1])
            if f"{op.table}.{column}" not in contract and existing:
                broke("no-drop", f"drop_column({op.table!r}, {column!r})")
        elif op.name == "rename_table" or (op.name == "alter_column" and op.kwargs.get("new_column_name")):
            broke("no-rename", f"{op.name} on {op.table!r}")
        elif op.name == "alter_column" and existing:
            if op.kwargs.get("nullable") is False or op.kwargs.get("type_") is not None:
                broke("no-tightening", f"alter_column on {op.table!r} ({sorted(op.kwargs)})")
        elif op.name == "add_column" and existing:
            column = next(a for a in (*op.args, *op.kwargs.values()) if isinstance(a, sa.Column))
            if not column.nullable and column.server_default is None:
                broke("new-column-nullable-or-defaulted", f"add_column({op.table!r}, {column.name!r})")
        elif existing and (
            (op.name == "create_index" and op.kwargs.get("unique")) or op.name == "create_unique_constraint"
        ):
            broke("no-unique-on-existing", f"{op.name} on {op.table!r}")
        elif op.name == "execute":
            sql = str(op.args[0] if op.args else op.kwargs.get("sqltext", ""))
            if re.match(r"\s*(DROP|ALTER|RENAME|TRUNCATE)\b", sql, re.IGNORECASE):
                broke("no-raw-ddl", f"execute({sql[:60]!r})")
    if not _does_something(module.downgrade):
        broke("has-downgrade", "downgrade() does nothing")
    parent = module.down_revision
    numbered = revision.isdigit() and len(revision) == 4
    if parent is not None:
        numbered = (
            numbered and isinstance(parent, str) and parent.isdigit() and int(revision) == int(parent) + 1
        )
    if path is not None:
        numbered = numbered and path.name.startswith(f"{revision}_")
    if not numbered:
        broke("numbered", f"revision {revision!r} after {parent!r} in {path.name if path else '?'}")
    return found


def _does_something(function: Any) -> bool:
    body = ast.parse(inspect.getsource(function).strip()).body[0]
    assert isinstance(body, ast.FunctionDef)
    statements = [s for s in body.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    return any(not isinstance(s, (ast.Pass, ast.Raise)) for s in statements)
