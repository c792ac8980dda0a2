"""MRAnchors: record blocks -> the anchor text of each crawled document's in-links.

Anchor text is how other pages describe a page, often better than the page
describes itself (a home page rarely says "home page of X"). It lives in the
linking records, keyed by the target URL, so a reduce-side join on
``url_id`` (as in MRLinkGraph) brings it to the target document: every
record announces ``url_id -> doc``, every out-link announces
``url_id(target) -> (source, anchor)``.

Self-links are skipped (a page's own navigation is not a description of it),
and so are links to pages never crawled. The anchors of one document are
joined with " | " and capped at ``MAX_ANCHOR_CHARS``.

Output lines are ``@anchor<TAB><doc_num><TAB><JSON string>``: MRIndex reads
them beside the manifest, and no manifest line starts with "@".
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator

from mrjob.protocol import RawValueProtocol
from mrjob.step import MRStep

from mapreduce.postings import MAX_ANCHOR_CHARS
from mapreduce.record_job import DuplicateDocumentError, RecordBlockJob
from services.crawler.urls import url_id
from services.storage.records import Record

ANCHOR_LINE = "@anchor"
DOC = "d"
LINK = "a"


def anchor_announcements(record: Record) -> Iterator[tuple[str, list]]:
    """(url_id, tagged value) pairs: the record itself, then each out-link with anchor text."""
    yield record.url_id, [DOC, record.doc_num]
    for link in record.links:
        if link.anchor.strip():
            yield url_id(link.url), [LINK, record.doc_num, link.anchor]


def join_anchors(key: str, values: Iterable[list]) -> tuple[int | None, str]:
    """(target doc or None when uncrawled, its in-link anchor text, self-links excluded)."""
    target: int | None = None
    anchors: list[tuple[int, str]] = []
    for value in values:
        if value[0] == DOC:
            if target is not None:
                raise DuplicateDocumentError(
                    f"url_id {key} belongs to doc_nums {target} and {value[1]}: each URL must be "
                    "one document; rebuild the manifest from the documents table")
            target = value[1]
        else:
            anchors.append((value[1], value[2]))
    if target is None:
        return None, ""
    text, size = [], 0
    for source, anchor in sorted(anchors):  # sorted: the same text whatever the shuffle order
        if source == target:
            continue
        if size + len(anchor) > MAX_ANCHOR_CHARS:
            break
        text.append(anchor)
        size += len(anchor) + 3
    return target, " | ".join(text)


def anchor_line(doc: int, text: str) -> str:
    return f"{ANCHOR_LINE}\t{doc}\t{json.dumps(text, ensure_ascii=False)}"


def parse_anchor_line(line: str) -> tuple[int, str]:
    _tag, doc, text = line.rstrip("\r\n").split("\t", 2)
    return int(doc), json.loads(text)


class MRAnchors(RecordBlockJob):
    """In-link anchor text per document (input: record-block names, one a line)."""

    OUTPUT_PROTOCOL = RawValueProtocol

    def steps(self) -> list[MRStep]:
        return [MRStep(mapper=self.mapper_announce, reducer=self.reducer_join)]

    def mapper_announce(self, _key: None, line: str) -> Iterator[tuple[str, list]]:
        for record in self.block_records(line):
            yield from anchor_announcements(record)

    def reducer_join(self, key: str, values: Iterable[list]) -> Iterator[tuple[None, str]]:
        target, text = join_anchors(key, values)
        if target is not None and text:
            self.increment_counter("anchors", "documents")
            yield None, anchor_line(target, text)


if __name__ == "__main__":
    MRAnchors.run()
