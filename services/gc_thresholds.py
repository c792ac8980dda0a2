"""The cyclic garbage collector's thresholds for the crawl's allocation-heavy loops.

CPython runs a young collection after every 700 net allocations of container objects
(lists, dicts, instances), and every 10th of those also walks the middle generation,
every 100th every tracked object in the process. A crawler process allocates some
hundred containers a page (parsed links, results, rows, a decoded manifest's lists) and
holds a large, long-lived heap (the URL normalizer's cache, SQLAlchemy's compiled
statements), so the older walks cost the most: with the default thresholds the collector
takes a sizeable share of a crawler's CPU, and more of a cluster committer's, which
decodes manifests.

With the young threshold at 50,000 (and the older ones at 20 and 100) the full walks all
but vanish and peak memory does not grow (the collections counted and timed:
docs/benchmarks.md). Cycles are still collected, only in larger batches: a young collection
every few hundred pages (some hundred containers a page into 50,000), a middle one every 20
of those. The garbage a batch lets wait is at most ~50,000 small objects, a few MB.
Instagram went further (``gc.disable`` and ``gc.freeze``); raising the thresholds keeps the
collector working for the rare cycle that would otherwise leak in a crawl that runs for
weeks.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

THROUGHPUT = (50_000, 20, 100)


@contextmanager
def fewer_collections(thresholds: tuple[int, int, int] = THROUGHPUT) -> Iterator[None]:
    """Run the block with ``thresholds``; the process's own come back afterwards (a test
    or a demo that crawls in-process keeps its settings)."""
    before = gc.get_threshold()
    gc.set_threshold(*thresholds)
    try:
        yield
    finally:
        gc.set_threshold(*before)
