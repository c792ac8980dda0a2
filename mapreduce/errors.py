"""The MapReduce jobs' errors: one root; a task that raises one fails, and the driver
(``services.indexing.runner``) reports it as a failed job."""

from __future__ import annotations

from services.errors import NimbusError


class MapReduceError(NimbusError):
    """A job's input or its rows break the jobs' contracts."""


class DuplicateDocumentError(MapReduceError, ValueError):
    """One document occurs in two records: the manifest lists a stale or duplicated block."""


class ManifestError(MapReduceError, ValueError):
    """A manifest line cannot be read; the message names it and how to rebuild it."""
