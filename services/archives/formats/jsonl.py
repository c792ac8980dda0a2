"""JSON-lines collections (``{"id", "title", "text"[, "url"]}`` a line; BEIR's ``_id`` too) to documents.

A judged collection's documents have no URL: each gets a stable one naming the
collection and its id under the reserved ``.invalid`` top-level domain (RFC 2606),
``https://<collection>.collection.invalid/doc/<id>``, as ``nimbus eval`` has always
named them, so it can never collide with a crawled page. An object with a ``url``
keeps it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import IO
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
) -> Iterator[ArchiveRecord]:
    """The documents on the lines that start in [start, stop) of a JSON-lines file."""
    host = collection_host(collection)
    for offset, line in lines(stream, start, stop, cap):
        if line is None:
            yield skipped("", offset, fetched_at, Skip.TOO_LARGE, "line")
            continue
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as exc:
            yield damaged(name, offset, fetched_at, Skip.CORRUPT, f"not JSON ({exc})")
            continue
        if not isinstance(obj, dict) or ("id" not in obj and "_id" not in obj):
            yield damaged(name, offset, fetched_at, Skip.CORRUPT, 'expected an object with an "id"')
            continue
        doc_id = str(obj.get("id", obj.get("_id")))
        try:
            url = normalize_url(str(obj["url"])) if obj.get("url") else doc_url(host, doc_id)
        except BadUrlError as exc:
            yield damaged(
                name, offset, fetched_at, Skip.CORRUPT, f"document {doc_id!r}: unusable URL ({exc})"
            )
            continue
        title, text = str(obj.get("title") or ""), str(obj.get("text") or "")
        if not title.strip() and not text.strip():
            yield skipped(url, offset, fetched_at, Skip.EMPTY, "document")
            continue
        yield ArchiveRecord(
            url, offset, fetched_at, document=Document(title, text, [], str(obj.get("language") or language))
        )
