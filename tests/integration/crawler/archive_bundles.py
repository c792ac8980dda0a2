"""Bundles of the sample data for the archive-crawl tests, and what a crawl stored."""

from __future__ import annotations

import shutil
from pathlib import Path

from sqlalchemy import select

from services.storage.blobs.blobstore import open_blobstore
from services.storage.formats.records import Record, iter_records
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.models import Document, UrlAlias
from services.storage.sql.schema import init_db

WIKI = "wiki/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"


def bundle(folder: Path, toml: str, files: dict[str, Path | bytes]) -> Path:
    """A bundle folder: ``bundle.toml`` and its files (copies of sample files, or bytes)."""
    folder.mkdir(parents=True)
    (folder / "bundle.toml").write_text(toml)
    for name, source in files.items():
        if isinstance(source, bytes):
            (folder / name).write_bytes(source)
        else:
            shutil.copyfile(source, folder / name)
    return folder


def documents(database_url: str) -> dict[str, tuple[str, str, str]]:
    """url -> (doc_id, title, lang) of every stored document."""
    engine = make_engine(database_url)
    init_db(engine)
    try:
        with session_factory(engine)() as s:
            return {d.url: (d.doc_id, d.title, d.lang) for d in s.scalars(select(Document))}
    finally:
        engine.dispose()


def aliases(database_url: str) -> dict[str, str]:
    engine = make_engine(database_url)
    try:
        with session_factory(engine)() as s:
            return {a.url: a.target_url for a in s.scalars(select(UrlAlias))}
    finally:
        engine.dispose()


def records(database_url: str, blob_url: str, endpoint: str | None = None) -> dict[str, Record]:
    """url -> the stored record of each document (its text and links)."""
    engine = make_engine(database_url)
    blobs = open_blobstore(blob_url, endpoint)
    try:
        with session_factory(engine)() as s:
            names = set(s.scalars(select(Document.record_block)))
        return {r.url: r for name in sorted(names) for r in iter_records(blobs.get(name), name)}
    finally:
        engine.dispose()
