"""Whitespace as a reader sees it: every run of it one space."""

from __future__ import annotations


def clean_text(text: str) -> str:
    """Runs of whitespace to one space (str.split: the same Unicode whitespace as ``\\s``, and
    several times faster than the regex)."""
    return " ".join(text.split())
