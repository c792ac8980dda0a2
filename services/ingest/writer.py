"""Write collection documents to the blob store and the documents table with the
crawler's own ``DocumentWriter``: content block + record block per group of
documents, dense doc numbers reserved under the committers' lock.

All of one ingest is one database transaction: the lock is its first
statement, each block pair is put in the blob store before its rows are
inserted, and the rows become visible only at the commit. A failure deletes
the blocks already written and rolls the rows back, so nothing is left half
visible (as in the committer, a crash can leave only orphan blobs that no row
names).

Unlike the crawler, equal bodies are not stored once: every collection
document is judged on its own and keeps its own doc number (Cranfield has
two empty documents). Ingesting the same collection again stores nothing new:
a document whose URL is already stored with the same bytes keeps its doc
number; one stored with other bytes is an error (another version of the
collection is in this database: use a fresh state directory).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from services.config import Settings
from services.ingest.collection import IngestDoc, IngestError, collection_host, prepare, to_document
from services.storage.blobs.blobstore import open_blobstore
from services.storage.documents import DocumentWriter, SourceDoc
from services.storage.formats.block_pair import cut_blocks
from services.storage.sql.counters import bump_counters
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.models import Document
from services.storage.sql.schema import init_db

PROGRESS_EVERY = 2.0  # seconds between progress lines on stderr


@dataclass
class IngestResult:
    doc_nums: dict[int, str] = field(default_factory=dict)  # doc_num -> collection document id
    added: int = 0
    already_stored: int = 0
    blocks: list[str] = field(default_factory=list)  # blob names written (content and record)
    seconds: float = 0.0

    @property
    def docs_per_second(self) -> float:
        return (self.added + self.already_stored) / self.seconds if self.seconds > 0 else 0.0

    def summary(self) -> str:
        return (
            f"ingested {self.added + self.already_stored} documents ({self.added} new, "
            f"{self.already_stored} already stored) in {self.seconds:.1f} s "
            f"({self.docs_per_second:.0f} docs/s), {len(self.blocks) // 2} block pairs"
        )


def ingest_documents(
    docs: Iterable[SourceDoc], source_name: str, settings: Settings, *, progress: bool = True
) -> IngestResult:
    """Ingest ``docs`` (streamed) from the source named ``source_name`` (a collection's folder
    name: it names the documents' host) into the database and blob store ``settings`` name,
    in blocks of at most ``block_max_docs`` documents and ``block_max_bytes`` bytes."""
    engine = make_engine(settings.database_url)
    try:
        init_db(engine)
        writer = DocumentWriter(
            open_blobstore(settings.blob_url, settings.aws_endpoint_url),
            max_block_docs=settings.crawl.block_max_docs,
            max_block_bytes=settings.crawl.block_max_bytes,
        )
        return write_docs(
            docs, collection_host(source_name), session_factory(engine), writer, progress=progress
        )
    finally:
        engine.dispose()


def write_docs(
    docs: Iterable[SourceDoc],
    host: str,
    sessions: sessionmaker[Session],
    writer: DocumentWriter,
    *,
    progress: bool = True,
) -> IngestResult:
    """Store ``docs`` (streamed) under ``https://<host>/doc/<id>`` in one transaction."""
    started = time.monotonic()
    now = time.time()
    result = IngestResult()
    seen: set[str] = set()
    last_report = started
    try:
        with sessions.begin() as session:
            # The committers' own lock, first: an ingest into a database that a crawler
            # writes too keeps doc numbers dense and never interleaves with a flush.
            writer.lock(session)
            prepared = (prepare(doc, host) for doc in docs)
            for block in cut_blocks(prepared, _body_size, writer.max_block_docs, writer.max_block_bytes):
                fresh = _new_docs(session, block, seen, result)
                if fresh:
                    number = writer.reserve(session, len(fresh))
                    written = writer.write(
                        to_document(doc, num, fetched_at=now) for num, doc in enumerate(fresh, number)
                    )
                    result.blocks += written.blocks
                    writer.insert(session, written.rows)
                    for row, doc in zip(written.rows, fresh, strict=True):
                        result.doc_nums[row["doc_num"]] = doc.source_id
                    result.added += len(fresh)
                if progress and time.monotonic() - last_report >= PROGRESS_EVERY:
                    last_report = time.monotonic()
                    done = result.added + result.already_stored
                    print(
                        f"ingest: {done} documents ({done / (last_report - started):.0f} docs/s)",
                        file=sys.stderr,
                        flush=True,
                    )
            bump_counters(session, {"documents": result.added, "ingested_documents": result.added})
    except BaseException:
        writer.discard(result.blocks)
        raise
    result.seconds = time.monotonic() - started
    if progress:
        print(f"ingest: {result.summary()}", file=sys.stderr, flush=True)
    return result


def _new_docs(
    session: Session, block: list[IngestDoc], seen: set[str], result: IngestResult
) -> list[IngestDoc]:
    """The block's documents not stored yet; already stored ones keep their doc number."""
    stored = {
        row.url_id: row
        for row in session.execute(
            select(Document.url_id, Document.doc_num, Document.doc_id).where(
                Document.url_id.in_([d.url_id for d in block])
            )
        )
    }
    fresh = []
    for doc in block:
        if doc.url_id in seen:
            raise IngestError(
                f"two documents of the collection get the URL {doc.url} "
                f"(one is {doc.source_id!r}): their ids differ only in ways a URL "
                "cannot keep; make the ids distinct"
            )
        seen.add(doc.url_id)
        old = stored.get(doc.url_id)
        if old is None:
            fresh.append(doc)
        elif old.doc_id != doc.doc_id:
            raise IngestError(
                f"document {doc.source_id!r} ({doc.url}) is already stored with other "
                "content: this database holds another version of the collection; "
                "ingest into a fresh state directory (nimbus eval --state DIR)"
            )
        else:
            result.doc_nums[old.doc_num] = doc.source_id
            result.already_stored += 1
    return fresh


def _body_size(doc: IngestDoc) -> int:
    return len(doc.body)
