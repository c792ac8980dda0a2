"""One GET through Python's own ``http.client``, for servers aiohttp's parser refuses.

aiohttp parses responses with llhttp, which (even in aiohttp's lax mode for responses)
rejects what old servers still send and browsers accept: ``Content-Length`` twice,
``Content-Length`` beside ``Transfer-Encoding: chunked`` (chunked wins, RFC 9112 6.3),
a stray line among the headers, a space before a header's colon. ``http.client`` reads
all of these, so ``fetch`` asks it once more when aiohttp reports a malformed response:
the page a browser shows is not lost to a protocol nit. It is blocking, so it runs in a
thread, and it is slow, so it runs only on that rare path.

Headers come back as a ``CIMultiDict`` of ``str``, their bytes read as UTF-8 with
``surrogateescape`` (as aiohttp reads them), so the caller treats both alike.
"""

from __future__ import annotations

import http.client
import ssl
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from multidict import CIMultiDict


@dataclass
class LenientResponse:
    """The parts of a response ``fetch`` reads (aiohttp's ``ClientResponse`` has the same names)."""

    status: int
    headers: CIMultiDict[str]
    raw_body: bytes  # as sent: still compressed when Content-Encoding says so


_CHUNK = 64 * 1024


def lenient_get(
    url: str,
    headers: dict[str, str],
    max_raw_bytes: int,
    timeout: float,
    deadline: float,
    tls: ssl.SSLContext | None = None,
) -> LenientResponse:
    """GET ``url`` without following redirects; the body (2xx only) cut at ``max_raw_bytes`` + 1.

    ``timeout`` bounds the connect and every read, ``deadline`` (``time.monotonic()``) the
    body as a whole, so a server dripping bytes cannot hold the thread. Raises ``OSError``
    (``TimeoutError`` past the deadline) and ``http.client.HTTPException`` subclasses."""
    parts = urlsplit(url)
    if parts.hostname is None:
        raise http.client.InvalidURL(f"no host in {url!r}")
    connection: http.client.HTTPConnection
    if parts.scheme == "https":
        connection = http.client.HTTPSConnection(parts.hostname, parts.port, timeout=timeout, context=tls)
    else:
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
    try:
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        connection.request("GET", target, headers={**headers, "Connection": "close"})
        response = connection.getresponse()
        chunks: list[bytes] = []
        size = 0
        while 200 <= response.status < 300 and size <= max_raw_bytes:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{url}: the body did not end in time")
            chunk = response.read1(_CHUNK)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return LenientResponse(response.status, _fields(response), b"".join(chunks)[: max_raw_bytes + 1])
    finally:
        connection.close()


def _fields(response: http.client.HTTPResponse) -> CIMultiDict[str]:
    """The response's headers, with those after a malformed line recovered: the email parser
    under ``http.client`` stops at a line that is not a header (a stray line, a space before
    a colon) and keeps the rest as its "payload"; a browser reads on."""
    fields: CIMultiDict[str] = CIMultiDict()
    for name, value in response.getheaders():
        fields.add(name.strip(), _as_sent(value))
    rest = response.msg.get_payload()
    for line in rest.splitlines() if isinstance(rest, str) else ():
        name, colon, value = line.partition(":")
        name = name.strip()
        if colon and name and " " not in name and "\t" not in name:
            fields.add(name, _as_sent(value.strip()))
    return fields


def _as_sent(value: str) -> str:
    """``http.client`` decodes header bytes as Latin-1; read them as aiohttp does."""
    return value.encode("latin-1", "replace").decode("utf-8", "surrogateescape")
