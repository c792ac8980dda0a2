"""What the library benchmarks share: figures as Markdown tables, and word sets to compare texts.

The tables print as Markdown, so a run's output goes into docs/benchmarks.md as it is.
Two extractors agree when they find the same words: ``words`` is the definition
``tests/unit/text/test_pdf_text.py`` uses (lower-cased ``\\w+`` tokens after NFKC, which folds
the "ﬁ" ligature one PDF library keeps and another expands).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

_WORD = re.compile(r"\w+")


def words(text: str) -> list[str]:
    """The running words of ``text``: lower-cased ``\\w+`` tokens after NFKC."""
    return _WORD.findall(unicodedata.normalize("NFKC", text).lower())


def jaccard(a: set[str], b: set[str]) -> float:
    """|a ∩ b| / |a ∪ b|; two empty sets are the same set (1.0)."""
    union = len(a | b)
    return len(a & b) / union if union else 1.0


def ratio(a: float, b: float) -> str:
    """``a / b`` as a table shows it (``28.2x``, ``0.85x``), or ``-`` when ``b`` is 0."""
    if b <= 0:
        return "-"
    value = a / b
    return f"{value:.1f}x" if value >= 10 else f"{value:.2f}x"


def figure(value: float) -> str:
    """A throughput or count with the precision its size warrants: ``1,234``, ``56.7``, ``5.61``."""
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def format_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A Markdown table, columns padded to their widest cell: text left, figures right."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows, strict=True)]
    numeric = [bool(rows) and all(_looks_numeric(str(row[i])) for row in rows) for i in range(len(headers))]

    def line(cells: Sequence[str]) -> str:
        padded = [
            str(c).rjust(w) if right else str(c).ljust(w)
            for c, w, right in zip(cells, widths, numeric, strict=True)
        ]
        return "| " + " | ".join(padded) + " |"

    # Markdown's alignment row: "---:" right-aligns a column of figures.
    rule = ["-" * (w + 1) + ":" if right else "-" * (w + 2) for w, right in zip(widths, numeric, strict=True)]
    return [line(headers), "|" + "|".join(rule) + "|", *(line(row) for row in rows)]


# A figure: "1,234", "0.973", "+0.0020", "28.2x", "<0.001", "29/27"; "-" and "" stand for none.
_NUMERIC = re.compile(r"^[<>]?[-+]?[\d,]*\.?\d+x?$|^\d+/\d+$|^-?$")


def _looks_numeric(cell: str) -> bool:
    return bool(_NUMERIC.match(cell))
