"""MRLinkGraph: record blocks -> adjacency list over doc_nums.

Links in records are URLs; PageRank needs doc_nums. A reduce-side join on
``url_id`` connects them: every record announces its own ``url_id -> doc``,
every out-link announces ``url_id(target) -> source``; a reducer that sees
both emits the edge ``source -> target doc``. A link whose target was never
crawled (no record announces it) is dropped and counted: PageRank runs over
the documents we have.

Decisions (PageRank semantics, kept identical in ``mapreduce.pagerank``):
- Edges are deduplicated: ten links from A to B are one vote, as in the
  original formulation and networkx's DiGraph; repeated links cannot pump rank.
- Self-links are dropped: a page linking to itself (logo -> home on the
  home page) is navigation, not an endorsement, and would let a page keep
  rank for itself.
- Every document is a node, with or without out-links: dangling pages keep
  an empty list so the PageRank step can redistribute their mass.

Records hold normalized link URLs (the crawler's contract), so
``url_id(link.url)`` is the target's ``Document.url_id`` without normalizing
again here.

Output: ``doc_num -> [target doc_nums, ascending]`` for every document.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from mrjob.step import MRStep

from mapreduce.record_job import DuplicateDocumentError, RecordBlockJob
from services.crawler.urls import url_id
from services.storage.records import Record

DOC = "doc"
SOURCE = "src"


def record_announcements(record: Record) -> Iterator[tuple[str, list]]:
    """(url_id, tagged value) pairs of one record: itself, then each out-link."""
    yield record.url_id, [DOC, record.doc_num]
    for link in record.links:
        yield url_id(link.url), [SOURCE, record.doc_num]


def join_edges(key: str, values: Iterable[list]) -> tuple[int | None, list[int], int]:
    """(target doc or None if uncrawled, sources linking to it except itself, self-links)."""
    target: int | None = None
    sources: list[int] = []
    for kind, doc in values:
        if kind == DOC:
            if target is not None:
                raise DuplicateDocumentError(
                    f"url_id {key} belongs to doc_nums {target} and {doc}: each URL must be "
                    "one document; rebuild the manifest from the documents table"
                )
            target = doc
        else:
            sources.append(doc)
    if target is None:
        return None, sources, 0
    kept = [s for s in sources if s != target]
    return target, kept, len(sources) - len(kept)


class MRLinkGraph(RecordBlockJob):
    """The link graph of the crawled documents (input: record-block names, one a line)."""

    def steps(self) -> list[MRStep]:
        return [
            MRStep(mapper=self.mapper_announce, reducer=self.reducer_join),
            MRStep(reducer=self.reducer_adjacency),
        ]

    def mapper_announce(self, _key: None, line: str) -> Iterator[tuple[str, list]]:
        for record in self.block_records(line):
            yield from record_announcements(record)

    def reducer_join(self, key: str, values: Iterable[list]) -> Iterator[tuple[int, int | None]]:
        target, sources, self_links = join_edges(key, values)
        if target is None:
            self.increment_counter("linkgraph", "links_to_uncrawled", len(sources))
            return
        self.increment_counter("linkgraph", "self_links_dropped", self_links)
        yield target, None  # the node itself, so pages without out-links survive
        for source in sources:
            yield source, target

    def reducer_adjacency(self, doc: int, values: Iterable[int | None]) -> Iterator[
            tuple[int, list[int]]]:
        edges = [v for v in values if v is not None]
        targets = sorted(set(edges))
        self.increment_counter("linkgraph", "duplicate_edges_dropped", len(edges) - len(targets))
        self.increment_counter("linkgraph", "edges", len(targets))
        yield doc, targets


if __name__ == "__main__":
    MRLinkGraph.run()
