"""An HTML body's bytes to text: the charset a browser would use, then better where it guesses.

The order is the HTML standard's (a byte-order mark, the Content-Type header, a ``<meta
charset>``, then detection, with an XHTML page's XML declaration before detection),
labels are read through the WHATWG Encoding Standard's table, and valid UTF-8 is
trusted over a legacy label (``decode_body``). The header's label is read once, here
(``header_charset``), for the crawler and the cached copies alike. Pure: bytes in, text out.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([a-zA-Z0-9_\-:.]+)""", re.I)
# XHTML's XML declaration, which must open the document (XML 1.0, 4.3.3).
_XML_ENCODING = re.compile(rb"""<\?xml[^>]*?\sencoding\s*=\s*["']([a-zA-Z0-9_\-:.]+)["']""")


@dataclass(frozen=True)
class DecodedHtml:
    """Text of an HTML body, the charset that produced it, and where that charset came from."""

    text: str
    charset: str
    source: str  # bom | header | meta | xml | utf-8 (valid UTF-8 beats a legacy label) | detected | default


def header_charset(content_type: str) -> str | None:
    """The ``charset`` parameter of a Content-Type (as fetched, or as stored with a page),
    unquoted, for ``decode_body``; ``None`` when it names none.

    An empty value (``charset=""``) is no declaration, not a label: ``None``, so decoding
    goes on to the next source (``<meta charset>``, then detection), as the HTML
    standard's encoding sniffing does when the transport layer names no usable encoding.
    An unquoted empty ``charset=`` is skipped like any empty parameter (WHATWG MIME
    parsing), so a later ``charset`` parameter still counts.
    """
    for param in content_type.split(";")[1:]:
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset" and value.strip():
            return value.strip().strip("\"'").strip() or None
    return None


def decode_html(body: bytes, header_label: str | None = None) -> str:
    """Decode an HTML body to text; undecodable bytes never abort a page."""
    return decode_body(body, header_label).text


def decode_body(body: bytes, header_label: str | None = None) -> DecodedHtml:
    """Decode as a browser would, then do better where browsers guess.

    ``header_label`` is the Content-Type's charset (``header_charset``), if any.

    Order (the HTML standard's): a byte-order mark, the Content-Type header,
    a ``<meta charset>`` in the first 4 KiB, an XML declaration's encoding
    (XHTML; not read by browsers for text/html, but the page's own word), then a real detector
    (charset-normalizer) when nothing usable is declared or the declared
    charset cannot decode the bytes. Two departures, both because a search
    engine would rather index words than mojibake: a body that is valid UTF-8
    and not plain ASCII is UTF-8 whatever a legacy label says (valid UTF-8
    multi-byte sequences almost never occur by chance in legacy text, while
    "labelled latin-1, really UTF-8" is a common server default); and an
    undeclared body that is valid UTF-8 skips the detector (the fast path
    for most of the web).
    """
    for bom, codec in _BOMS:
        if body.startswith(bom):
            return DecodedHtml(body[len(bom) :].decode(codec, "replace"), codec, "bom")
    strict = _strict(body, "utf-8")
    # UTF-8 with a few stray legacy bytes (pasted text): keep its UTF-8.
    utf8 = strict if strict is not None else _mostly_utf8(body)
    declarations = (("header", header_label), ("meta", _meta_charset(body)), ("xml", _xml_encoding(body)))
    for source, label in declarations:
        declared = _codec(label)
        if declared is None:
            continue
        if source != "header" and declared.startswith(("utf-16", "utf-32")):
            declared = "utf-8"  # bytes on the wire cannot be UTF-16 because a <meta> says so (WHATWG)
        # Valid UTF-8 beats any legacy label; UTF-8 with stray bytes beats only windows-1252,
        # the label servers add by default. A chosen legacy label that decodes the bytes
        # stands: Thai in TIS-620 reads as "mostly UTF-8" (its letters include bytes that
        # form valid pairs by chance).
        if (
            utf8 is not None
            and declared != "utf-8"
            and not body.isascii()
            and (strict is not None or declared == "cp1252" or _strict(body, declared) is None)
        ):
            return DecodedHtml(utf8, "utf-8", "utf-8")
        text = utf8 if declared == "utf-8" else _strict(body, declared)
        if text is not None:
            return DecodedHtml(text, declared, source)
        # Declared but wrong (a mislabelled page): the <meta> may be right, else the detector decides.
    if utf8 is not None:
        return DecodedHtml(utf8, "utf-8", "utf-8")
    detected = _detect(body)
    if detected is not None:
        return DecodedHtml(body.decode(detected, "replace"), detected, "detected")
    return DecodedHtml(body.decode("cp1252", "replace"), "cp1252", "default")


_BOMS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))
# Labels the WHATWG Encoding Standard (https://encoding.spec.whatwg.org/#names-and-labels)
# reads as another encoding than Python's codec of the same name: the Windows supersets that
# pages labelled with the older standard really use, as every browser decodes them. Python's
# strict codec of the label's name fails such pages: "shift_jis" on a circled digit, "iso-8859-9"
# drops the euro sign and curly quotes, "tis-620" fails on curly quotes, "gb2312" on any GBK
# character.
_WHATWG_CODECS = {
    "cp1252": "ansi_x3.4-1968 ascii cp819 csisolatin1 ibm819 iso-8859-1 iso-ir-100 iso8859-1 "
    "iso88591 iso_8859-1 iso_8859-1:1987 l1 latin1 latin-1 us-ascii x-cp1252",
    "cp1254": "csisolatin5 iso-8859-9 iso-ir-148 iso8859-9 iso88599 iso_8859-9 iso_8859-9:1989 l5 "
    "latin5 x-cp1254",
    "cp874": "dos-874 iso-8859-11 iso8859-11 iso885911 tis-620 windows-874",
    "gb18030": "chinese csgb2312 csiso58gb231280 gb2312 gb_2312 gb_2312-80 gbk iso-ir-58 x-gbk",
    "big5hkscs": "big5 big5-hkscs cn-big5 csbig5 x-x-big5",
    "cp949": "cseuckr csksc56011987 euc-kr iso-ir-149 korean ks_c_5601-1987 ks_c_5601-1989 ksc5601 "
    "ksc_5601 windows-949",
    "cp932": "csshiftjis ms932 ms_kanji shift-jis shift_jis sjis windows-31j x-sjis",
    "iso8859-8": "csiso88598i iso-8859-8-i logical",
    "mac-roman": "csmacintosh mac macintosh x-mac-roman",
    "mac-cyrillic": "x-mac-cyrillic x-mac-ukrainian",
}
_WHATWG_LABELS = {label: codec for codec, labels in _WHATWG_CODECS.items() for label in labels.split()}
_DETECT_SAMPLE = 64 * 1024  # enough text to tell; the detector's cost grows with the sample
_TAGS = re.compile(rb"<[^>]*>")


def _codec(label: str | None) -> str | None:
    """Python's codec name for a charset label, or ``None`` when unknown."""
    if not label:
        return None
    label = label.strip().strip("\"'").lower()
    if label in _WHATWG_LABELS:
        return _WHATWG_LABELS[label]
    try:
        return codecs.lookup(label).name
    except LookupError:
        return None


def _mostly_utf8(body: bytes) -> str | None:
    """``body`` as UTF-8 with each invalid byte read as windows-1252, when it holds valid
    multi-byte sequences and not more invalid bytes than those (four spared); else ``None``.

    Legacy-encoded text rarely holds valid multi-byte UTF-8 by chance (Thai is the
    exception, hence the bound), so a page with some is UTF-8 where a few pasted Latin-1
    bytes broke it: decoding all of it as windows-1252 would turn every "ü" into "Ã¼".
    """
    text = body.decode("utf-8", "surrogateescape")
    bad = sum(1 for ch in text if "\udc80" <= ch <= "\udcff")
    good = sum(1 for ch in text if ord(ch) > 0x7F) - bad
    # Stray bytes are a few among many valid characters. Not more than the valid ones: Thai
    # in TIS-620 forms a valid pair every few letters by chance (14 pairs, 52 bad bytes).
    if good == 0 or bad > good + 4:
        return None
    return "".join(
        bytes([ord(ch) - 0xDC00]).decode("cp1252", "replace") if "\udc80" <= ch <= "\udcff" else ch
        for ch in text
    )


def _strict(body: bytes, codec: str) -> str | None:
    try:
        return body.decode(codec)
    except UnicodeDecodeError:
        return None


def _detect(body: bytes) -> str | None:
    """charset-normalizer's best guess for the page's text (markup removed: it is all ASCII).

    On a near tie windows-1252 wins: it is the web's most common legacy
    charset, and short Western text decodes identically in several code pages.
    """
    from charset_normalizer import from_bytes

    matches = list(from_bytes(_TAGS.sub(b" ", body[:_DETECT_SAMPLE])))
    if not matches:
        return None
    best = matches[0]
    for match in matches:
        if (
            match.chaos <= best.chaos + 0.01
            and match.coherence >= best.coherence - 0.1
            and "cp1252" in match.could_be_from_charset
        ):
            return "cp1252"
    return _codec(best.encoding)


def _xml_encoding(body: bytes) -> str | None:
    """The encoding an XHTML page's XML declaration names: the page's own word for it where
    no header or ``<meta>`` gives one (libxml2 reads it too), so a short page in ISO-8859-2
    or KOI8-R is not left to the detector's guess."""
    if not body.startswith(b"<?xml"):
        return None
    match = _XML_ENCODING.match(body, 0, 200)
    return match.group(1).decode("ascii") if match else None


def _meta_charset(body: bytes) -> str | None:
    match = _META_CHARSET.search(body[:4096])
    return match.group(1).decode("ascii", "replace") if match else None
