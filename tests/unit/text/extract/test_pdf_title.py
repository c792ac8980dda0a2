"""PDF titles: metadata that is not a title gives way to the first page's heading."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.text.extract.pdf import parse_pdf, pdf_title

FIRST_PAGE = "Boundary Layers in\nHypersonic Flow\nJ. Smith, 1998\nAbstract. We study..."


@pytest.mark.parametrize(
    "junk",
    [
        "",
        "   ",
        "draft_v2.exe",
        "Microsoft Word - report.doc",
        "Microsoft PowerPoint - talk.ppt",
        "Untitled",
        "untitled",
        "Document1",
        "Slide 1",
        "C:\\docs\\paper.doc",
        "/home/a/paper.tex",
        "scan0001.tif",
        "--",
    ],
)
def test_junk_metadata_gives_way_to_the_first_heading(junk: str) -> None:
    assert pdf_title(junk, FIRST_PAGE) == "Boundary Layers in Hypersonic Flow"


def test_a_real_metadata_title_is_kept() -> None:
    assert pdf_title("Shock Tube Experiments", FIRST_PAGE) == "Shock Tube Experiments"
    assert pdf_title("The .NET runtime: a study", FIRST_PAGE) == "The .NET runtime: a study"


def test_heading_joining_stops_at_authors_and_punctuation() -> None:
    assert pdf_title("", "Results.\nMore text here") == "Results."
    assert pdf_title("", "\n\n12\nA Title Line\nAuthor One, Author Two") == "A Title Line"
    assert pdf_title("", "") == "" and pdf_title("", "1 2 3\n--") == ""


def test_sample_pdfs(sample_data: Path) -> None:
    def title(name: str) -> str:
        return parse_pdf((sample_data / "pdf" / name).read_bytes(), name).title

    assert title("tracemonkey.pdf") == "Trace-based Just-in-Time Type Specialization for Dynamic Languages"
    assert title("pypdf-example.pdf") == "PDF Example Document"  # its metadata title is a title
