"""The search service's errors: one root, translated at the edges (HTTP status codes)."""

from __future__ import annotations

from services.errors import NimbusError


class SearchError(NimbusError):
    """A search request cannot be answered as asked."""


class NotFoundError(SearchError, LookupError):
    """No such document (or its stored copy is gone): HTTP 404."""


class SearchIndexError(SearchError):
    """An index segment is missing, unreadable or breaks the segment contract: HTTP 503."""


class KernelCacheError(SearchError):
    """The compiled search kernels did not reach numba's disk cache where the service reads it."""
