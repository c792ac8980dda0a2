"""Reading one leased archive batch: its records as results, and what the reading counted.

The bundle is loaded once per process (its ``bundle.toml`` and file list) and the batch
read with ``services.archives.batches.read_batch`` from wherever the bundle lives, seeking
straight to the batch. Records without a date of their own take the bundle's registration
time, so a batch read again (its first reader died) gives the very same results.
"""

from __future__ import annotations

import logging
import threading

from services.archives.batches import read_batch
from services.archives.bundle import Bundle, load_bundle
from services.config import Settings
from services.crawler.archive.pages import ArchiveOptions, to_result
from services.crawler.commit.results import UrlResult
from services.crawler.frontier.archive_batches import ArchiveWork, Reading

log = logging.getLogger(__name__)


class BundleCache:
    """Bundles by id, loaded once per process (threads may share it)."""

    def __init__(self, endpoint_url: str | None = None) -> None:
        self.endpoint_url = endpoint_url
        self._bundles: dict[int, Bundle] = {}
        self._lock = threading.Lock()

    def get(self, work: ArchiveWork) -> Bundle:
        with self._lock:
            bundle = self._bundles.get(work.bundle_id)
            if bundle is None:
                bundle = load_bundle(work.bundle_url, self.endpoint_url)
                if bundle.sha256 != work.sha256:
                    log.warning(
                        "%s changed since archive #%d was registered; reading its batches as planned",
                        bundle.location.describe("bundle.toml"),
                        work.bundle_id,
                    )
                self._bundles[work.bundle_id] = bundle
            return bundle


def options_for(work: ArchiveWork, bundle: Bundle, settings: Settings) -> ArchiveOptions:
    return ArchiveOptions(
        batch_id=work.batch_id,
        language=bundle.language,
        filter_language=bundle.filter_language,
        languages=settings.crawl.language_set,
        seed_frontier=work.seed_frontier,
        scope=settings.crawl.allowed_host_set,
    )


def read_leased(
    work: ArchiveWork, bundles: BundleCache, settings: Settings
) -> tuple[list[UrlResult], Reading]:
    """The results of one archive batch (records that are pages, documents or aliases) and
    what its reading counted."""
    bundle = bundles.get(work)
    options = options_for(work, bundle, settings)
    reading = Reading()
    results = []
    records = read_batch(
        bundle, work.batch, max_record_bytes=settings.crawl.max_body_bytes, fetched_at=work.registered_at
    )
    for index, record in enumerate(records):
        result = to_result(record, index, options, reading)
        if result is not None:
            results.append(result)
    return results, reading
