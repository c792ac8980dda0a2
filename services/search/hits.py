"""A page of hits from a ranking: the documents table's rows (title, URL, where the record
is) for the hits and the near-duplicates folded under them in one read, the other URLs of the
same content, and each hit's record from its record block (one ranged read, from S3 side by
side) for its snippet. Also the one place a document's record is read for the pages about it
(``page_views``: cached copies' notices, anchor texts, extracted text)."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor

from sqlalchemy import Engine, bindparam, select

from services.search.display.snippets import make_snippet
from services.search.results import RecordPlace, SearchHit, media_type
from services.search.retrieval.duplicates import ALSO_AT_LIMIT, other_urls
from services.search.retrieval.rank import Ranked
from services.search.retrieval.segment import SegmentIndex
from services.storage.blobs.blobstore import BlobStore
from services.storage.blobs.block_cache import BlockCache
from services.storage.errors import StorageError
from services.storage.formats.records import Record, decode_record
from services.storage.sql.models import Document

log = logging.getLogger(__name__)

# The columns a hit shows and where its record is, for the hits and the near-duplicates
# shown under them, in one read: Core rows from a statement built once (the ORM's objects
# and composing the statement per page cost more than running it: docs/performance-notes.md).
_HIT_ROWS = select(
    Document.doc_num,
    Document.url,
    Document.title,
    Document.content_type,
    Document.record_block,
    Document.record_offset,
    Document.record_length,
).where(Document.doc_num.in_(bindparam("doc_nums", expanding=True)))


class HitReader:
    """Reads what a page of hits shows, from the stores the search service opened (thread-safe:
    the engine, the blob store and its local cache, the pool records are fetched with)."""

    def __init__(
        self, engine: Engine, blobs: BlobStore, blocks: BlockCache | None, pool: ThreadPoolExecutor
    ) -> None:
        self.engine = engine
        self.blobs = blobs
        self.blocks = blocks  # record blocks kept whole on this machine (from S3), or None
        self.pool = pool

    def hits(
        self, scored: Ranked, positions: Iterable[int], query_terms: set[str], index: SegmentIndex
    ) -> list[SearchHit]:
        """The hits at ``positions`` of ``scored``, each with its title, URL, snippet (of
        ``query_terms``) and the other URLs of its content; a document the table lacks is
        skipped, logged."""
        pagerank = index.pagerank
        nums = [int(scored.docs[i]) for i in positions]
        if not nums:
            return []
        folded = index.folded_into(nums)
        members = [m for ms in folded.values() for m in ms[:ALSO_AT_LIMIT]]
        with self.engine.connect() as connection:
            rows = connection.execute(_HIT_ROWS, {"doc_nums": nums + members}).all()
            duplicates = other_urls(connection, nums)
        near_urls = {row.doc_num: row.url for row in rows}
        for rep, ms in folded.items():  # exact copies first, then near-duplicates
            near = [near_urls[m] for m in ms[:ALSO_AT_LIMIT] if m in near_urls]
            duplicates[rep] = (duplicates.get(rep, []) + near)[:ALSO_AT_LIMIT]
        wanted = set(nums)
        docs = {row.doc_num: row for row in rows if row.doc_num in wanted}
        missing = [num for num in nums if num not in docs]
        if missing:
            # The segment and the table disagree (e.g. a database reset); skip, never show a blank.
            log.warning("doc_nums %s are in the index but not in the documents table", missing)
        found = [(i, docs[int(scored.docs[i])]) for i in positions if int(scored.docs[i]) in docs]
        # Records from S3 are fetched side by side (each a round trip); the snippets are made
        # in this thread (pure Python: threads would only take turns at the GIL).
        fetch = self.pool.map if self.blobs.remote else map
        records = list(fetch(lambda item: self.record(item[1], "snippet", links=False), found))
        snippets = [
            [] if r is None else make_snippet(r.text, query_terms, r.description, lang=r.lang)
            for r in records
        ]
        hits = []
        for (i, doc), snippet, record in zip(found, snippets, records, strict=True):
            num = doc.doc_num
            hits.append(
                SearchHit(
                    doc_num=num,
                    url=doc.url,
                    title=doc.title or doc.url,
                    score=float(scored.final[i]),
                    text_score=float(scored.text[i]),
                    pagerank=float(pagerank[num]),
                    snippet=snippet,
                    cached_url="" if record is not None and record.noarchive else f"/cached/{num}",
                    also_at=[url for url in duplicates.get(num, []) if url != doc.url],
                    content_type=media_type(doc.content_type),
                )
            )
        return hits

    def record(self, doc: RecordPlace, purpose: str, links: bool = True) -> Record | None:
        """The document's record (one ranged read), or None, logged, when it cannot be read;
        ``links=False``: without its out-links (a snippet needs the text only)."""
        end = doc.record_offset + doc.record_length
        try:
            member = (self.blocks or self.blobs).get(doc.record_block, doc.record_offset, end)
            record = decode_record(member, doc.record_block, links)
        except StorageError as exc:
            log.warning("no %s for doc %d: %s", purpose, doc.doc_num, exc)
            return None
        if record.doc_num != doc.doc_num:
            # The row's offset points at another document's record: say so, show no wrong text.
            log.warning(
                "no %s for doc %d: its record at %s:%d is doc %d's",
                purpose,
                doc.doc_num,
                doc.record_block,
                doc.record_offset,
                record.doc_num,
            )
            return None
        return record
