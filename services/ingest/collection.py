"""Collection documents as stored documents: reading them, their URLs, bytes and fields.

Pure functions over plain data; ``writer`` does the I/O. A judged
collection's ``docs.jsonl`` (one ``{"id", "title", "text"}`` object a line)
yields ``SourceDoc``s. A collection document has no URL, so it gets a stable
one naming the collection and the document id, under the reserved
``.invalid`` top-level domain (RFC 2606): it can never collide with a
crawled page or be fetched by mistake.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from services.ingest.errors import IngestError, SourceFormatError
from services.storage.documents import NewDocument, SourceDoc
from services.storage.formats.blocks import ContentType, sha1
from services.text.errors import BadUrlError
from services.text.urls import normalize_url, url_id

__all__ = [
    "CONTENT_TYPE",
    "LANG",
    "IngestDoc",
    "IngestError",
    "SourceFormatError",
    "collection_host",
    "doc_body",
    "doc_url",
    "json_lines",
    "prepare",
    "read_docs",
    "to_document",
]

CONTENT_TYPE = ContentType.TEXT  # stored as text/plain: "title\n\ntext"
LANG = "en"


def json_lines(path: Path) -> Iterator[tuple[int, dict]]:
    """(line number, object) of each non-blank line of a JSONL file whose objects have an "id"
    (or BEIR's "_id")."""
    try:
        fh = path.open(encoding="utf-8")
    except OSError as exc:
        raise SourceFormatError(f"cannot read {path}: {exc}") from exc
    with fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError as exc:
                raise SourceFormatError(f"{path}:{number}: not JSON ({exc})") from exc
            if isinstance(obj, dict) and "id" not in obj and "_id" in obj:
                obj["id"] = obj["_id"]  # BEIR's files name it so
            if not isinstance(obj, dict) or "id" not in obj:
                raise SourceFormatError(f'{path}:{number}: expected an object with an "id"')
            yield number, obj


def read_docs(path: Path) -> Iterator[SourceDoc]:
    """The documents of a ``docs.jsonl`` file, streamed (a collection may not fit in memory)."""
    for _number, obj in json_lines(path):
        yield SourceDoc(str(obj["id"]), str(obj.get("title") or ""), str(obj.get("text") or ""))


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
