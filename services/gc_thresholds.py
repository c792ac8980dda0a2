"""The cyclic garbage collector's thresholds for the crawl's allocation-heavy loops.

CPython runs a young collection after every 700 net allocations of container objects
(lists, dicts, instances), and every 10th of those also walks the middle generation,
every 100th every tracked object in the process. A crawler process allocates some
hundred containers a page (parsed links, results, rows, a decoded manifest's lists) and
holds a large, long-lived heap (the URL normalizer's cache, SQLAlchemy's compiled
statements), so the older walks cost the most: a fresh process crawling 20,000 pages ran
1,671 young, 152 middle and 13 full collections, 0.37-0.39 ms a page, about a tenth of its
CPU (timed with ``gc.callbacks``); a cluster committer, decoding manifests, spent a
quarter of its CPU in them.

With the young threshold at 50,000 (and the older ones at 20 and 100) the same crawl ran 64
young and 5 middle collections and no full one: 0.07-0.08 ms a page, and its peak RSS did
not grow (327 against 366 MB). Cycles are still collected, only in larger batches: a young
collection every ~300 pages, a middle one every ~4,000. The garbage a batch lets wait is at
most ~50,000 small objects, a few MB. Instagram went further (``gc.disable`` and
``gc.freeze``); raising the thresholds keeps the collector working for the rare cycle that
would otherwise leak in a crawl that runs for weeks.
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
