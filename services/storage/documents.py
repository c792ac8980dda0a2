"""Storing documents: the one writer that every path into the index uses.

A document reaches storage from a crawl (the crawler's committer), a web crawl's or
an archive crawl's (an archive, a dump, a judged collection read offline).
Whatever the path, storing it is the same three steps, in this order
(content blocks and record blocks, blocks before rows):

1. ``lock`` and ``reserve``: dense doc numbers, handed out under the
   committers' lock in the caller's transaction, so no two writers ever take
   the same number;
2. ``write``: the content block and its record block, put in the blob store
   with no lock held (the caller may commit step 1 first, so that other
   writers never wait for its gzip and uploads);
3. ``insert``: the document rows, in the caller's transaction.

A failure after step 2 must ``discard`` the blocks it wrote; a crash leaves
only orphan blobs that no row names. So "a document row exists" always
means "its bytes are readable".
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.orm import Session

from services.storage.blobs.blobstore import BlobStore
from services.storage.errors import StorageError
from services.storage.formats.block_pair import cut_blocks, write_block_pair
from services.storage.formats.blocks import ContentType, sha1
from services.storage.formats.records import Link, Record
from services.storage.sql.bulk_sql import insert_rows
from services.storage.sql.doc_numbers import lock_commits, reserve_doc_nums
from services.storage.sql.models import Document, table

TITLE_CHARS = 2000  # the documents row keeps a title prefix; the record keeps it whole
LANG_CHARS = 16


@dataclass(frozen=True)
class SourceDoc:
    """A document as a source other than the live web yields it: its id in that source
    (what a run file or an archive names it by), its title and its text.

    Judged collections yield these (``services.eval.collection``), for the ranking
    benchmarks' peers; Nimbus itself stores them by an archive crawl of their JSON lines.
    """

    id: str
    title: str
    text: str


@dataclass
class NewDocument:
    """One document to store under ``doc_num``: its bytes and the fields parsed from them."""

    doc_num: int
    url: str  # normalized: url_id is its SHA-1
    url_id: str
    body: bytes
    content_type: ContentType
    title: str = ""
    text: str = ""
    description: str = ""
    lang: str = ""
    links: list[Link] = field(default_factory=list)
    fetched_at: float = 0.0
    status: int = 200
    depth: int = 0
    doc_id: str = ""  # hex SHA-1 of ``body``; computed when empty
    noarchive: bool = False  # the site asks that no cached copy be shown
    keywords: str = ""  # <meta name=keywords>
    nav: str = ""  # menus, link lists and form words beside the text (Record.nav)

    def __post_init__(self) -> None:
        if not self.doc_id:
            self.doc_id = sha1(self.body).hex()

    def record(self) -> Record:
        """Its record (``write_block_pair`` fills in where the bytes are stored)."""
        return Record(
            doc_num=self.doc_num,
            url=self.url,
            url_id=self.url_id,
            doc_id=self.doc_id,
            content_type=self.content_type.mime,
            title=self.title,
            text=self.text,
            description=self.description,
            lang=self.lang,
            links=self.links,
            fetched_at=self.fetched_at,
            noarchive=self.noarchive,
            keywords=self.keywords,
            nav=self.nav,
        )


@dataclass
class WrittenDocs:
    """What ``DocumentWriter.write`` stored: one documents-table row per document, in the
    order given, and the blobs written (content and record blocks)."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    blocks: list[str] = field(default_factory=list)


class DocumentWriter:
    """Reserves doc numbers, writes block pairs and inserts document rows (module docstring)."""

    def __init__(self, blobs: BlobStore, *, max_block_docs: int, max_block_bytes: int) -> None:
        self.blobs = blobs
        self.max_block_docs = max_block_docs
        self.max_block_bytes = max_block_bytes

    @staticmethod
    def lock(session: Session) -> None:
        """Take the committers' lock (held until the caller's transaction ends): writers that
        hand out doc numbers or insert rows take turns."""
        lock_commits(session)

    @staticmethod
    def reserve(session: Session, count: int) -> int:
        """Hand out ``count`` doc numbers, under the lock (``lock``); returns the first."""
        return reserve_doc_nums(session, count)

    def write(self, docs: Iterable[NewDocument], name_from: int | None = None) -> WrittenDocs:
        """Cut ``docs`` into blocks under the caps and put each block pair (no lock held).

        Each block pair is named after the smallest doc number it holds (manifests list
        blocks in name order, so runs of names cover runs of documents), or after
        ``name_from``: a crawl worker's first batch seq, since it writes before the
        committer numbers the documents (in seq order, so names still follow). A failure part
        of the way deletes the blocks already written, then raises.
        """
        written = WrittenDocs()
        try:
            for group in cut_blocks(docs, _body_size, self.max_block_docs, self.max_block_bytes):
                stored = [(doc.body, doc.content_type, doc.record()) for doc in group]
                placements, names = write_block_pair(
                    self.blobs,
                    stored,
                    min(d.doc_num for d in group) if name_from is None else name_from,
                    self.max_block_bytes,
                )
                written.blocks += names
                written.rows += [
                    _row(doc, placement.columns()) for doc, placement in zip(group, placements, strict=True)
                ]
        except BaseException:
            self.discard(written.blocks)
            raise
        return written

    @staticmethod
    def insert(session: Session, rows: Sequence[dict[str, Any]]) -> None:
        """Insert document rows (from ``write``) in the caller's transaction."""
        insert_rows(session, table(Document), rows)  # the ORM's bulk insert costs more CPU a row

    def discard(self, blocks: Iterable[str]) -> None:
        """Delete blocks whose rows will never be committed (best effort: an orphan is harmless)."""
        for name in blocks:
            try:
                self.blobs.delete(name)
            except StorageError:
                continue  # nothing names it; a later clean-up may remove it


def _row(doc: NewDocument, placement: dict[str, Any]) -> dict[str, Any]:
    return document_row(
        doc_num=doc.doc_num,
        url=doc.url,
        url_id=doc.url_id,
        doc_id=doc.doc_id,
        mime=doc.content_type.mime,
        title=doc.title,
        lang=doc.lang,
        length=len(doc.body),
        status=doc.status,
        depth=doc.depth,
        fetched_at=doc.fetched_at,
        placement=placement,
    )


def document_row(
    *,
    doc_num: int,
    url: str,
    url_id: str,
    doc_id: str,
    mime: str,
    title: str,
    lang: str,
    length: int,
    status: int,
    depth: int,
    fetched_at: float,
    placement: dict[str, Any],
) -> dict[str, Any]:
    """A documents row (title and language cut to their columns), for a writer that put the
    blocks itself or a cluster committer whose worker did (``placement``: where they are)."""
    return {
        "url_id": url_id,
        "doc_num": doc_num,
        "url": url,
        "doc_id": doc_id,
        "content_type": mime,
        "title": title[:TITLE_CHARS],
        "lang": lang[:LANG_CHARS],
        "length": length,
        "status": status,
        "depth": depth,
        "last_crawled": fetched_at,
        **placement,
    }


def _body_size(doc: NewDocument) -> int:
    return len(doc.body)
