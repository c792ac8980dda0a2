"""JSON-lines collections (``{"id", "title", "text"[, "url"]}`` a line; BEIR's ``_id`` too) to documents.

A judged collection's documents have no URL: each gets a stable one naming the
collection and its id under the reserved ``.invalid`` top-level domain (RFC 2606),
``https://<collection>.collection.invalid/doc/<id>``, as ``nimbus eval`` has always
named them, so it can never collide with a crawled page. An object with a ``url``
keeps it. A document's ``id`` is kept as its ``source_id`` (what a TREC run names it by).

``objects`` is the line reading under it, for any JSON-lines file of objects with an id
(``nimbus eval`` reads its queries with it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import IO, Any
from urllib.parse import quote

from services.archives.records import ArchiveRecord, Document, Skip, damaged, skipped
from services.text.errors import BadUrlError
from services.text.urls import normalize_url


def collection_host(name: str) -> str:
    """``<name>.collection.invalid``: a DNS label made of the collection's (bundle's) name."""
    label = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")[:63].strip("-")
    return f"{label or 'collection'}.collection.invalid"


def doc_url(host: str, doc_id: str) -> str:
    return normalize_url(f"https://{host}/doc/{quote(doc_id, safe='')}")


def lines(stream: IO[bytes], start: int, stop: int, cap: int) -> Iterator[tuple[int, bytes | None]]:
    """(offset, line) of the lines that start in [start, stop); None for a line over ``cap``
    (read past in pieces, never held whole)."""
    offset = start
    while offset < stop:
        line = stream.readline(cap + 1)
        if not line:
            return
        begin = offset
        offset += len(line)
        if len(line) > cap and not line.endswith(b"\n"):
            while line and not line.endswith(b"\n"):
                line = stream.readline(64 * 1024)
                offset += len(line)
            yield begin, None
            continue
        yield begin, line


def objects(
    stream: IO[bytes], name: str, start: int, stop: int, *, cap: int, fetched_at: float
) -> Iterator[tuple[int, dict[str, Any] | ArchiveRecord]]:
    """(offset, object) of the non-blank lines that start in [start, stop), each object with
    its ``"id"`` (BEIR's ``"_id"`` read as ``"id"``); a line that is not such an object comes
    as a skipped record instead: ``corrupt`` (its error naming the file and the byte offset)
    or ``too_large``."""
    for offset, line in lines(stream, start, stop, cap):
        if line is None:
            yield offset, skipped("", offset, fetched_at, Skip.TOO_LARGE, "line")
            continue
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as exc:
            yield offset, damaged(name, offset, fetched_at, Skip.CORRUPT, f"not JSON ({exc})")
            continue
        if isinstance(obj, dict) and "id" not in obj and "_id" in obj:
            obj["id"] = obj["_id"]  # BEIR's files name it so
        if not isinstance(obj, dict) or "id" not in obj:
            yield offset, damaged(name, offset, fetched_at, Skip.CORRUPT, 'expected an object with an "id"')
            continue
        yield offset, obj


def read_jsonl(
    stream: IO[bytes],
    name: str,
    start: int,
    stop: int,
    *,
    collection: str,
    cap: int,
    fetched_at: float,
    language: str = "",
    keep_empty: bool = False,
) -> Iterator[ArchiveRecord]:
    """The documents on the lines that start in [start, stop) of a JSON-lines file.
    ``keep_empty``: a document without title or text is a document too (a judged collection
    judges each of its documents, Cranfield's two empty ones included), not skipped."""
    host = collection_host(collection)
    for offset, obj in objects(stream, name, start, stop, cap=cap, fetched_at=fetched_at):
        if isinstance(obj, ArchiveRecord):
            yield obj
            continue
        doc_id = str(obj["id"])
        try:
            url = normalize_url(str(obj["url"])) if obj.get("url") else doc_url(host, doc_id)
        except BadUrlError as exc:
            yield damaged(
                name, offset, fetched_at, Skip.CORRUPT, f"document {doc_id!r}: unusable URL ({exc})"
            )
            continue
        title, text = str(obj.get("title") or ""), str(obj.get("text") or "")
        if not keep_empty and not title.strip() and not text.strip():
            yield skipped(url, offset, fetched_at, Skip.EMPTY, "document")
            continue
        lang = str(obj.get("language") or language)
        document = Document(title, text, [], lang, source_id=doc_id)
        yield ArchiveRecord(url, offset, fetched_at, document=document)
