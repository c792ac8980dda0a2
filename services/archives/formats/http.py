"""A captured HTTP response to a ``Payload``: status, headers, and the body as a fetch gives it.

Archived bodies are stored as they came over the wire: chunked, gzip- or
deflate-encoded. Both are undone here, with the decoded size capped (a gzip bomb in an
archive is streamed into the cap and counted ``too_large``, never inflated whole).
``Transfer-Encoding: chunked`` is often false in archives (the recorder de-chunked the
body and kept the header; iana.warc.gz's revisited records say so): a body that does not
parse as chunks is kept as it is, as warcio does. A body labelled gzip that does not
inflate is kept as sent, as browsers read it.

Which payloads are kept: those the crawler indexes (HTML and PDF, by header or by their
first bytes when the header says only "bytes"), and redirects (a 3xx with a Location,
which the crawler follows as it follows a fetched one); the rest are skipped and counted
by media type, unless the reader is asked for ``every_type`` (a replay of the archive: the
demo's sample web serves its stylesheets and images too).
"""

from __future__ import annotations

import zlib

from services.archives.records import Payload, Skip
from services.storage.formats.blocks import SNIFFED_TYPES, ContentType, mime_type
from services.text.extract.content_encoding import ContentDecoder, decode_whole

_DROPPED = {"transfer-encoding", "content-encoding"}


class NotKeptError(Exception):
    """The payload is not kept: ``why`` with ``detail`` (a media type, an encoding)."""

    def __init__(self, why: Skip, detail: str = "") -> None:
        super().__init__(why.value)
        self.why, self.detail = why, detail


def split_http(block: bytes) -> tuple[int, list[tuple[str, str]], bytes] | None:
    """(status, headers, raw body) of an HTTP response message; None when the block is not one."""
    if not block.startswith(b"HTTP/"):
        return None
    end = block.find(b"\r\n\r\n")
    sep = 4
    bare = block.find(b"\n\n")
    if end < 0 or (0 <= bare < end):
        end, sep = bare, 2
    if end < 0:
        head, body = block, b""
    else:
        head, body = block[:end], block[end + sep :]
    lines = head.replace(b"\r\n", b"\n").split(b"\n")
    parts = lines[0].split(None, 2)
    try:
        status = int(parts[1])
    except (IndexError, ValueError):
        return None
    headers: list[tuple[str, str]] = []
    for line in lines[1:]:
        if line[:1] in (b" ", b"\t") and headers:
            key, before = headers[-1]
            headers[-1] = (key, f"{before} {line.strip().decode('latin-1')}")
            continue
        name, colon, value = line.partition(b":")
        if colon:
            headers.append((name.strip().decode("latin-1"), value.strip().decode("latin-1")))
    return status, headers, body


def header(headers: list[tuple[str, str]], name: str) -> str:
    name = name.lower()
    for key, value in headers:
        if key.lower() == name:
            return value
    return ""


def payload(
    status: int, headers: list[tuple[str, str]], body: bytes, cap: int, every_type: bool = False
) -> Payload:
    """The kept payload of a response, decoded; ``NotKeptError`` when it is not kept
    (``every_type``: whatever its media type)."""
    content_type = header(headers, "content-type")
    redirect = 300 <= status < 400 and bool(header(headers, "location"))
    if not every_type and not redirect and not _indexable(content_type, body[:1024]):
        raise NotKeptError(Skip.CONTENT_TYPE, mime_type(content_type) or "none")
    if "chunked" in header(headers, "transfer-encoding").lower():
        body = dechunk(body)
    body = decode(body, header(headers, "content-encoding"), cap)
    kept = [(k, v) for k, v in headers if k.lower() not in _DROPPED]
    return Payload(status, kept, content_type, body)


def _indexable(content_type: str, head: bytes) -> bool:
    start = head.lstrip().removeprefix(b"\xef\xbb\xbf").lstrip()
    if start.startswith(b"%PDF-") or ContentType.from_mime(content_type) in (
        ContentType.HTML,
        ContentType.PDF,
    ):
        return True
    return mime_type(content_type) in SNIFFED_TYPES and start[:15].lower().startswith(
        (b"<!doctype html", b"<html", b"<head", b"<body", b"<!--")
    )


def dechunk(body: bytes) -> bytes:
    """The body of a chunked message; the body itself when it is not chunked after all."""
    out: list[bytes] = []
    pos = 0
    while True:
        eol = body.find(b"\n", pos)
        if eol < 0:
            return body if not out else b"".join(out)
        size_field = body[pos:eol].split(b";", 1)[0].strip()
        try:
            size = int(size_field, 16)
        except ValueError:
            return body if not out else b"".join(out)
        if size == 0:
            return b"".join(out)
        start = eol + 1
        if start + size > len(body):  # a chunk cut short: what there is
            out.append(body[start:])
            return b"".join(out)
        out.append(body[start : start + size])
        pos = start + size
        if body[pos : pos + 2] == b"\r\n":
            pos += 2
        elif body[pos : pos + 1] == b"\n":
            pos += 1


def decode(body: bytes, encoding: str, cap: int) -> bytes:
    """Content-Encoding undone with the output capped, as the crawler decodes a fetched body
    (``ContentDecoder``: several gzip members, raw deflate, a body labelled compressed but
    sent plain); ``NotKeptError`` past the cap or for an encoding we cannot read. Bytes that
    are not the compression they are labelled with are kept as they are."""
    try:
        decoder = ContentDecoder(encoding)
    except ValueError:
        raise NotKeptError(Skip.CONTENT_ENCODING, encoding.strip().lower()) from None
    try:
        out = decode_whole(decoder, body, cap)
    except zlib.error:
        return body
    if len(out) > cap:
        raise NotKeptError(Skip.TOO_LARGE, encoding.strip().lower())
    return out
