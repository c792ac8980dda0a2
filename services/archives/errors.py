"""The archives package's errors: one root, translated at the edges (CLI exit codes).

A damaged record is not an exception: readers yield it as a skipped record whose
``error`` names the file and the byte offset, and go on with the rest (``records``).
These are raised only for what stops a whole bundle or file: a malformed
``bundle.toml``, an object that cannot be read at all.
"""

from __future__ import annotations

from services.errors import NimbusError


class ArchiveError(NimbusError):
    """An archive cannot be read as asked; the message names the file and what to do."""


class BundleError(ArchiveError, ValueError):
    """``bundle.toml`` is missing, malformed, or names an unknown or missing field."""

    exit_code = 2


class SourceError(ArchiveError):
    """An archive file or object cannot be opened or read (permissions, a missing object)."""
