"""Document parsers: the libraries Nimbus uses against their peers, on the sample data, in one run.

    .venv/bin/python -m benchmarks.parsers [--reps 5] [--min-seconds 0.2] [--only html pdf wiki warc]

Four tables, one per kind of document in data/ (data/README.md says what each file is), each
contender on the same inputs in the same process:

* **html**: the 16 ``200 text/html`` pages of the iana.org crawl in ``warc/iana.warc.gz`` to
  title, text and links. Nimbus's own path (``services.text.extract.html.parse_html``: charset, Lexbor
  tree, links normalized, boilerplate dropped) and, for the same plain task as the peers,
  selectolax (Lexbor) alone; lxml; BeautifulSoup over lxml and over ``html.parser``.
* **pdf**: the three PDFs of ``pdf/`` (30 pages) to text. Nimbus's path
  (``services.text.extract.pdf.parse_pdf``: pypdfium2) against pypdf and pdfminer.six.
* **wiki**: the 106 articles of the MediaWiki dump in ``wiki/`` to plain text and wikilinks,
  after the clean-up of ``benchmarks.wikidump`` (references, comments, categories):
  wikitextparser, as the text corpus reads them, against mwparserfromhell.
* **warc**: every record of ``warc/iana.warc.gz`` and its payload: warcio (which Nimbus uses)
  against fastwarc; then what each reads of the chunked WARC and of the ARC file.

Throughput is CPU time (``time.process_time``): a warm-up pass first (its output feeds the
sanity columns), then ``--reps`` rounds in which each contender takes its turn, a repetition
being as many passes over the inputs as take ``--min-seconds``; the median repetition is
printed. Ratio columns divide Nimbus's figure (and,
for HTML, bare selectolax's) by each row's. The sanity columns say the contenders extract the
same thing: running words, links, and the mean per-document word-set Jaccard against the
library Nimbus uses (``benchmarks.tables.words``). A library that is not installed is skipped
with a line saying how to install it.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path

from bs4 import BeautifulSoup
from selectolax.lexbor import LexborHTMLParser

from benchmarks.parser_harness import Archive, Contender, Extract, Section, missing_library, run_section
from services.text.extract.html import parse_html
from services.text.extract.pdf import parse_pdf

DATA = Path(__file__).resolve().parents[1] / "data"
_SKIP_TAGS = ("script", "style", "noscript", "template", "svg", "iframe", "object", "noframes")

# --- HTML ----------------------------------------------------------------------------------


def html_section() -> Section:
    """The iana.org crawl's HTML pages, as (URL, body, header charset)."""
    from warcio.archiveiterator import ArchiveIterator

    pages: dict[str, tuple[str, bytes, str | None]] = {}
    with (DATA / "warc" / "iana.warc.gz").open("rb") as fh:
        for record in ArchiveIterator(fh):
            if record.rec_type != "response" or record.http_headers is None:
                continue
            ctype = record.http_headers.get_header("Content-Type") or ""
            if record.http_headers.get_statuscode() != "200" or not ctype.startswith("text/html"):
                continue
            url = record.rec_headers.get_header("WARC-Target-URI")
            charset = ctype.partition("charset=")[2].strip() or None
            pages.setdefault(url, (url, record.content_stream().read(), charset))
    inputs = list(pages.values())
    contenders = [Contender("nimbus parse_html", _nimbus_html), Contender("selectolax", _selectolax)]
    try:
        import lxml.html  # noqa: F401

        contenders.append(Contender("lxml", _lxml))
        contenders.append(Contender("BeautifulSoup+lxml", lambda page: _soup(page, "lxml")))
    except ImportError:
        contenders += [missing_library("lxml", "lxml"), missing_library("BeautifulSoup+lxml", "lxml")]
    contenders.append(Contender("BeautifulSoup+html.parser", lambda page: _soup(page, "html.parser")))
    return Section(
        "HTML to text + links",
        "pages",
        inputs,
        len(inputs),
        sum(len(body) for _url, body, _charset in inputs),
        contenders,
        nimbus="nimbus parse_html",
        library="selectolax",
        notes=[
            "nimbus parse_html does more than the peers: links resolved, normalized and deduplicated, "
            "meta tags, boilerplate dropped from the text. selectolax is the same library on the peers' "
            "task: title, body text without script/style, the href of every <a> as written."
        ],
    )


def _nimbus_html(page: tuple[str, bytes, str | None]) -> Extract:
    url, body, charset = page
    parsed = parse_html(body, url, charset)
    return Extract(f"{parsed.title} {parsed.text}", len(parsed.links))


def _selectolax(page: tuple[str, bytes, str | None]) -> Extract:
    _url, body, _charset = page
    tree = LexborHTMLParser(body)
    titles = tree.tags("title")
    title = titles[0].text() if titles else ""
    links = [href for a in tree.tags("a") if (href := a.attributes.get("href"))]
    tree.strip_tags(list(_SKIP_TAGS))
    root = tree.body or tree.root
    return Extract(f"{title} {root.text(separator=' ') if root is not None else ''}", len(links))


def _lxml(page: tuple[str, bytes, str | None]) -> Extract:
    import lxml.html
    from lxml import etree

    _url, body, _charset = page
    doc = lxml.html.document_fromstring(body)
    title = doc.findtext(".//title") or ""
    links = [str(href) for href in doc.xpath("//a/@href")]
    etree.strip_elements(doc, etree.Comment, *_SKIP_TAGS, with_tail=False)
    return Extract(f"{title} {' '.join(doc.body.itertext())}", len(links))


def _soup(page: tuple[str, bytes, str | None], parser: str) -> Extract:
    _url, body, _charset = page
    soup = BeautifulSoup(body, parser)
    title = soup.title.get_text() if soup.title else ""
    links = [str(a["href"]) for a in soup.find_all("a", href=True)]
    for tag in soup(list(_SKIP_TAGS)):
        tag.decompose()
    return Extract(f"{title} {(soup.body or soup).get_text(' ')}", len(links))


# --- PDF -----------------------------------------------------------------------------------


def pdf_section() -> Section:
    import pypdfium2 as pdfium

    for noisy in ("pypdf", "pdfminer"):  # font warnings on every pass, not findings
        logging.getLogger(noisy).setLevel(logging.ERROR)

    inputs = [path.read_bytes() for path in sorted((DATA / "pdf").glob("*.pdf"))]
    pages = 0
    for data in inputs:
        pdf = pdfium.PdfDocument(data)
        pages += len(pdf)
        pdf.close()
    contenders = [Contender("nimbus parse_pdf (pypdfium2)", _nimbus_pdf)]
    try:
        import pypdf  # noqa: F401

        contenders.append(Contender("pypdf", _pypdf))
    except ImportError:
        contenders.append(missing_library("pypdf", "pypdf"))
    contenders.append(Contender("pdfminer.six", _pdfminer))
    return Section(
        "PDF to text",
        "pages",
        inputs,
        pages,
        sum(map(len, inputs)),
        contenders,
        nimbus="nimbus parse_pdf (pypdfium2)",
    )


def _nimbus_pdf(data: bytes) -> Extract:
    return Extract(parse_pdf(data).text)


def _pypdf(data: bytes) -> Extract:
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(data))
    return Extract(" ".join(page.extract_text() for page in reader.pages))


def _pdfminer(data: bytes) -> Extract:
    from pdfminer.high_level import extract_text

    return Extract(extract_text(io.BytesIO(data)))


# --- wikitext ------------------------------------------------------------------------------


def wiki_section() -> Section:
    from benchmarks.wikidump import CATEGORY, COMMENT, REF, read_dump
    from services.demo.sampleweb import WIKI_DUMP

    articles, _redirects = read_dump(DATA / WIKI_DUMP)
    inputs = [CATEGORY.sub("", COMMENT.sub("", REF.sub("", text))) for text in articles.values()]
    contenders = [Contender("wikitextparser", _wikitextparser)]
    try:
        import mwparserfromhell

        name = "mwparserfromhell" + ("" if mwparserfromhell.parser.use_c else " (pure Python)")
        contenders.append(Contender(name, _mwparserfromhell))
    except ImportError:
        contenders.append(missing_library("mwparserfromhell", "mwparserfromhell"))
    return Section(
        "wikitext to text + wikilinks",
        "articles",
        inputs,
        len(inputs),
        sum(len(text.encode()) for text in inputs),
        contenders,
        nimbus="wikitextparser",
        notes=[
            "wikitextparser is the text corpus's path (benchmarks/textcorpus.py); Nimbus reads dumps "
            "with services/archives/formats/wikitext.py (docs/benchmarks.md, 'Archive readers')."
        ],
    )


def _wikitextparser(text: str) -> Extract:
    import wikitextparser as wtp

    parsed = wtp.parse(text)
    links = len(parsed.wikilinks)
    return Extract(parsed.plain_text(replace_templates=True, replace_tables=True), links)


def _mwparserfromhell(text: str) -> Extract:
    import mwparserfromhell

    parsed = mwparserfromhell.parse(text)
    return Extract(parsed.strip_code(), len(parsed.filter_wikilinks()))


# --- WARC ----------------------------------------------------------------------------------

_WARC = DATA / "warc" / "iana.warc.gz"
_CHUNKED = DATA / "warc" / "example-iana.org-chunked.warc"
_ARC = DATA / "warc" / "example.arc.gz"


def warc_section() -> Section:
    data = _WARC.read_bytes()
    records = _warcio(data).records
    contenders = [Contender("warcio", _warcio)]
    try:
        import fastwarc  # noqa: F401

        contenders.append(Contender("fastwarc", _fastwarc))
    except ImportError:
        contenders.append(missing_library("fastwarc", "fastwarc"))
    return Section(
        "WARC records + payloads",
        "records",
        [data],
        records,
        len(data),
        contenders,
        nimbus="warcio",
        notes=_warc_capabilities("fastwarc" in [c.name for c in contenders if c.extract]),
    )


def _warcio(data: bytes) -> Archive:
    from warcio.archiveiterator import ArchiveIterator

    records, size, digest = 0, 0, hashlib.sha1()
    for record in ArchiveIterator(io.BytesIO(data)):
        records += 1
        payload = record.content_stream().read()
        if record.rec_type == "response":
            size += len(payload)
            digest.update(payload)
    return Archive(records, size, digest.hexdigest())


def _fastwarc(data: bytes, auto_decode: str = "none") -> Archive:
    from fastwarc.warc import ArchiveIterator, WarcRecordType

    records, size, digest = 0, 0, hashlib.sha1()
    for record in ArchiveIterator(io.BytesIO(data), parse_http=True, auto_decode=auto_decode):
        records += 1
        payload = record.reader.read()
        if record.record_type == WarcRecordType.response:
            size += len(payload)
            digest.update(payload)
    return Archive(records, size, digest.hexdigest())


def _warc_capabilities(fastwarc: bool) -> list[str]:
    """What each reader makes of the other two sample files (and of iana.warc.gz's chunked
    responses with transfer decoding), one line each."""
    readers: list[tuple[str, Callable[[bytes], Archive]]] = [("warcio", _warcio)]
    if fastwarc:
        readers.append(("fastwarc", _fastwarc))
        readers.append(("fastwarc auto_decode=transfer", lambda d: _fastwarc(d, "transfer")))
    lines = []
    for path in (_CHUNKED, _ARC, _WARC):
        for name, read in readers:
            if path == _WARC and not name.endswith("transfer"):
                continue  # in the table
            try:
                got = read(path.read_bytes())
                said = f"{got.records} records, {got.payload_bytes:,} response payload bytes"
            except Exception as exc:  # noqa: BLE001 - what a reader refuses is the finding
                said = f"fails: {type(exc).__name__}: {exc}"
            lines.append(f"{path.name} with {name}: {said}")
    return lines


SECTIONS: dict[str, Callable[[], Section]] = {
    "html": html_section,
    "pdf": pdf_section,
    "wiki": wiki_section,
    "warc": warc_section,
}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=5, help="timed repetitions; the median is printed")
    p.add_argument("--min-seconds", type=float, default=0.2, help="CPU seconds a repetition lasts at least")
    p.add_argument("--only", nargs="+", choices=list(SECTIONS), default=list(SECTIONS))
    p.add_argument("--cpu", type=int, help="pin the process to this CPU (the scheduler's choice otherwise)")
    args = p.parse_args(argv)
    if args.cpu is not None:
        os.sched_setaffinity(0, {args.cpu})
    started = time.monotonic()
    for name in args.only:
        for line in run_section(SECTIONS[name](), args.reps, args.min_seconds):
            print(line)
        print(flush=True)
    pinned = f", pinned to CPU {args.cpu}" if args.cpu is not None else ""
    print(f"{time.monotonic() - started:.0f} s in all; CPU time, median of {args.reps} repetitions{pinned}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
