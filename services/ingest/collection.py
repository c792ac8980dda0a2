"""Collection documents as stored documents: URL, bytes, record fields, blocks.

Pure functions over plain data; ``writer`` does the I/O. A collection
document has no URL, so it gets a stable one naming the collection and the
document id, under the reserved ``.invalid`` top-level domain (RFC 2606):
it can never collide with a crawled page or be fetched by mistake.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote

from services.crawler.urls import BadUrlError, normalize_url, url_id
from services.eval.collection import EvalDoc
from services.storage.blocks import ContentType, sha1
from services.storage.records import Record

CONTENT_TYPE = ContentType.TEXT  # stored as text/plain: "title\n\ntext"
LANG = "en"


class IngestError(RuntimeError):
    """A collection cannot be ingested as asked; the message says what to do."""


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


def collection_host(name: str) -> str:
    """``<name>.collection.invalid``: a DNS label made of the collection's folder name."""
    label = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")[:63].strip("-")
    return f"{label or 'collection'}.collection.invalid"


def doc_url(host: str, source_id: str) -> str:
    """The stable, normalized URL of a collection document (its id percent-encoded)."""
    try:
        return normalize_url(f"https://{host}/doc/{quote(source_id, safe='')}")
    except BadUrlError as exc:
        raise IngestError(f"document id {source_id!r} cannot be made into a URL ({exc})") from exc


def doc_body(doc: EvalDoc) -> bytes:
    """The stored bytes: UTF-8 ``title\\n\\ntext`` (just the text when there is no title)."""
    return (f"{doc.title}\n\n{doc.text}" if doc.title else doc.text).encode("utf-8")


def prepare(doc: EvalDoc, host: str) -> IngestDoc:
    url = doc_url(host, doc.id)
    body = doc_body(doc)
    return IngestDoc(source_id=doc.id, url=url, url_id=url_id(url), doc_id=sha1(body).hex(),
                     body=body, title=doc.title, text=doc.text)


def to_record(doc: IngestDoc, doc_num: int, *, fetched_at: float) -> Record:
    """The document's record (``write_block_pair`` fills in where its bytes are stored)."""
    return Record(doc_num=doc_num, url=doc.url, url_id=doc.url_id, doc_id=doc.doc_id,
                  content_type=CONTENT_TYPE.mime, title=doc.title, text=doc.text, lang=LANG,
                  fetched_at=fetched_at)
