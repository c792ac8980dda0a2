"""When the indexer's daemon merges a version's deltas into its base: pure, no I/O.

Each delta (``services.indexing.delta_build``) makes what was committed searchable at the
cost of what is new, but a version with many deltas costs every query a look into each, and
a delta carries what only a merge fixes (anchor text and links across batches, PageRank,
near-duplicate folding, statistics skewed by superseded copies). So the daemon merges
(``services.indexing.incremental.update_index``, in the background) once either bound is
reached:

- ``merge_deltas`` deltas (``NIMBUS_MERGE_DELTAS``, 8): the fan-out a query pays;
- deltas holding (or removing) ``merge_share`` of the base's documents (``NIMBUS_MERGE_SHARE``,
  0.10): the share of the index whose text is scored and linked as a delta only.

This is a tiered merge policy with one tier above the deltas, as Lucene's
``TieredMergePolicy`` with ``segmentsPerTier`` = ``merge_deltas`` where every delta is in the
lowest tier and a merge always takes them all with the base (Lucene merges segments of like
size and leaves the largest alone; its ``deletesPctAllowed`` is like ``merge_share``). We fold
the base in every time because a merge recomputes what no delta can: the collection's
statistics over the live documents, the whole link graph and PageRank, near-duplicate
folding; merging deltas among themselves would cost a read of every delta and fix none of it.
The merge costs O(index) (every record's links), so ``merge_share`` bounds how often it runs
as the index grows: at most once per tenth of the index committed anew.
"""

from __future__ import annotations


def should_merge(deltas: int, changed: int, base_docs: int, *, max_deltas: int, share: float) -> bool:
    """Whether a version with ``deltas`` delta segments, which hold or removed ``changed``
    documents in all, is due to be merged with its base of ``base_docs`` documents."""
    if deltas <= 0:
        return False
    return deltas >= max_deltas or changed >= share * max(base_docs, 1)
