"""The index build's errors: one root, translated at the edges (CLI exit codes)."""

from __future__ import annotations

from services.errors import NimbusError


class IndexBuildError(NimbusError):
    """The index cannot be built or published as asked."""


class BuildError(IndexBuildError):
    """The index cannot be built from the current crawl; the message says what to do."""


class JobError(IndexBuildError):
    """A MapReduce job could not be set up or failed; the message says which and why."""


class PublishError(IndexBuildError, ValueError):
    """Job outputs that cannot form a consistent segment; the message names the mismatch."""


class SupersededError(IndexBuildError):
    """An update's base version stopped being the active one before the update was published."""


class NoBaseError(BuildError):
    """An incremental update has no version to start from: none is published, or the active
    one was built before updates existed (``stale``: a full build is what it needs)."""

    def __init__(self, message: str, *, stale: bool = False) -> None:
        super().__init__(message)
        self.stale = stale
