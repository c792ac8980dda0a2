"""Alembic migrations of the metadata schema (revisions in ``versions/``); see migrate.py."""

# The newest revision in versions/ (tests/unit/storage/test_schema_head.py holds the two
# together). init_db compares a database's stamp with it before importing Alembic: that
# import is a large share of a crawler process's start (docs/benchmarks.md), paid by every
# worker that starts.
HEAD = "0012"


def is_newer(revision: str, than: str = HEAD) -> bool:
    """``revision`` comes after ``than``: revisions are numbered in order (0001, 0002, ...;
    the migration rules' test holds every revision to its parent's number plus one), so a
    release can tell a newer release's schema, which it runs on (expand/contract), from a
    foreign one."""
    return revision.isdigit() and than.isdigit() and int(revision) > int(than)
