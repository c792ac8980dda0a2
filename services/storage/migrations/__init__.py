"""Alembic migrations of the metadata schema (revisions in ``versions/``); see migrate.py."""
