"""Postings as the index job builds them: pure functions, no mrjob, no I/O.

A document is indexed in four fields (the BM25F fields of docs/ranking.md):

    title   the record's title
    body    description + text
    anchor  the anchor text of links pointing at the document (from MRAnchors)
    url     words of the URL's host and path

Positions, for phrase queries, count analyzed terms of ``title`` then
``body``, with a gap between the two so no phrase spans the boundary. Stop
words are dropped before positions are counted, so the phrase "speed of
sound" matches "speed sound" (the query analyzer drops "of" too).

The job combines in the mapper across all documents a task reads
(``PostingBuffer``): one row per distinct term per task, each holding that
term's postings in column form, instead of one row per (term, document).
The reducer merges the chunks of a term (``merge_chunks``); an anchor
posting and a page posting of the same document become one posting.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from services.storage.records import Record
from services.text.analyze import analyze

FIELDS = ("title", "body", "anchor", "url")
TITLE, BODY, ANCHOR, URL = range(4)
FIELD_GAP = 1  # positions skipped between title and body
MAX_ANCHOR_CHARS = 20_000  # anchor text kept per document: a site-wide menu link adds little more
_URL_WORDS = re.compile(r"[^0-9A-Za-z]+")


def url_words(url: str) -> str:
    """The words of a URL's host and path ("www.example.com/Flow-Models" -> "www example com
    Flow Models"): separators become spaces, the scheme is dropped."""
    rest = url.split("://", 1)[-1]
    return _URL_WORDS.sub(" ", rest)


@dataclass
class DocPostings:
    """One document's contribution: per-field lengths and, per term, field tfs and positions."""

    doc: int
    lengths: tuple[int, int, int, int]  # title, body, anchor, url
    terms: dict[str, list]  # term -> [tf_title, tf_body, tf_anchor, tf_url, [positions]]


def document_postings(record: Record) -> DocPostings:
    """Title, body and URL fields of a record (anchors come separately, from in-links)."""
    title = analyze(record.title)
    body = analyze(f"{record.description} {record.text}")
    url = analyze(url_words(record.url))
    terms: dict[str, list] = {}
    for pos, term in enumerate(title):
        entry = terms.get(term)
        if entry is None:
            terms[term] = entry = [0, 0, 0, 0, []]
        entry[TITLE] += 1
        entry[4].append(pos)
    offset = len(title) + FIELD_GAP
    for pos, term in enumerate(body, offset):
        entry = terms.get(term)
        if entry is None:
            terms[term] = entry = [0, 0, 0, 0, []]
        entry[BODY] += 1
        entry[4].append(pos)
    for term in url:
        entry = terms.get(term)
        if entry is None:
            terms[term] = entry = [0, 0, 0, 0, []]
        entry[URL] += 1
    return DocPostings(record.doc_num, (len(title), len(body), 0, len(url)), terms)


def anchor_postings(doc: int, anchor_text: str) -> DocPostings:
    """The anchor field of one document (no positions: anchors are not one running text)."""
    words = analyze(anchor_text[:MAX_ANCHOR_CHARS])
    terms: dict[str, list] = {}
    for term in words:
        entry = terms.get(term)
        if entry is None:
            terms[term] = entry = [0, 0, 0, 0, []]
        entry[ANCHOR] += 1
    return DocPostings(doc, (0, 0, len(words), 0), terms)


@dataclass
class PostingBuffer:
    """In-mapper combining: a term's postings from many documents, in column form.

    A chunk is ``[docs, tf_title, tf_body, tf_anchor, tf_url, position_counts, positions]``
    (seven parallel lists, positions flattened), so the shuffle carries few,
    compact rows.
    """

    chunks: dict[str, list[list[int]]] = field(default_factory=dict)
    postings: int = 0

    def add(self, doc: DocPostings) -> None:
        chunks = self.chunks
        for term, (tt, tb, ta, tu, positions) in doc.terms.items():
            chunk = chunks.get(term)
            if chunk is None:
                chunks[term] = chunk = [[], [], [], [], [], [], []]
            chunk[0].append(doc.doc)
            chunk[1].append(tt)
            chunk[2].append(tb)
            chunk[3].append(ta)
            chunk[4].append(tu)
            chunk[5].append(len(positions))
            chunk[6].extend(positions)
        self.postings += len(doc.terms)

    def drain(self) -> Iterator[tuple[str, list[list[int]]]]:
        """Every buffered (term, chunk), emptying the buffer."""
        chunks, self.chunks, self.postings = self.chunks, {}, 0
        yield from chunks.items()


def merge_chunks(chunks: Iterable[list[list[int]]]) -> list[list[int]]:
    """One term's chunks -> one chunk with ascending docs, one posting per document.

    Postings of the same document from different chunks (its page and its
    anchors) are summed field by field and their positions concatenated
    (anchor postings carry none).
    """
    entries: dict[int, list] = {}
    for docs, tt, tb, ta, tu, counts, positions in chunks:
        start = 0
        for i, doc in enumerate(docs):
            end = start + counts[i]
            entry = entries.get(doc)
            if entry is None:
                entries[doc] = [tt[i], tb[i], ta[i], tu[i], positions[start:end]]
            else:
                entry[0] += tt[i]
                entry[1] += tb[i]
                entry[2] += ta[i]
                entry[3] += tu[i]
                entry[4] = sorted(entry[4] + positions[start:end])
            start = end
    out: list[list[int]] = [[], [], [], [], [], [], []]
    for doc in sorted(entries):
        tt, tb, ta, tu, positions = entries[doc]
        out[0].append(doc)
        out[1].append(tt)
        out[2].append(tb)
        out[3].append(ta)
        out[4].append(tu)
        out[5].append(len(positions))
        out[6].extend(positions)
    return out
