"""Content-Encoding decoding with an output cap: gzip and deflate as servers really send them.

Bodies are decoded here, not by aiohttp, with zlib's ``max_length`` so that a gzip
bomb never grows past the cap in memory. Servers get the encoding wrong in several
ways a crawler meets daily: raw deflate without its zlib header (old IIS), several
gzip members back to back, a body labelled gzip that was sent plain, and
"Content-Encoding: UTF-8" (a charset where the encoding belongs). Each is read as a
browser reads it, or as the bytes plainly are. Pure: bytes in, bytes out.
"""

from __future__ import annotations

import zlib

# Content-Encoding values that name no compression: none at all, "identity", and what old
# servers send there instead (a charset, "none"), whose bodies browsers read as sent.
_AS_SENT = frozenset(
    {"", "identity", "none", "utf-8", "utf8", "iso-8859-1", "binary", "text", "plain", "7bit", "8bit"}
)


def compressed(encoding: str) -> bool:
    """Whether a Content-Encoding names a compression: only then is a declared
    Content-Length not the length of the body a parser gets."""
    return encoding.strip().lower() not in _AS_SENT


_MARKUP_START = (b"<", b"\xef\xbb\xbf", b"%PDF-")


def _sent_as_is(first: bytes) -> bool:
    """Whether a body labelled gzip or deflate begins as markup or a PDF instead: neither
    gzip's magic number nor a zlib header can start that way, so it was sent uncompressed."""
    return first.lstrip(b" \t\r\n").startswith(_MARKUP_START)


class ContentDecoder:
    """Content-Encoding decoding with an output cap per call (gzip bombs stay bounded).

    A gzip bomb inflates about 1000:1, so one 64 KiB network chunk may hold
    64 MB of output: zlib's ``max_length`` stops each call at the cap and
    keeps the rest of the input in ``unconsumed_tail``.
    """

    def __init__(self, encoding: str) -> None:
        encoding = encoding.strip().lower()
        self._raw_retry = encoding == "deflate"  # some servers send raw deflate, no zlib header
        self._fed = False
        if not compressed(encoding):
            self._z = None
        elif encoding in ("gzip", "x-gzip"):
            self._z = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif encoding == "deflate":
            self._z = zlib.decompressobj()
        else:
            raise ValueError(f"unsupported Content-Encoding {encoding!r}")

    def feed(self, data: bytes, room: int) -> bytes:
        """Decode ``data``; at most ``room`` + 1 bytes come out (enough to see the cap passed)."""
        if self._z is None:
            return data
        if not self._fed and data and _sent_as_is(data):
            self._z = None  # labelled compressed, sent plain (a misconfigured server)
            return data
        self._fed = self._fed or bool(data)
        try:
            out = self._z.decompress(data, room + 1)
        except zlib.error:
            if not self._raw_retry:
                raise
            self._z = zlib.decompressobj(-zlib.MAX_WBITS)
            out = self._z.decompress(data, room + 1)
        self._raw_retry = False
        return out

    def more(self, room: int) -> bytes:
        """Output still held back from earlier input (empty when all input is decoded)."""
        z = self._z
        if z is None:
            return b""
        if z.unconsumed_tail:
            return z.decompress(z.unconsumed_tail, room + 1)
        if z.eof and z.unused_data.startswith(b"\x1f\x8b"):  # the next member of a multi-member gzip
            tail = z.unused_data
            self._z = zlib.decompressobj(16 + zlib.MAX_WBITS)
            return self._z.decompress(tail, room + 1)
        return b""

    @property
    def complete(self) -> bool:
        """False when a compressed stream stopped before its end marker (a truncated body)."""
        return self._z is None or self._z.eof or not self._fed


def decode_whole(decoder: ContentDecoder, body: bytes, cap: int) -> bytes:
    """A whole body through ``decoder``: at most ``cap`` + 1 bytes come out, so a caller sees
    the cap passed without a bomb ever growing past it. ``zlib.error`` for bytes that are not
    the compression they are labelled with."""
    parts = [decoder.feed(body, cap)]
    total = len(parts[0])
    while total <= cap:
        more = decoder.more(cap - total)
        if not more:
            break
        parts.append(more)
        total += len(more)
    return b"".join(parts)
