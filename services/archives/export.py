"""Stored documents written out as standard WARC 1.1, for warcio, pywb and other archives' tools.

``write_warc(out, captures)`` takes an iterable of ``Capture`` (or plain tuples
``(url, fetched_at, ip, content_type, status, headers, body)``) and writes, after one
``warcinfo`` record, three records a capture: the ``request`` (a GET for the URL), the
``response`` (the HTTP message as stored: status, headers, body) and a ``metadata``
record (the capture's extra fields, ``application/warc-fields``: title, language,
``outlink`` once per link), tied together by ``WARC-Concurrent-To``. A ``Revisit`` (a URL
whose bytes are an exported capture's: a duplicate the crawler folded) is one ``revisit``
record of the identical-payload-digest profile, naming that capture's response.

``WARC-Date`` is the fetch time, ``WARC-IP-Address`` the server's address where known,
``WARC-Payload-Digest`` and ``WARC-Block-Digest`` SHA-1 in base 32 as the WARC guidelines
write them. URLs are written as URIs of printable ASCII (``ascii_uri``: IDNA hosts,
percent-encoded UTF-8), as headers and request lines need. Each record is its own gzip
member (``.warc.gz``), so the export can itself be cut into batches and archive-crawled.

The stored body is the decoded one (what the crawler parsed), so ``Content-Encoding``,
``Transfer-Encoding`` and ``Content-Length`` are written anew to match it. Record ids are
derived from the URL, the time and the record type: the same documents export to the
same bytes (given the same ``created`` time for the warcinfo record).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from http import HTTPStatus
from typing import NamedTuple, Protocol
from urllib.parse import quote, urlsplit, urlunsplit

from isal import igzip

SOFTWARE = "Nimbus Search"
CONFORMS_TO = "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/"
REVISIT_PROFILE = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
# ISA-L's level 2: on the sample web's crawl (6.5 MB of records) 0.03 s and 2.98 MB, against
# zlib level 6's 0.34 s and 2.80 MB: the export's time was zlib's (docs/benchmarks.md).
_LEVEL = 2
_DROPPED = {"content-encoding", "transfer-encoding", "content-length"}


class Output(Protocol):
    """Where records go: a binary file, a socket's writer, anything with ``write(bytes)``."""

    def write(self, data: bytes, /) -> object: ...


Fields = Mapping[str, str] | Sequence[tuple[str, str]]


class Capture(NamedTuple):
    url: str
    fetched_at: float  # epoch seconds
    ip: str  # "" when unknown
    content_type: str
    status: int
    headers: list[tuple[str, str]]
    body: bytes
    # The metadata record's fields (title, language, ``outlink`` once per link, ...): a mapping,
    # or (name, value) pairs where a name repeats.
    metadata: Fields = {}


class Revisit(NamedTuple):
    """Another URL whose bytes are those of an exported capture (a duplicate the crawler folded):
    a ``revisit`` record (identical payload digest) naming that capture's response."""

    url: str
    fetched_at: float
    original_url: str
    original_fetched_at: float
    content_type: str
    body_digest: str  # the original's WARC-Payload-Digest (``payload_digest``)


def write_warc(
    out: Output,
    captures: Iterable[Capture | Revisit | tuple[object, ...]],
    *,
    compress: bool = True,
    created: float | None = None,
) -> int:
    """Write ``captures`` (and ``Revisit``s, after the capture they name) as WARC 1.1 to
    ``out``; returns the number of records written. ``created``: the warcinfo record's date
    (now by default)."""
    info_id = _record_id("warcinfo", "", 0.0)
    when = created if created is not None else datetime.now(UTC).timestamp()
    fields = f"software: {SOFTWARE}\r\nformat: WARC File Format 1.1\r\nconformsTo: {CONFORMS_TO}\r\n"
    _write(out, compress, [("WARC-Type", "warcinfo"), ("WARC-Record-ID", info_id),
                           ("WARC-Date", _date(when)),
                           ("Content-Type", "application/warc-fields")], fields.encode())  # fmt: skip
    written = 1
    for item in captures:
        if isinstance(item, Revisit):
            written += _write_revisit(out, item, info_id, compress)
            continue
        capture = item if isinstance(item, Capture) else Capture(*item)  # type: ignore[arg-type]
        written += _write_capture(out, capture, info_id, compress)
    return written


def payload_digest(body: bytes) -> str:
    """WARC-Payload-Digest of a body: SHA-1 in base 32."""
    return _digest(body)


def _write_capture(out: Output, c: Capture, info_id: str, compress: bool) -> int:
    date = _date(c.fetched_at)
    uri = ascii_uri(c.url)
    response_id = _record_id("response", uri, c.fetched_at)
    common = [("WARC-Date", date), ("WARC-Target-URI", uri), ("WARC-Warcinfo-ID", info_id)]
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
    parts = urlsplit(uri)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    request = f"GET {target} HTTP/1.1\r\nHost: {parts.netloc}\r\nUser-Agent: {SOFTWARE}\r\n\r\n".encode()
    concurrent = [*common, ("WARC-Concurrent-To", response_id)]
    request_id = _record_id("request", uri, c.fetched_at)
    _write(out, compress, [("WARC-Type", "request"), ("WARC-Record-ID", request_id), *concurrent,
                           ("Content-Type", "application/http;msgtype=request")], request)  # fmt: skip
    pairs = c.metadata.items() if isinstance(c.metadata, Mapping) else c.metadata
    fields = "".join(f"{k}: {_field(v)}\r\n" for k, v in [("fetchTime", date), *pairs])
    metadata_id = _record_id("metadata", uri, c.fetched_at)
    _write(out, compress, [("WARC-Type", "metadata"), ("WARC-Record-ID", metadata_id), *concurrent,
                           ("Content-Type", "application/warc-fields")], fields.encode("utf-8"))  # fmt: skip
    return 3


def _write_revisit(out: Output, r: Revisit, info_id: str, compress: bool) -> int:
    uri, original = ascii_uri(r.url), ascii_uri(r.original_url)
    head = f"HTTP/1.1 200 OK\r\nContent-Type: {r.content_type}\r\n\r\n".encode("latin-1", "replace")
    revisit_id = _record_id("revisit", uri, r.fetched_at)
    _write(out, compress, [("WARC-Type", "revisit"), ("WARC-Record-ID", revisit_id),
                           ("WARC-Date", _date(r.fetched_at)), ("WARC-Target-URI", uri),
                           ("WARC-Warcinfo-ID", info_id), ("WARC-Profile", REVISIT_PROFILE),
                           ("WARC-Refers-To", _record_id("response", original, r.original_fetched_at)),
                           ("WARC-Refers-To-Target-URI", original),
                           ("WARC-Refers-To-Date", _date(r.original_fetched_at)),
                           ("Content-Type", "application/http;msgtype=response"),
                           ("WARC-Payload-Digest", r.body_digest)], head)  # fmt: skip
    return 1


def ascii_uri(url: str) -> str:
    """``url`` as a URI of printable ASCII, as WARC headers and HTTP request lines need: the host
    in IDNA, any other character outside printable ASCII percent-encoded as UTF-8. A URL
    already so (every normalized URL) is returned unchanged."""
    if _PRINTABLE.fullmatch(url):
        return url
    parts = urlsplit(url)
    userinfo, at, hostport = parts.netloc.rpartition("@")
    host, colon, port = hostport.rpartition(":") if not hostport.endswith("]") else (hostport, "", "")
    if not colon or not port.isdigit():
        host, colon, port = hostport, "", ""
    if not host.isascii():
        # A name IDNA cannot spell stays as it is: percent-encoded below, as the rest.
        with contextlib.suppress(UnicodeError):
            host = host.lower().encode("idna").decode("ascii")
    netloc = f"{userinfo}{at}{host}{colon}{port}"
    head = f"{parts.scheme}://{netloc}" if parts.scheme else netloc
    return _escape(head + urlunsplit(("", "", parts.path, parts.query, parts.fragment)))


_PRINTABLE = re.compile(r"[\x21-\x7e]*")


def _escape(text: str) -> str:
    return re.sub(r"[^\x21-\x7e]", lambda m: quote(m.group(), safe=""), text)


def _write(out: Output, compress: bool, headers: list[tuple[str, str]], block: bytes) -> None:
    head = "WARC/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers)
    head += f"WARC-Block-Digest: {_digest(block)}\r\nContent-Length: {len(block)}\r\n\r\n"
    record = head.encode("utf-8") + block + b"\r\n\r\n"
    out.write(igzip.compress(record, compresslevel=_LEVEL, mtime=0) if compress else record)


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
