"""Content-Encoding decoding, pure: what servers really send, and the output cap."""

from __future__ import annotations

import gzip
import zlib

import pytest

from services.text.extract.content_encoding import ContentDecoder

BODY = b"<html><body>" + b"the same words again " * 500 + b"</body></html>"


def _decode(encoding: str, data: bytes, room: int = 1 << 20) -> tuple[bytes, bool]:
    """As fetch's read loop uses it: more output while the cap is not passed."""
    decoder = ContentDecoder(encoding)
    out = decoder.feed(data, room)
    while len(out) <= room and (more := decoder.more(room - len(out))):
        out += more
    return out, decoder.complete


def test_gzip_deflate_and_their_variants():
    raw = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    assert _decode("gzip", gzip.compress(BODY)) == (BODY, True)
    assert _decode("x-gzip", gzip.compress(BODY)) == (BODY, True)
    assert _decode("deflate", zlib.compress(BODY)) == (BODY, True)
    assert _decode("deflate", raw.compress(BODY) + raw.flush()) == (BODY, True)  # old IIS: no header
    assert _decode("gzip", gzip.compress(BODY[:100]) + gzip.compress(BODY[100:])) == (BODY, True)  # members


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "UTF-8", "none", "identity", ""])
def test_a_body_sent_plain_is_read_as_sent(encoding):
    assert _decode(encoding, b"\r\n" + BODY) == (b"\r\n" + BODY, True)


def test_the_cap_holds_against_a_bomb_and_a_cut_stream_is_incomplete():
    bomb = gzip.compress(b"0" * 20_000_000)
    out, _complete = _decode("gzip", bomb, room=1000)
    assert 1000 <= len(out) <= 1001  # one byte past the cap shows it was passed
    assert _decode("gzip", gzip.compress(BODY)[:-30])[1] is False
    with pytest.raises(zlib.error):
        _decode("gzip", b"\x00\x01" + BODY)  # neither gzip nor plain markup: corrupt
    with pytest.raises(ValueError, match="unsupported Content-Encoding"):
        ContentDecoder("br")
