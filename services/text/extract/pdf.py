"""PDF to text: pypdfium2 first, pdfminer.six as the fallback.

pypdfium2 (PDFium) extracts tens of times faster than pdfminer.six
(``python -m benchmarks.parsers``) and gives the same words on the three
sample PDFs (tests/unit/text/test_pdf_text.py checks their overlap).
pdfminer.six, the customer's choice, reads what PDFium cannot.
"""

from __future__ import annotations

import io
import logging
import re
from dataclasses import dataclass

from services.text.errors import PdfError

log = logging.getLogger(__name__)


# Metadata "titles" that are not titles: what authoring tools write by default.
_JUNK_TITLE = re.compile(
    r"""^(untitled|title|document\d*|slide\s*\d+|presentation\d*|no\s+title|none|null|\W*)$
       |^(microsoft\s+(word|powerpoint|excel)|powerpoint\s+presentation|adobe\s+\w+)\b
       |\.(docx?|pdf|exe|rtf|txt|tex|dvi|ps|eps|indd|qxd|pptx?|xlsx?|odt|pages|wpd|html?|jpe?g|png|tiff?)$
       |^[a-z]:\\|^/|\\""",
    re.IGNORECASE | re.VERBOSE,
)
_MAX_TITLE = 160


def pdf_title(metadata_title: str, first_page_text: str) -> str:
    """The metadata title when it is one, else the first heading line of the first page.

    Authoring tools fill the Title field with file names (``draft_v2.exe``,
    ``Microsoft Word - report.doc``), "Untitled" or nothing; the first page's
    opening lines are what a reader takes for the title. A heading broken over
    lines is joined while the next line continues it (no comma, digit or
    address, and the line so far ends without punctuation).
    """
    title = " ".join(metadata_title.split())
    if title and len(title) >= 3 and not _JUNK_TITLE.search(title):
        return title[:_MAX_TITLE]
    lines = [" ".join(line.split()) for line in first_page_text.splitlines()]
    lines = [line for line in lines if sum(ch.isalpha() for ch in line) >= 3]
    if not lines:
        return ""
    heading = lines[0]
    for line in lines[1:4]:
        if heading[-1:] in ".:;!?" or len(heading) + len(line) > _MAX_TITLE:
            break
        if re.search(r"[,@\d]", line) or len(line) > len(heading):
            break
        heading = f"{heading} {line}"
    return heading[:_MAX_TITLE]


@dataclass
class ParsedPdf:
    title: str
    text: str
    pages: int


def parse_pdf(data: bytes, name: str = "pdf") -> ParsedPdf:
    try:
        return _parse_pdfium(data)
    # Any failure of the fast path (PdfiumError, ValueError, whatever a hostile file provokes in
    # the binding) hands the bytes to pdfminer.six, which decides whether the PDF is readable.
    except Exception as exc:  # noqa: BLE001
        log.info("%s: pypdfium2 failed (%s); trying pdfminer.six", name, exc)
    try:
        return _parse_pdfminer(data)
    except Exception as exc:
        raise PdfError(f"{name}: not a readable PDF ({exc})") from exc


def _parse_pdfium(data: bytes) -> ParsedPdf:
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(data)
    try:
        texts = []
        for i in range(len(pdf)):
            page = pdf[i]
            textpage = page.get_textpage()
            texts.append(textpage.get_text_range())
            textpage.close()
            page.close()
        meta = (pdf.get_metadata_dict().get("Title") or "").strip()
        title = pdf_title(meta, texts[0] if texts else "")
        return ParsedPdf(title=title, text=" ".join(" ".join(texts).split()), pages=len(pdf))
    finally:
        pdf.close()


def _parse_pdfminer(data: bytes) -> ParsedPdf:
    from pdfminer.high_level import extract_text
    from pdfminer.pdfdocument import PDFDocument
    from pdfminer.pdfpage import PDFPage
    from pdfminer.pdfparser import PDFParser

    text = extract_text(io.BytesIO(data))
    parser = PDFParser(io.BytesIO(data))
    doc = PDFDocument(parser)
    title = ""
    for info in doc.info:
        raw = info.get("Title")
        if isinstance(raw, bytes):
            title = raw.decode("utf-16" if raw.startswith(b"\xfe\xff") else "latin-1", "replace")
        elif raw:
            title = str(raw)
    pages = sum(1 for _ in PDFPage.create_pages(doc))
    first_page = text.split("\f", 1)[0]
    return ParsedPdf(title=pdf_title(title, first_page), text=" ".join(text.split()), pages=pages)
