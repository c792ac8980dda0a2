"""The text package's errors: one root, translated at the edges (CLI exit codes, counters)."""

from __future__ import annotations

from services.errors import NimbusError


class TextError(NimbusError):
    """Text, a URL or a document body cannot be read as asked."""


class BadUrlError(TextError, ValueError):
    """Not an absolute http(s) URL we can crawl."""

    exit_code = 2


class PdfError(TextError, ValueError):
    """The bytes are not a readable PDF."""
