"""MRLinkGraph: record blocks -> adjacency list over doc_nums, and each page's anchor text.

Links in records are URLs; PageRank needs doc_nums. A reduce-side join on
``url_id`` connects them: every record announces its own ``url_id -> doc``,
every out-link announces ``url_id(target) -> (source, anchor text)``; a
reducer that sees both emits the edge ``source -> target doc``, and the
anchor texts of the target's in-links (which MRIndex indexes as the target's
anchor field: how other pages describe a page is often better than how it
describes itself). A link whose target was never crawled is dropped and
counted: PageRank runs over the documents we have. One join, one pass over
the blocks, serves both.

Decisions (PageRank semantics, kept identical in ``services.ranking.pagerank``):
- Edges are deduplicated: ten links from A to B are one vote, as in the
  original formulation and networkx's DiGraph; repeated links cannot pump rank.
- Self-links are dropped, for edges and anchor text: a page linking to itself
  (logo -> home on the home page) is navigation, not an endorsement or a
  description.
- Every document is a node, with or without out-links: dangling pages keep
  an empty list so the PageRank step can redistribute their mass.

Records hold normalized link URLs (the crawler's contract), so
``url_id(link.url)`` is the target's ``Document.url_id`` without normalizing
again here.

Output, two kinds of line (``LinkGraphOutput``):

    7<TAB>[2, 9]                      doc_num -> target doc_nums, ascending (every document)
    @anchor<TAB>7<TAB>"home | About"<TAB>de  a document's in-link anchor text (when it has
                                            any) and the document's language, in which
                                            MRIndex analyzes it

``adjacency_rows`` reads the first kind; MRIndex reads the second.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path

from mrjob.protocol import StandardJSONProtocol
from mrjob.step import MRStep

from mapreduce.errors import DuplicateDocumentError
from mapreduce.record_job import RecordBlockJob
from services.storage.formats.records import Record
from services.text.urls import url_id

DOC = "doc"
SOURCE = "src"
ANCHOR = "anchor"
ANCHOR_LINE = "@anchor"
ANCHOR_BYTES = ANCHOR_LINE.encode()
MAX_DOC_ANCHOR_CHARS = 20_000  # anchor text kept per document: a site-wide menu link adds little more


def record_announcements(record: Record) -> Iterator[tuple[str, list]]:
    """(url_id, tagged value) pairs of one record: itself, then each out-link and its anchor."""
    yield record.url_id, [DOC, record.doc_num, record.lang]
    for link in record.links:
        yield url_id(link.url), [SOURCE, record.doc_num, link.anchor]


def join_edges(key: str, values: Iterable[list]) -> tuple[int | None, list[tuple[int, str]], int, str]:
    """(target doc or None if uncrawled, (source, anchor) of the links to it except its own,
    self-links, the target's language)."""
    target: int | None = None
    lang = ""
    sources: list[tuple[int, str]] = []
    for value in values:
        if value[0] == DOC:
            if target is not None:
                raise DuplicateDocumentError(
                    f"url_id {key} belongs to doc_nums {target} and {value[1]}: each URL must be "
                    "one document; rebuild the manifest from the documents table"
                )
            target = value[1]
            lang = value[2] if len(value) > 2 else ""
        else:
            sources.append((value[1], value[2]))
    if target is None:
        return None, sources, 0, ""
    kept = [(s, anchor) for s, anchor in sources if s != target]
    return target, kept, len(sources) - len(kept), lang


def anchor_text(sources: Iterable[tuple[int, str]]) -> str:
    """The in-link anchors joined with " | ", in source order (the same text whatever the
    shuffle order), capped at ``MAX_DOC_ANCHOR_CHARS``."""
    text, size = [], 0
    for _source, anchor in sorted(sources):
        anchor = anchor.strip()
        if not anchor:
            continue
        if size + len(anchor) > MAX_DOC_ANCHOR_CHARS:
            break
        text.append(anchor)
        size += len(anchor) + 3
    return " | ".join(text)


def parse_anchor_line(line: str) -> tuple[int, str, str]:
    """(document, anchor text, the document's language: "" when the line has none)."""
    _tag, doc, rest = line.rstrip("\r\n").split("\t", 2)
    text, _tab, lang = rest.partition("\t")  # JSON escapes a tab inside the text
    return int(doc), json.loads(text), lang


class LinkGraphOutput(StandardJSONProtocol):
    """Adjacency rows as JSON ``key<TAB>value``; anchor rows (key ``["anchor", doc, lang]``) as
    ``@anchor<TAB>doc<TAB>"text"<TAB>lang``, a line no manifest line and no adjacency row
    starts with."""

    def write(self, key: object, value: object) -> bytes:
        if isinstance(key, list | tuple) and key and key[0] == ANCHOR:
            lang = key[2] if len(key) > 2 else ""
            return f"{ANCHOR_LINE}\t{key[1]}\t{json.dumps(value, ensure_ascii=False)}\t{lang}".encode()
        return super().write(key, value)

    def read(self, line: bytes) -> tuple[object, object]:
        if line.startswith(ANCHOR_BYTES):
            doc, text, lang = parse_anchor_line(line.decode("utf-8"))
            return [ANCHOR, doc, lang], text
        return super().read(line)


def write_anchor_lines(path: Path, dest: Path) -> int:
    """Copy the anchor-text rows of an MRLinkGraph output to ``dest``; returns how many.

    MRIndex needs only these: given the whole output, its map tasks would read
    and skip one adjacency row per document (docs/performance-notes.md); given
    these, it runs none at all when no page has anchor text.
    """
    count = 0
    with Path(path).open("rb") as src, Path(dest).open("wb") as out:
        for line in src:
            if line.startswith(ANCHOR_BYTES):
                out.write(line)
                count += 1
    return count


def adjacency_rows(path: Path) -> Iterator[tuple[int, list[int]]]:
    """The ``doc -> targets`` rows of MRLinkGraph's output (its anchor rows skipped)."""
    protocol = LinkGraphOutput()
    with Path(path).open("rb") as fh:
        for line in fh:
            line = line.rstrip(b"\r\n")
            if line and not line.startswith(ANCHOR_BYTES):  # anchor text: not decoded for nothing
                doc, targets = protocol.read(line)
                yield int(doc), list(targets)  # type: ignore[call-overload]  # JSON: an int, a list of ints


class MRLinkGraph(RecordBlockJob):
    """The link graph and in-link anchor text of the crawled documents (input: manifest)."""

    OUTPUT_PROTOCOL = LinkGraphOutput

    def steps(self) -> list[MRStep]:
        return [
            MRStep(mapper=self.mapper_announce, reducer=self.reducer_join, reducer_final=self.flush_counts),
            MRStep(reducer=self.reducer_adjacency, reducer_final=self.flush_counts),
        ]

    def mapper_announce(self, _key: None, line: str) -> Iterator[tuple[str, list]]:
        for record in self.block_records(line):
            yield from record_announcements(record)

    def reducer_join(self, key: str, values: Iterable[list]) -> Iterator[tuple[int, object]]:
        target, sources, self_links, lang = join_edges(key, values)
        if target is None:
            self.count("linkgraph", "links_to_uncrawled", len(sources))
            return
        self.count("linkgraph", "self_links_dropped", self_links)
        yield target, None  # the node itself, so pages without out-links survive
        for source, _anchor in sources:
            yield source, target
        text = anchor_text(sources)
        if text:
            yield target, [ANCHOR, text, lang]

    def reducer_adjacency(self, doc: int, values: Iterable[object]) -> Iterator[tuple[object, object]]:
        edges: list[int] = []
        anchor: str | None = None  # one join reducer per URL of the document: its crawled URL only
        lang = ""
        for value in values:
            if isinstance(value, int):
                edges.append(value)
            elif isinstance(value, list):
                anchor, lang = value[1], value[2]
        targets = sorted(set(edges))
        self.count("linkgraph", "duplicate_edges_dropped", len(edges) - len(targets))
        self.count("linkgraph", "edges", len(targets))
        yield doc, targets
        if anchor is not None:
            self.count("linkgraph", "documents_with_anchor_text")
            yield [ANCHOR, doc, lang], anchor


if __name__ == "__main__":
    MRLinkGraph.run()
