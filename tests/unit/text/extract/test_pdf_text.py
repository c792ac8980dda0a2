"""Equal text from the fast extractor (pypdfium2) and the customer's (pdfminer.six).

The crawler extracts PDF text with pypdfium2 (tens of times faster:
docs/benchmarks.md) and keeps pdfminer.six as the fallback; this test is the
evidence that the switch does not change what gets indexed. Words are
lower-cased ``\\w+`` tokens after NFKC, which folds the "ﬁ"/"ﬂ" ligatures that
pdfminer keeps and PDFium expands; the rest of the difference is figure labels:
pdfminer runs the text boxes of a diagram together ("traceenter", "exitabort"),
PDFium keeps the words apart. The bounds below sit under what the three sample
PDFs give (docs/performance-notes.md, "PDF text").
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

from services.text.extract.pdf import _parse_pdfium, _parse_pdfminer

SAMPLES = ["federal-register-2020-17221.pdf", "pypdf-example.pdf", "tracemonkey.pdf"]


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", unicodedata.normalize("NFKC", text).lower()))


@pytest.mark.parametrize("name", SAMPLES)
def test_pdfium_and_pdfminer_extract_the_same_words(sample_data: Path, name: str) -> None:
    data = (sample_data / "pdf" / name).read_bytes()
    fast, reference = _parse_pdfium(data), _parse_pdfminer(data)
    a, b = _words(fast.text), _words(reference.text)
    jaccard = len(a & b) / len(a | b)
    overlap = len(a & b) / min(len(a), len(b))
    assert fast.pages == reference.pages
    # Titles from metadata agree; a title taken from the first page's heading may not, where
    # the two read a multi-column page in different orders (the Federal Register): both have one.
    assert fast.title == reference.title or (fast.title and reference.title)
    assert jaccard >= 0.95, f"{name}: Jaccard {jaccard:.3f}"
    assert overlap >= 0.97, f"{name}: overlap {overlap:.3f}"
    # Same amount of running text, within 10% (pdfminer splits some words at line ends).
    assert abs(len(fast.text.split()) - len(reference.text.split())) <= 0.1 * len(reference.text.split())
