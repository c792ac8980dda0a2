"""The crawler's errors: one root, translated at the edges (CLI exit codes, counters)."""

from __future__ import annotations

from services.errors import NimbusError


class CrawlerError(NimbusError):
    """The crawl cannot go on as asked."""


class CrawlerBusyError(CrawlerError):
    """Another crawler with the same identity (host and partitions) is running."""


class ParseError(CrawlerError, ValueError):
    """A body claimed to be HTML or PDF but could not be read as one.

    ``kind`` names the trouble for the crawler's counter (``parse_error_<kind>``):
    ``empty`` (no bytes at all), ``pdf`` (a corrupt PDF), ``type`` (neither HTML nor PDF).
    """

    def __init__(self, message: str, kind: str = "other") -> None:
        super().__init__(message)
        self.kind = kind


class NotLeaderError(CrawlerError):
    """This committer lost its election (a standby took over): it must not commit."""


class AckManifestError(CrawlerError, ValueError):
    """A worker's acknowledgement manifest could not be read (damaged, or another format)."""


class BatchStateError(CrawlerError):
    """A batch being committed was no longer in the state the commit expected."""
