"""Ranking math every stage shares: BM25F impacts (computed when an index is published,
summed by the search service) and PageRank (run by the index build, in memory or as
MapReduce steps). Pure numpy and scipy: no I/O."""
