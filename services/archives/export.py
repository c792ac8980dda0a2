"""Stored documents written out as standard WARC 1.1, for warcio, pywb and other archives' tools.

``write_warc(out, captures)`` takes an iterable of ``Capture`` (or plain tuples
``(url, fetched_at, ip, content_type, status, headers, body)``) and writes, after one
``warcinfo`` record, three records a capture: the ``request`` (a GET for the URL), the
``response`` (the HTTP message as stored: status, headers, body) and a ``metadata``
record (the capture's extra fields, ``application/warc-fields``), tied together by
``WARC-Concurrent-To``. ``WARC-Date`` is the fetch time, ``WARC-IP-Address`` the server's
address where known, ``WARC-Payload-Digest`` and ``WARC-Block-Digest`` SHA-1 in base 32
as the WARC guidelines write them. Each record is its own gzip member (``.warc.gz``),
so the export can itself be cut into batches and archive-crawled.

The stored body is the decoded one (what the crawler parsed), so ``Content-Encoding``,
``Transfer-Encoding`` and ``Content-Length`` are written anew to match it. Record ids are
derived from the URL, the time and the record type: the same documents export to the
same bytes (given the same ``created`` time for the warcinfo record).
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import uuid
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from http import HTTPStatus
from typing import IO, NamedTuple
from urllib.parse import urlsplit

SOFTWARE = "Nimbus Search"
CONFORMS_TO = "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/"
_DROPPED = {"content-encoding", "transfer-encoding", "content-length"}


class Capture(NamedTuple):
    url: str
    fetched_at: float  # epoch seconds
    ip: str  # "" when unknown
    content_type: str
    status: int
    headers: list[tuple[str, str]]
    body: bytes
    metadata: Mapping[str, str] = {}  # written as the metadata record's fields (title, language, ...)


def write_warc(
    out: IO[bytes],
    captures: Iterable[Capture | tuple[object, ...]],
    *,
    compress: bool = True,
    created: float | None = None,
) -> int:
    """Write ``captures`` as WARC 1.1 to ``out``; returns the number of records written.
    ``created``: the warcinfo record's date (now by default)."""
    info_id = _record_id("warcinfo", "", 0.0)
    when = created if created is not None else datetime.now(UTC).timestamp()
    fields = f"software: {SOFTWARE}\r\nformat: WARC File Format 1.1\r\nconformsTo: {CONFORMS_TO}\r\n"
    _write(out, compress, [("WARC-Type", "warcinfo"), ("WARC-Record-ID", info_id),
                           ("WARC-Date", _date(when)),
                           ("Content-Type", "application/warc-fields")], fields.encode())  # fmt: skip
    written = 1
    for item in captures:
        capture = item if isinstance(item, Capture) else Capture(*item)  # type: ignore[arg-type]
        written += _write_capture(out, capture, info_id, compress)
    return written


def _write_capture(out: IO[bytes], c: Capture, info_id: str, compress: bool) -> int:
    date = _date(c.fetched_at)
    response_id = _record_id("response", c.url, c.fetched_at)
    common = [("WARC-Date", date), ("WARC-Target-URI", c.url), ("WARC-Warcinfo-ID", info_id)]
    ip = [("WARC-IP-Address", c.ip)] if c.ip else []
    headers = [(k, v) for k, v in c.headers if k.lower() not in _DROPPED]
    if c.content_type and not any(k.lower() == "content-type" for k, _ in headers):
        headers.insert(0, ("Content-Type", c.content_type))
    headers.append(("Content-Length", str(len(c.body))))
    reason = _reason(c.status)
    head = f"HTTP/1.1 {c.status} {reason}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers) + "\r\n"
    response = head.encode("latin-1", "replace") + c.body
    _write(out, compress, [("WARC-Type", "response"), ("WARC-Record-ID", response_id), *common, *ip,
                           ("Content-Type", "application/http;msgtype=response"),
                           ("WARC-Payload-Digest", _digest(c.body))], response)  # fmt: skip
    parts = urlsplit(c.url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    request = f"GET {target} HTTP/1.1\r\nHost: {parts.netloc}\r\nUser-Agent: {SOFTWARE}\r\n\r\n".encode(
        "latin-1", "replace"
    )
    concurrent = [*common, ("WARC-Concurrent-To", response_id)]
    request_id = _record_id("request", c.url, c.fetched_at)
    _write(out, compress, [("WARC-Type", "request"), ("WARC-Record-ID", request_id), *concurrent,
                           ("Content-Type", "application/http;msgtype=request")], request)  # fmt: skip
    fields = "".join(f"{k}: {_field(v)}\r\n" for k, v in {"fetchTime": date, **c.metadata}.items())
    metadata_id = _record_id("metadata", c.url, c.fetched_at)
    _write(out, compress, [("WARC-Type", "metadata"), ("WARC-Record-ID", metadata_id), *concurrent,
                           ("Content-Type", "application/warc-fields")], fields.encode("utf-8"))  # fmt: skip
    return 3


def _write(out: IO[bytes], compress: bool, headers: list[tuple[str, str]], block: bytes) -> None:
    head = "WARC/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers)
    head += f"WARC-Block-Digest: {_digest(block)}\r\nContent-Length: {len(block)}\r\n\r\n"
    record = head.encode("utf-8") + block + b"\r\n\r\n"
    out.write(gzip.compress(record, compresslevel=6, mtime=0) if compress else record)


def _digest(data: bytes) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode()


def _date(epoch: float) -> str:
    """WARC 1.1 allows fractions of a second; whole seconds when there are none."""
    moment = datetime.fromtimestamp(epoch, UTC)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    return text + (f".{moment.microsecond:06d}".rstrip("0") if moment.microsecond else "") + "Z"


def _record_id(kind: str, url: str, when: float) -> str:
    return f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, f'{kind} {when!r} {url}')}>"


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"


def _field(value: str) -> str:
    return " ".join(str(value).split())  # a field value is one line
