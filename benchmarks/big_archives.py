"""The sample WARC and MediaWiki dump enlarged to a given size, deterministically, for
``benchmarks.archives``.

* **WARC** (``warc/iana.warc.gz``): every copy holds each ``response`` record of the IANA
  crawl (16 HTML pages, 4 redirects, 24 stylesheets, scripts, images and fonts) under a
  host of its own (``http://c7.iana.org/domains`` in copy 7; relative links stay inside
  the copy), each HTML body with a line naming its copy, so that no two pages have equal
  bodies (equal bodies at different URLs would fold into one document). Request, revisit
  and ``warcinfo`` records are left out. WARC/1.0, one gzip member per record, as the
  sample and as Common Crawl's files.
* **MediaWiki** (the enwiki sample: 106 articles, 100 redirects): the ``<siteinfo>``
  once, then every ``<page>`` once per copy, titles ``"Anarchism (copy 7)"`` (redirect
  targets renamed alike), page and revision ids shifted by the copy, and a sentence
  naming the copy appended to the wikitext. Written as one **single-stream** bz2 file, as
  the sample (registration then records indexed_bzip2's seek points); Wikipedia's own
  large dumps are multistream.

Files are written once into ``var/bench-archives/`` (not committed) and reused while the
sample and the size are the same; their names say the copies.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import math
import re
import uuid
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
CACHE = ROOT / "var" / "bench-archives"
WARC = DATA / "warc" / "iana.warc.gz"
WIKI = DATA / "wiki" / "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
MB = 1024 * 1024
_ID_SHIFT = 100_000_000  # page and revision ids of copy n: id + n * this (enwiki's are below)


def warc_records(raw: bytes) -> Iterator[tuple[dict[str, str], bytes]]:
    """(header fields, block) of each record of an uncompressed WARC."""
    at = 0
    while at < len(raw):
        end = raw.index(b"\r\n\r\n", at)
        lines = raw[at:end].decode("utf-8").split("\r\n")
        fields = dict(line.split(": ", 1) for line in lines[1:])
        length = int(fields["Content-Length"])
        yield fields, raw[end + 4 : end + 4 + length]
        at = end + 4 + length
        while raw[at : at + 2] == b"\r\n":
            at += 2


_BODY_TAG = re.compile(rb"<body[^>]*>", re.I)


def warc_copy(responses: list[tuple[dict[str, str], bytes]], n: int) -> Iterator[bytes]:
    """Copy ``n``'s records, each a gzip member."""
    for fields, block in responses:
        url = fields["WARC-Target-URI"].replace("://www.iana.org", f"://c{n}.iana.org", 1)
        head, sep, body = block.partition(b"\r\n\r\n")
        tag = _BODY_TAG.search(body)
        if tag and b"text/html" in head:
            note = f"\n<p>Copy {n} of this page, archived for the benchmark.</p>\n".encode()
            body = body[: tag.end()] + note + body[tag.end() :]
        block = head + sep + body
        record_id = uuid.uuid5(uuid.NAMESPACE_URL, f"{n}:{fields['WARC-Record-ID']}")
        digest = hashlib.sha1(body).hexdigest()  # WARC-Payload-Digest is SHA-1
        header = (
            "WARC/1.0\r\nWARC-Type: response\r\n"
            f"WARC-Record-ID: <urn:uuid:{record_id}>\r\nWARC-Date: {fields['WARC-Date']}\r\n"
            f"WARC-Target-URI: {url}\r\nContent-Type: {fields['Content-Type']}\r\n"
            f"WARC-Payload-Digest: sha1:{digest}\r\nContent-Length: {len(block)}\r\n\r\n"
        )
        yield gzip.compress(header.encode() + block + b"\r\n\r\n", compresslevel=6, mtime=0)


def _page_copy(page: bytes, n: int) -> bytes:
    def title(match: re.Match[bytes]) -> bytes:
        return match.group(1) + match.group(2) + f" (copy {n})".encode() + match.group(3)

    page = re.sub(rb"(<title>)(.*?)(</title>)", title, page, count=1)
    page = re.sub(rb'(<redirect title=")(.*?)(")', title, page, count=1)
    page = re.sub(rb"<id>(\d+)</id>", lambda m: b"<id>%d</id>" % (int(m.group(1)) + n * _ID_SHIFT), page)
    return page.replace(b"</text>", f"\n\nThis is copy {n} of the article.</text>".encode(), 1)


def wiki_parts(raw: bytes) -> tuple[bytes, list[bytes], bytes]:
    """The dump's head (through ``<siteinfo>``), its ``<page>``s and its tail."""
    first, last = raw.index(b"<page>"), raw.rindex(b"</page>") + len(b"</page>")
    pages = re.findall(rb"<page>.*?</page>", raw[first:last], re.S)
    return raw[:first], pages, raw[last:]


def _copies(one_copy: int, size: int) -> int:
    return max(1, math.ceil(size / one_copy))


def enlarged_warc(size: int, cache: Path = CACHE) -> Path:
    """A bundle folder whose WARC is at least ``size`` bytes (compressed)."""
    responses = [
        (fields, block)
        for fields, block in warc_records(gzip.decompress(WARC.read_bytes()))
        if fields.get("WARC-Type") == "response"
    ]
    copies = _copies(sum(map(len, warc_copy(responses, 0))), size)
    folder = cache / f"warc-x{copies}"
    target = folder / f"iana-x{copies}.warc.gz"
    if not target.exists():
        folder.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(".part")
        with partial.open("wb") as out:
            for n in range(copies):
                out.writelines(warc_copy(responses, n))
        (folder / "bundle.toml").write_text(f'type = "warc"\ndescription = "iana.warc.gz x{copies}"\n')
        partial.rename(target)
    return folder


def enlarged_wiki(size: int, cache: Path = CACHE) -> Path:
    """A bundle folder whose single-stream bz2 dump is at least ``size`` bytes."""
    head, pages, tail = wiki_parts(bz2.decompress(WIKI.read_bytes()))
    ratio = WIKI.stat().st_size / (len(head) + sum(map(len, pages)) + len(tail))
    copies = _copies(int(ratio * sum(map(len, pages))), size)
    folder = cache / f"wiki-x{copies}"
    target = folder / f"enwiki-x{copies}.xml.bz2"
    if not target.exists():
        folder.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(".part")
        packer = bz2.BZ2Compressor(9)
        with partial.open("wb") as out:
            out.write(packer.compress(head))
            for n in range(copies):
                for page in pages:
                    out.write(packer.compress(_page_copy(page, n) + b"\n  "))
            out.write(packer.compress(tail))
            out.write(packer.flush())
        (folder / "bundle.toml").write_text(f'type = "mediawiki"\ndescription = "enwiki sample x{copies}"\n')
        partial.rename(target)
    return folder
