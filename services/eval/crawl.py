"""A judged collection stored the way users store one: as an archive crawl of a ``jsonl`` bundle.

``nimbus eval`` measures the pipeline users run, so the collection's documents take the
same path as ``nimbus archive crawl`` of a JSON-lines bundle: the archives' reader, the
crawl's ledger, the committer (duplicates collapsed into ``duplicate_urls`` rows, empty
documents skipped) and the one ``DocumentWriter``.

The bundle is made in the eval's state directory, ``<state>/bundles/<collection>/``: a
``bundle.toml`` and a link to the collection's ``docs.jsonl`` (or BEIR's ``corpus.jsonl``;
a copy where the file system has no links). The collection's own folder is left alone:
its queries and judgments are no documents. The folder has the collection's name, so the
documents get the URLs ``nimbus eval`` always gave them
(``https://<collection>.collection.invalid/doc/<id>``). The description names the docs
file's size and SHA-256: the same collection again is the same, finished bundle (nothing is
read or stored twice); a changed one is a new bundle whose documents replace the stored
ones as a recrawl's newer captures do.

Two decisions a judged collection asks of the crawl path:
- **Empty documents** (Cranfield's 471 and 995) are skipped, as every archive crawl skips
  them: nothing can retrieve a document without words, and the index's document count
  (IDF, average field lengths) is that of the documents with words, as Lucene's BM25 counts
  only documents that have the field. Their judgments stay (relevant documents no run
  finds, as before). On Cranfield this moves MAP from 0.3492 to 0.3491 and Recall@100 from
  0.7825 to 0.7830; nDCG@10, P@10 and MRR are unchanged (README).
- **Copies** (equal title and text) are one document, as in a crawl; the run lists every
  copy's id where the document ranks (``doc_ids``), since each copy is judged on its own.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from services.archives.bundle import DESCRIPTION_FILE
from services.config import Settings
from services.crawler.archive.register import register_bundle
from services.crawler.crawl import run_crawl
from services.crawler.frontier import archive_batches
from services.eval.collection import Collection
from services.eval.errors import CollectionError
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.models import Document, DuplicateUrl
from services.storage.sql.schema import init_db

LANGUAGE = "en"  # the collections nimbus eval reads are English (as its stored documents always were)


@dataclass
class Stored:
    """What the archive crawl stored of the collection."""

    doc_ids: dict[int, list[str]] = field(default_factory=dict)  # doc_num -> the ids it stands for
    documents: int = 0  # rows of the collection in the documents table
    copies: int = 0  # collection documents stored as another's duplicate URL
    seconds: float = 0.0

    @property
    def per_second(self) -> float:
        return (self.documents + self.copies) / self.seconds if self.seconds > 0 else 0.0


def bundle_description(docs_file: Path) -> str:
    """Names the collection's docs file by size and digest: a changed file is a new bundle."""
    digest = hashlib.sha256()
    with docs_file.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    size = docs_file.stat().st_size
    return f"judged collection: {docs_file.name}, {size} bytes, sha256 {digest.hexdigest()}"


def write_bundle(docs_file: Path, name: str, state: Path) -> Path:
    """``<state>/bundles/<name>/``: ``bundle.toml`` (type jsonl) and the docs file (linked)."""
    docs_file = Path(docs_file).resolve()
    folder = Path(state).resolve() / "bundles" / name
    folder.mkdir(parents=True, exist_ok=True)
    linked = folder / docs_file.name
    if not (linked.is_file() and os.path.samefile(linked, docs_file)):
        linked.unlink(missing_ok=True)
        try:
            linked.symlink_to(docs_file)
        except OSError:  # no links here (some file systems): a copy reads the same
            shutil.copyfile(docs_file, linked)
    toml = (
        'type = "jsonl"\n'
        f"description = {_toml_string(bundle_description(docs_file))}\n"
        f'language = "{LANGUAGE}"\n'
    )
    description_file = folder / DESCRIPTION_FILE
    if not description_file.is_file() or description_file.read_text(encoding="utf-8") != toml:
        description_file.write_text(toml, encoding="utf-8")
    return folder


def crawl_collection(collection: Collection, settings: Settings, state: Path, *, progress: bool) -> Stored:
    """Archive-crawl the collection's bundle into ``settings``' store (to the end, on this
    machine) and say which stored document stands for which collection ids."""
    return crawl_jsonl(
        collection.docs_file, collection.name, settings, state, dict(collection.doc_urls()), progress=progress
    )


def crawl_jsonl(
    docs_file: Path,
    name: str,
    settings: Settings,
    state: Path,
    ids_by_url: dict[str, str],
    *,
    progress: bool,
) -> Stored:
    """Archive-crawl a JSON-lines file of documents as the bundle ``<state>/bundles/<name>``
    (its documents' host: ``<name>.collection.invalid``); ``ids_by_url`` names the ids
    ``Stored.doc_ids`` gives (the benchmarks, which need none, pass an empty one)."""
    started = time.monotonic()
    folder = write_bundle(docs_file, name, state)
    engine = make_engine(settings.database_url)
    try:
        init_db(engine)
        sessions = session_factory(engine)
        registered = register_bundle(sessions, str(folder), now=time.time())
        if progress:
            print(f"eval: {registered.line()}", file=sys.stderr, flush=True)
        # Its own summary line below: the crawl's would count web pages (none here).
        run_crawl(settings, [], progress=False, web=False, archives=True, identity="eval/archive")
        with sessions() as session:
            bundles = archive_batches.progress(session, time.time())
            for p in (p for p in bundles if p.id == registered.bundle_id):
                if progress:
                    print(f"eval: {p.line()}", file=sys.stderr, flush=True)
                if p.state != archive_batches.BundleState.FINISHED:
                    raise CollectionError(
                        f"the archive crawl of {folder} stopped before its end ({p.line()}); run it again"
                    )
            stored = _stored(session, ids_by_url)
    finally:
        engine.dispose()
    stored.seconds = time.monotonic() - started
    return stored


def _stored(session: Session, ids_by_url: dict[str, str]) -> Stored:
    stored = Stored()
    for num, url in session.execute(select(Document.doc_num, Document.url)):
        source_id = ids_by_url.get(url)
        if source_id is not None:
            stored.doc_ids.setdefault(int(num), []).insert(0, source_id)
            stored.documents += 1
    copies = select(DuplicateUrl.doc_num, DuplicateUrl.url).order_by(DuplicateUrl.url)
    for num, url in session.execute(copies):
        source_id = ids_by_url.get(url)
        if source_id is not None and int(num) in stored.doc_ids:
            stored.doc_ids[int(num)].append(source_id)
            stored.copies += 1
    return stored


def _toml_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
