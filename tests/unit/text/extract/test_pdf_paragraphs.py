"""A PDF's text keeps its paragraphs and its words whole (issue 32): the cached text view
showed tracemonkey.pdf as one 24,000-pixel paragraph with U+FFFE inside "com\ufffepile",
and the index had "com" and "pile" where the paper says "compile"."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.text.extract.hyphenation import Vocabulary, keep_hyphen, rejoin_hyphenated
from services.text.extract.pdf import Line, _parse_pdfium, _parse_pdfminer, paragraph_breaks


@pytest.mark.parametrize("parse", [_parse_pdfium, _parse_pdfminer], ids=["pdfium", "pdfminer"])
def test_tracemonkey_has_paragraphs_and_whole_words(sample_data: Path, parse) -> None:
    text = parse((sample_data / "pdf" / "tracemonkey.pdf").read_bytes()).text
    paragraphs = text.split("\n\n")
    assert len(paragraphs) > 150  # 14 two-column pages
    assert max(len(p) for p in paragraphs) < 3000  # no page-long run of text
    assert "\ufffe" not in text and "\u00ad" not in text
    words = text.split()
    assert "compile" in words and "com" not in words and "pile" not in words
    assert "alternative" in text and "al-ternative" not in text and "discovered" in text
    # The abstract reads as one paragraph (pdfminer's box also holds its heading).
    abstract = next(p for p in paragraphs if "Dynamic languages such as JavaScript are more" in p)
    assert abstract.endswith("speedups of 10x and more for certain benchmark programs.")


def test_compounds_broken_at_their_own_hyphen_keep_it(sample_data: Path) -> None:
    text = _parse_pdfium((sample_data / "pdf" / "federal-register-2020-17221.pdf").read_bytes()).text
    assert "FAAapproved" not in text and "nonnormal" not in text and "workhour" not in text
    assert "FAA-approved" in text and "non-normal" in text


def test_each_kind_of_line_end_break() -> None:
    vocabulary = Vocabulary("we compile code and mixed-mode code")
    assert rejoin_hyphenated("com\ufffepile", vocabulary) == "compile"  # PDFium's mark
    assert rejoin_hyphenated("com-\npile", vocabulary) == "compile"  # pdfminer's hyphen and line end
    assert rejoin_hyphenated("com\u2010\n  pile", vocabulary) == "compile"  # U+2010 HYPHEN
    assert rejoin_hyphenated("com\u00ad\npile and in\u00adline") == "compile and inline"  # soft hyphens go
    assert rejoin_hyphenated("mixed\ufffemode", vocabulary) == "mixed-mode"  # the document writes it so
    assert rejoin_hyphenated("well-\nknown", Vocabulary("well-known ones")) == "well-known"
    # A hyphen inside a line is no break; a mark not between word parts is the hyphen it stood for.
    assert rejoin_hyphenated("a well-known pro-\nblem", Vocabulary("")) == "a well-known problem"
    assert rejoin_hyphenated("2008\ufffe 02 and x\ufffe", Vocabulary("")) == "2008-02 and x-"


def test_without_evidence_names_codes_and_words_keep_the_hyphen() -> None:
    empty = Vocabulary("")
    assert keep_hyphen("FAA", "approved", empty)  # an acronym
    assert keep_hyphen("Soekarno", "Hatta", empty)  # a name
    assert keep_hyphen("B737", "800", empty)  # a code
    assert not keep_hyphen("discov", "ered", empty)  # a syllable break
    assert keep_hyphen("language", "independent", Vocabulary("a language; independent"))
    # The document's own words come first: the joined word written elsewhere wins.
    assert not keep_hyphen("compila", "tion", Vocabulary("compila tion compilation compilation"))
    assert not keep_hyphen("in", "deed", Vocabulary("in deed"))  # parts of two letters are syllables


def _line(left: float, right: float, baseline: float, height: float = 10.0) -> Line:
    box = (left, baseline, right, baseline + height)
    return Line("x", box, box)


def test_paragraph_breaks_from_the_lines_geometry() -> None:
    lines = [
        _line(72, 300, 700),  # first line of the page
        _line(60, 300, 688),
        _line(60, 150, 676),  # short: its paragraph ends here
        _line(60, 300, 664),  # so this one starts one
        _line(60, 300, 652),
        _line(72, 300, 640),  # indented: a new paragraph
        _line(60, 300, 628),
        _line(60, 300, 596),  # a wide gap
        _line(60, 300, 584),
        _line(350, 590, 700),  # the next column, back at the top
    ]
    assert paragraph_breaks(lines) == [True, False, False, True, False, True, False, True, False, True]
    assert paragraph_breaks([]) == []
