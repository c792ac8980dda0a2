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

A document has other names than its URL: a URL whose bytes equal it
(``duplicate_urls``) and an alias (``url_aliases``: a wiki redirect, an
archived 3xx, a web crawl's permanent redirect). The driver lists them
(``services.indexing.url_names``) as a second input, ``name lines``, each
announcing ``url_id(name) -> doc``; a link to a name then counts for the
document, its anchor text with it, as a link to the document's own URL does.
An alias's own title (a wiki redirect's "UK" for "United Kingdom") is anchor
text of the document too, from no source page (``ALIAS_SOURCE``): a name
people use for it, as Wikipedia's search indexes redirects. Where a URL is
both a document and a name (a page that once redirected), the document wins.

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

Name lines (input, besides the manifest)::

    @name<TAB>url_id<TAB>7<TAB>"UK"   the URL with this url_id names doc 7; its title, or ""

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
from dataclasses import dataclass, field
from pathlib import Path

from mrjob.protocol import StandardJSONProtocol, UltraJSONProtocol
from mrjob.step import MRStep

from mapreduce.errors import DuplicateDocumentError
from mapreduce.record_job import RecordBlockJob
from services.storage.formats.records import Record
from services.text.urls import url_id

DOC = "doc"
SOURCE = "src"
NAME = "name"
ANCHOR = "anchor"
NAME_LINE = "@name"
ALIAS_SOURCE = -1  # the "source" of an alias's title: no page, never an edge
ANCHOR_LINE = "@anchor"
ANCHOR_BYTES = ANCHOR_LINE.encode()
MAX_DOC_ANCHOR_CHARS = 20_000  # anchor text kept per document: a site-wide menu link adds little more


def record_announcements(record: Record) -> Iterator[tuple[str, list]]:
    """(url_id, tagged value) pairs of one record: itself, then each out-link and its anchor."""
    yield record.url_id, [DOC, record.doc_num, record.lang]
    for link in record.links:
        yield url_id(link.url), [SOURCE, record.doc_num, link.anchor]


def name_line(key: str, doc_num: int, title: str = "") -> str:
    """A name line (with newline): the URL whose url_id is ``key`` names ``doc_num``."""
    return f"{NAME_LINE}\t{key}\t{doc_num}\t{json.dumps(title, ensure_ascii=False)}\n"


def name_announcement(line: str) -> tuple[str, list]:
    """The (url_id, tagged value) pair of a name line."""
    _tag, key, doc, title = line.rstrip("\r\n").split("\t", 3)
    return key, [NAME, int(doc), json.loads(title)]


@dataclass
class Join:
    """What one URL's reducer learns: the document it names (None: uncrawled), the (source,
    anchor) of the links to it except the document's own (an alias's title with source
    ``ALIAS_SOURCE``), the self-links dropped, and whether the URL is another name (an alias
    or a duplicate URL) rather than the document's own, and the document's language."""

    target: int | None
    sources: list[tuple[int, str]] = field(default_factory=list)
    self_links: int = 0
    by_name: bool = False
    lang: str = ""  # the document's language, when this URL is its own ("" through another name)

    @property
    def edges(self) -> list[int]:
        return [source for source, _anchor in self.sources if source != ALIAS_SOURCE]


def join_edges(key: str, values: Iterable[list]) -> Join:
    """Join a URL's announcements: the document it is, or else the one it names."""
    target: int | None = None
    lang = ""
    named: list[tuple[int, str]] = []
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
        elif value[0] == NAME:
            named.append((value[1], value[2]))
        else:
            sources.append((value[1], value[2]))
    by_name = target is None and bool(named)
    if by_name:
        target, title = min(named)  # one name a URL; were it listed twice, the same pick everywhere
        if title.strip():
            sources.append((ALIAS_SOURCE, title))
    if target is None:
        return Join(None, sources)
    kept = [(s, anchor) for s, anchor in sources if s != target]
    return Join(target, kept, len(sources) - len(kept), by_name, "" if by_name else lang)


def kept_anchors(sources: Iterable[tuple[int, str]]) -> list[tuple[int, str]]:
    """The (source, stripped anchor) pairs ``anchor_text`` keeps, in its order.

    Keeping these of each of a document's names, then of their union, keeps what the union
    alone would keep (an anchor kept from the union is within its own name's cap), so the
    join reducers send only these on to the document's reducer."""
    kept, size = [], 0
    for source, anchor in sorted(sources):
        anchor = anchor.strip()
        if not anchor:
            continue
        if size + len(anchor) > MAX_DOC_ANCHOR_CHARS:
            break
        kept.append((source, anchor))
        size += len(anchor) + 3
    return kept


def anchor_text(sources: Iterable[tuple[int, str]]) -> str:
    """The in-link anchors joined with " | ", in source order (the same text whatever the
    shuffle order; alias titles first), capped at ``MAX_DOC_ANCHOR_CHARS``."""
    return " | ".join(anchor for _source, anchor in kept_anchors(sources))


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

    # Between the steps: ujson (5x the standard module's speed, the same values: these rows
    # hold strings and ints only, no float to round). The output stays the standard module's.
    INTERNAL_PROTOCOL = UltraJSONProtocol
    OUTPUT_PROTOCOL = LinkGraphOutput

    def steps(self) -> list[MRStep]:
        return [
            MRStep(mapper=self.mapper_announce, reducer=self.reducer_join, reducer_final=self.flush_counts),
            MRStep(reducer=self.reducer_adjacency, reducer_final=self.flush_counts),
        ]

    def mapper_announce(self, _key: None, line: str) -> Iterator[tuple[str, list]]:
        if line.startswith(NAME_LINE):
            yield name_announcement(line)
            return
        for record in self.block_records(line):
            yield from record_announcements(record)

    def reducer_join(self, key: str, values: Iterable[list]) -> Iterator[tuple[int, object]]:
        join = join_edges(key, values)
        edges = join.edges
        if join.target is None:
            self.count("linkgraph", "links_to_uncrawled", len(edges))
            return
        target = join.target
        self.count("linkgraph", "self_links_dropped", join.self_links)
        if join.by_name:
            self.count("linkgraph", "links_through_other_names", len(edges))
            self.count("linkgraph", "alias_titles", len(join.sources) - len(edges))
        for source in edges:
            yield source, target
        kept = kept_anchors(join.sources)
        if kept or join.lang:  # the document's own URL tells its reducer the language
            yield target, [ANCHOR, kept, join.lang]  # which also makes the node of the graph
        else:
            yield target, None  # the node itself, so pages without out-links survive

    def reducer_adjacency(self, doc: int, values: Iterable[object]) -> Iterator[tuple[object, object]]:
        edges: list[int] = []
        anchors: list[tuple[int, str]] = []  # from each URL naming the document: its own, aliases
        lang = ""
        for value in values:
            if isinstance(value, int):
                edges.append(value)
            elif isinstance(value, list):
                anchors.extend((int(source), str(anchor)) for source, anchor in value[1])
                lang = lang or (str(value[2]) if len(value) > 2 else "")
        targets = sorted(set(edges))
        self.count("linkgraph", "duplicate_edges_dropped", len(edges) - len(targets))
        self.count("linkgraph", "edges", len(targets))
        yield doc, targets
        text = anchor_text(anchors)
        if text:
            self.count("linkgraph", "documents_with_anchor_text")
            yield [ANCHOR, doc, lang], text


if __name__ == "__main__":
    MRLinkGraph.run()
