"""Alembic migrations of the metadata schema (revisions in ``versions/``); see migrate.py."""

# The newest revision in versions/ (tests/unit/storage/test_schema_head.py holds the two
# together). init_db compares a database's stamp with it before importing Alembic: that
# import is a large share of a crawler process's start (docs/benchmarks.md), paid by every
# worker that starts.
HEAD = "0006"
