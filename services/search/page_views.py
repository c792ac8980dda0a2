"""One document at a time, by number: page info (what is known about it, and why it ranked
where it did for a query), its cached copy and the text the engine extracted from it.

They read the documents table and the record and content blocks through the search service's
stores, and its ranking for the score breakdown (``explain``)."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor
from typing import Protocol

import numpy as np
from sqlalchemy import select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from services.config.search import SearchSettings
from services.search.errors import NotFoundError
from services.search.hits import HitReader
from services.search.query.language import ParsedQuery, analyses_for, parse_query
from services.search.query.limits import bound_query
from services.search.results import (
    MAX_RESULTS,
    CachedCopy,
    CachedText,
    InLink,
    PageInfo,
    media_type,
)
from services.search.retrieval.duplicates import other_urls
from services.search.retrieval.explain import breakdown
from services.search.retrieval.index_holder import IndexHolder
from services.search.retrieval.retrieve import retrieve_ranked
from services.search.retrieval.segment import SegmentIndex
from services.storage.blobs.blobstore import BlobStore
from services.storage.errors import StorageError
from services.storage.formats.blocks import sha1
from services.storage.sql.models import Document, UrlAlias

PAGE_INFO_LIST = 20  # in-links and other URLs shown on page info
MAX_ALIAS_ANCHORS = 1000  # aliases whose links' anchors page info looks for (a hostile crawl has more)
MAX_DOC_NUM = 2**31 - 1  # documents.doc_num is a 32-bit INTEGER on MySQL


class Searcher(Protocol):
    """What the views use of the search service (``SearchService``), named here so that this
    module does not import it."""

    @property
    def holder(self) -> IndexHolder: ...

    @property
    def sessions(self) -> Callable[[], Session]: ...

    @property
    def blobs(self) -> BlobStore: ...

    @property
    def pool(self) -> Executor: ...

    @property
    def retrieval(self) -> SearchSettings: ...

    @property
    def hit_reader(self) -> HitReader: ...  # where a document's record is read

    def allowed(self, query: ParsedQuery, index: SegmentIndex) -> np.ndarray | None: ...


class PageViews:
    def __init__(self, service: Searcher) -> None:
        self.service = service

    def page_info(self, doc_num: int, q: str = "") -> PageInfo:
        """What is known about one document, and, with a query, why it ranked where it did."""
        index = self.service.holder.current()
        in_index = index is not None and 0 <= doc_num < index.num_docs
        with self.service.sessions() as session:
            doc = _document(session, doc_num)
            same = other_urls(session, [doc_num], limit=PAGE_INFO_LIST).get(doc_num, [])
            # Links through an alias (a redirect) count for the page: their anchors are shown too.
            aliases = session.scalars(
                select(UrlAlias.url).where(UrlAlias.target_url_id == doc.url_id).limit(MAX_ALIAS_ANCHORS)
            ).all()
            sources: list[int] = []
            near: list[int] = []
            representative = doc_num
            if index is not None and in_index:
                linking = index.in_links(doc_num)
                best = np.argsort(-index.pagerank[linking], kind="stable")[:PAGE_INFO_LIST]
                sources = [int(d) for d in linking[best]]
                near = index.folded_into([doc_num]).get(doc_num, [])[:PAGE_INFO_LIST]
                representative = int(index.arrays["near_dup_of"][doc_num])
            wanted = set(sources) | set(near) | {representative}
            rows = {
                row.doc_num: row
                for row in session.scalars(select(Document).where(Document.doc_num.in_(sorted(wanted))))
            }
        targets = {doc.url, *same, *aliases}
        anchors = self.service.pool.map(lambda num: self._anchor(rows.get(num), targets), sources)
        in_links = [
            InLink(num, rows[num].url, rows[num].title or rows[num].url, anchor)
            for num, anchor in zip(sources, anchors, strict=True)
            if num in rows
        ]
        linked = None
        if index is not None and in_index and index.has_links:
            linked = int(index.in_links(doc_num).shape[0])
        score = None
        q = bound_query(q).text  # the query as the results page searched it
        query = parse_query(q, analyses_for(q, index.languages) if index is not None else ())
        if index is not None and in_index and not query.empty:
            allowed = self.service.allowed(query, index)
            result = retrieve_ranked(index, query, MAX_RESULTS, self.service.retrieval, allowed)
            score = breakdown(
                index,
                query,
                q,
                doc_num,
                result.ranked,
                result.mode,
                self.service.retrieval.pagerank_weight,
                self.service.retrieval.entry_page_weight,
            )
        return PageInfo(
            doc_num=doc_num,
            url=doc.url,
            title=doc.title or doc.url,
            content_type=media_type(doc.content_type),
            size=doc.length,
            lang=doc.lang,
            status=doc.status,
            depth=doc.depth,
            last_crawled=doc.last_crawled or 0.0,
            versions=doc.versions,
            unchanged=doc.unchanged,
            in_link_count=linked,
            in_links=in_links,
            out_link_count=index.out_count(doc_num) if index is not None and in_index else None,
            same_content=same,
            near_duplicates=[rows[m].url for m in near if m in rows],
            shown_under=rows[representative].url
            if representative != doc_num and representative in rows
            else "",
            score=score,
            cached_url=self._cached_url(doc),
        )

    def _cached_url(self, doc: Document) -> str:
        return "" if self._noarchive(doc) else f"/cached/{doc.doc_num}"

    def _noarchive(self, doc: Document) -> bool:
        """Robots "noarchive": the site asked that no copy of the page be shown (as Bing and
        Google honour it); the page is still found, its stored bytes stay ours to index."""
        record = self.service.hit_reader.record(doc, "noarchive")
        return record is not None and record.noarchive

    def _anchor(self, source: Document | None, targets: set[str]) -> str:
        """The anchor text of ``source``'s link to one of ``targets`` ("" when none or unreadable)."""
        record = None if source is None else self.service.hit_reader.record(source, "anchor text")
        if record is None:
            return ""
        return next((link.anchor for link in record.links if link.url in targets and link.anchor), "")

    def cached(self, doc_num: int) -> CachedCopy:
        """The stored bytes of one document, read with one ranged read and checked by SHA-1."""
        try:
            with self.service.sessions() as session:
                doc = _document(session, doc_num)
        except SQLAlchemyError as exc:
            raise StorageError(f"cannot look up document {doc_num}: {exc}") from exc
        if self._noarchive(doc):
            raise NotFoundError(_NOARCHIVE.format(doc_num))
        start = doc.content_offset
        try:
            body = self.service.blobs.get(doc.content_block, start, start + doc.length)
        except StorageError as exc:
            raise NotFoundError(f"stored copy of document {doc_num} is unavailable: {exc}") from exc
        if sha1(body).hex() != doc.doc_id.lower():
            raise StorageError(
                f"stored copy of document {doc_num} in {doc.content_block} does not match its "
                "docId (corrupt block or wrong offset in the documents table)"
            )
        return CachedCopy(doc_num, doc.url, body, media_type(doc.content_type), doc.last_crawled or 0.0)

    def cached_text(self, doc_num: int) -> CachedText:
        """The text the engine extracted from a document (a PDF's words, readable in the
        browser as a page), from its record."""
        with self.service.sessions() as session:
            doc = _document(session, doc_num)
        record = self.service.hit_reader.record(doc, "extracted text")
        if record is None:
            raise NotFoundError(f"the extracted text of document {doc_num} is unavailable")
        if record.noarchive:
            raise NotFoundError(_NOARCHIVE.format(doc_num))
        return CachedText(
            doc_num,
            doc.url,
            doc.title or doc.url,
            record.text,
            media_type(doc.content_type),
            doc.last_crawled,
        )


def highlight_terms(q: str) -> frozenset[str]:
    """The analyzed terms of query ``q`` that a cached copy highlights (its operators' values,
    such as ``site:``, are no words of the page)."""
    return frozenset(parse_query(bound_query(q).text).terms) if q else frozenset()


_NOARCHIVE = "document {} has no cached copy: its site asks for none (robots noarchive)"


def _document(session: Session, doc_num: int) -> Document:
    """The documents row of ``doc_num``; NotFoundError when there is none (or the number is
    beyond the column's range, which the database would refuse)."""
    doc = None
    if 0 <= doc_num <= MAX_DOC_NUM:
        doc = session.scalars(select(Document).where(Document.doc_num == doc_num)).first()
    if doc is None:
        raise NotFoundError(f"no document number {doc_num}")
    return doc
