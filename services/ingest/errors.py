"""The ingest package's errors: one root, translated at the edges (CLI exit codes)."""

from __future__ import annotations

from services.errors import NimbusError


class IngestError(NimbusError):
    """Documents cannot be ingested as asked; the message says what to do."""


class SourceFormatError(IngestError, ValueError):
    """A source file (a collection's docs.jsonl, say) is malformed; the message names file and line."""

    exit_code = 2
