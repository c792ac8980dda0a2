"""Storage errors, translated at the boundary so callers never see boto or OS details."""

from __future__ import annotations

from services.errors import NimbusError


class StorageError(NimbusError):
    """Base class for everything the storage package raises."""


class BlockFormatError(StorageError):
    """A content or record block is corrupt or truncated."""


class BlobNotFoundError(StorageError, KeyError):
    """A named blob does not exist in the store."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else "blob not found"


class BlockFullError(StorageError):
    """Adding a document would push a content block past its size cap."""


class SegmentContractError(StorageError):
    """An index segment's arrays or meta break the segment contract (``storage.segment``)."""


class MigrationError(StorageError):
    """The database's schema cannot be brought to this release's; the message says what to do
    (nothing is dropped or altered when this is raised)."""


class GrantError(StorageError):
    """A role's privileges are not its grants after ``sync_grants`` granted and revoked."""
