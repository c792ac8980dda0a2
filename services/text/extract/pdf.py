"""PDF to text: pypdfium2 first, pdfminer.six as the fallback.

The text keeps the document's paragraphs, separated by a blank line (``"\n\n"``; the
lines of a paragraph are joined with spaces), and puts back together the words the
typesetter broke at line ends (``hyphenation``): the cached text view shows paragraphs
and the index sees "compile", not "com" and "pile". PDFium gives lines and their
positions, not paragraphs: ``paragraph_breaks`` decides from the lines' geometry as a
reader does (a first line indented, a last line short, a wider gap); pdfminer.six's
layout analysis already groups lines into text boxes, which become paragraphs.

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
from services.text.extract.hyphenation import Vocabulary, rejoin_hyphenated

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
        pages: list[list[str]] = []  # each page's paragraphs, their lines still "\n"-joined
        for i in range(len(pdf)):
            page = pdf[i]
            textpage = page.get_textpage()
            pages.append(_pdfium_paragraphs(textpage))
            textpage.close()
            page.close()
        meta = (pdf.get_metadata_dict().get("Title") or "").strip()
        title = pdf_title(meta, "\n".join(pages[0]) if pages else "")
        return ParsedPdf(title=title, text=_document_text(pages), pages=len(pdf))
    finally:
        pdf.close()


@dataclass(frozen=True)
class Line:
    """One line of a page as PDFium gives it: its text, and the font boxes of its first and
    last characters (left, bottom, right, top, in points from the page's bottom left)."""

    text: str
    first: tuple[float, float, float, float]
    last: tuple[float, float, float, float]


def _pdfium_paragraphs(textpage: object) -> list[str]:
    """A page's paragraphs from PDFium's lines (``"\r\n"``-separated in its text, each
    character with a box): ``paragraph_breaks`` on their geometry."""
    text: str = textpage.get_text_range()  # type: ignore[attr-defined]
    if len(text) != textpage.count_chars():  # type: ignore[attr-defined]
        return [text]  # characters and boxes do not line up: one block, as before
    lines: list[Line] = []
    start = 0
    for end in [m.start() for m in re.finditer("\r\n", text)] + [len(text)]:
        if text[start:end].strip():
            box = textpage.get_charbox  # type: ignore[attr-defined]
            lines.append(Line(text[start:end], box(start, loose=True), box(end - 1, loose=True)))
        start = end + 2
    paragraphs: list[list[str]] = []
    for line, new in zip(lines, paragraph_breaks(lines), strict=True):
        if new or not paragraphs:
            paragraphs.append([])
        paragraphs[-1].append(line.text)
    return ["\n".join(p) for p in paragraphs]


def paragraph_breaks(lines: list[Line]) -> list[bool]:
    """For each line, whether it starts a paragraph, from where it and the line before sit
    (as a reader sees it; pure, so tests give it lines):

    * the first line of a page;
    * a wider gap than the page's usual distance between lines (1.5×, baseline to
      baseline), or a line far from the one before (a column or block elsewhere);
    * an indented first line: starting right of the line before by more than half a line
      height (LaTeX and most book typesetting mark paragraphs only so);
    * after a short line: one ending well before its column's right edge (where most of
      the page's lines that start where it does end), the last line of a paragraph or a
      heading.
    """
    if not lines:
        return []
    pitches = sorted(
        a.last[1] - b.first[1] for a, b in zip(lines, lines[1:], strict=False) if a.last[1] > b.first[1]
    )
    pitch = pitches[len(pitches) // 2] if pitches else 0.0
    ends: dict[int, list[float]] = {}  # a line's left edge (to the point) -> where such lines end
    for line in lines:
        ends.setdefault(round(line.first[0]), []).append(line.last[2])
    breaks = [True]
    for before, line in zip(lines, lines[1:], strict=False):
        height = max(line.first[3] - line.first[1], 1.0)
        drop = before.last[1] - line.first[1]
        far = (
            drop < -height
            or drop > max(1.5 * pitch, 1.5 * height)
            or abs(line.first[0] - before.first[0]) > 8 * height
        )
        indented = height / 2 < line.first[0] - before.first[0] <= 8 * height
        edge = _column_edge(ends, before.first[0])
        short = before.last[2] < edge - max(3 * height, 0.15 * (edge - before.first[0]))
        breaks.append(far or indented or short)
    return breaks


def _column_edge(ends: dict[int, list[float]], left: float) -> float:
    """The right edge of the column of lines starting at ``left`` (within 2 points): where
    most of them end (the 60th percentile: most lines of a column are full, and a wide title
    or table row starting there does not move it)."""
    near = sorted(r for key, rights in ends.items() if abs(key - left) <= 2 for r in rights)
    return near[int(len(near) * 0.6)] if near else 0.0


def _document_text(pages: list[list[str]]) -> str:
    """Paragraphs (lines ``"\n"``-joined) to the document's text: line-end breaks resolved
    with the whole document's words as the dictionary, a paragraph's lines joined with
    spaces, paragraphs separated by a blank line."""
    vocabulary = Vocabulary("\n\n".join("\n\n".join(p) for p in pages))
    out = []
    for page in pages:
        for paragraph in page:
            text = " ".join(rejoin_hyphenated(paragraph, vocabulary).split())
            if text:
                out.append(text)
    return "\n\n".join(out)


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
    # pdfminer ends each text box with a blank line: the boxes are the paragraphs.
    paragraphs = [p for p in re.split(r"\n\s*\n|\f", text) if p.strip()]
    return ParsedPdf(title=pdf_title(title, first_page), text=_document_text([paragraphs]), pages=pages)
