"""Collection documents as stored documents: their URLs, bytes and fields.

Pure functions over plain data; ``writer`` does the I/O. A judged collection's
``docs.jsonl`` is read by the archives' JSON-lines reader
(``services.archives.formats.jsonl``, as ``nimbus eval`` does), which gives
``SourceDoc``s here. A collection document has no URL, so it gets a stable one
naming the collection and the document id, under the reserved ``.invalid``
top-level domain (RFC 2606): it can never collide with a crawled page or be
fetched by mistake. The reader names them so too (``collection_host``).
"""

from __future__ import annotations

from dataclasses import dataclass

from services.archives.formats.jsonl import collection_host
from services.archives.formats.jsonl import doc_url as archived_doc_url
from services.ingest.errors import IngestError, SourceFormatError
from services.storage.documents import NewDocument, SourceDoc
from services.storage.formats.blocks import ContentType, sha1
from services.text.errors import BadUrlError
from services.text.urls import url_id

__all__ = [
    "CONTENT_TYPE",
    "LANG",
    "IngestDoc",
    "IngestError",
    "SourceFormatError",
    "collection_host",
    "doc_body",
    "doc_url",
    "prepare",
    "to_document",
]

CONTENT_TYPE = ContentType.TEXT  # stored as text/plain: "title\n\ntext"
LANG = "en"


@dataclass(frozen=True)
class IngestDoc:
    """One collection document ready to be stored."""

    source_id: str  # the collection's document id (what the run file names)
    url: str  # normalized
    url_id: str  # hex SHA-1 of the URL
    doc_id: str  # hex SHA-1 of the body
    body: bytes
    title: str
    text: str


def doc_url(host: str, source_id: str) -> str:
    """The stable, normalized URL of a collection document (its id percent-encoded)."""
    try:
        return archived_doc_url(host, source_id)
    except BadUrlError as exc:
        raise IngestError(f"document id {source_id!r} cannot be made into a URL ({exc})") from exc


def doc_body(doc: SourceDoc) -> bytes:
    """The stored bytes: UTF-8 ``title\\n\\ntext`` (just the text when there is no title)."""
    return (f"{doc.title}\n\n{doc.text}" if doc.title else doc.text).encode("utf-8")


def prepare(doc: SourceDoc, host: str) -> IngestDoc:
    url = doc_url(host, doc.id)
    body = doc_body(doc)
    return IngestDoc(
        source_id=doc.id,
        url=url,
        url_id=url_id(url),
        doc_id=sha1(body).hex(),
        body=body,
        title=doc.title,
        text=doc.text,
    )


def to_document(doc: IngestDoc, doc_num: int, *, fetched_at: float) -> NewDocument:
    """What ``DocumentWriter`` stores for the document, under ``doc_num``."""
    return NewDocument(
        doc_num=doc_num,
        url=doc.url,
        url_id=doc.url_id,
        body=doc.body,
        content_type=CONTENT_TYPE,
        title=doc.title,
        text=doc.text,
        lang=LANG,
        fetched_at=fetched_at,
        doc_id=doc.doc_id,
    )
