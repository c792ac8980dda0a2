"""Test helper: commit a few documents and publish an index segment for them.

It follows the contracts of the brief:
content and record blocks in the blob store, Document rows, a segment packed
by the publisher's own ``segment_arrays`` (the MapReduce tests check the
job's postings against hand-computed ones), and an active IndexVersion.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from mapreduce.mr_index import FORMS, LENGTH, TERM, VOCABULARY
from mapreduce.postings import PostingBuffer
from services.config import Settings
from services.indexing.index_rows import collect_index_rows
from services.indexing.segment_arrays import segment_arrays as publish_arrays
from services.storage.blobs.blobstore import open_blobstore
from services.storage.formats.blocks import ContentBlockWriter, ContentType
from services.storage.formats.delta import DeltaDocs
from services.storage.formats.records import Link, Record, RecordBlockWriter
from services.storage.formats.segment import SEGMENT_FORMAT, pack_segment
from services.storage.formats.segment_codec import compact_segment, held_rows
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.index_versions import activate_index, active_index
from services.storage.sql.models import Document
from services.storage.sql.schema import init_db
from services.text.analysis.analyze import analyze, analyzer_version


@dataclass
class Doc:
    url: str
    title: str
    text: str
    description: str = ""
    content_type: str = "text/html"
    body: bytes = b""  # the "fetched" bytes; made up from the text when empty
    links: list[tuple[str, str]] = field(default_factory=list)  # (url, anchor text) out of the page
    noarchive: bool = False  # robots noarchive: the site asks that no cached copy be shown

    def raw(self) -> bytes:
        return self.body or f"<html><title>{self.title}</title><p>{self.text}</p>".encode()

    def terms(self) -> list[str]:
        return analyze(f"{self.title} {self.description} {self.text}")


def commit_documents(settings: Settings, docs: list[Doc], first_doc_num: int, stem: str) -> None:
    """Write one content block and one record block, then the Document rows."""
    blobs = open_blobstore(settings.blob_url, settings.aws_endpoint_url)
    content, records = ContentBlockWriter(), RecordBlockWriter()
    content_name, record_name = f"content/{stem}.ncb", f"records/{stem}.rec.gz"
    rows = []
    for i, doc in enumerate(docs):
        num = first_doc_num + i
        url_id = hashlib.sha1(doc.url.encode()).hexdigest()
        body = doc.raw()
        index = content.add(body, ContentType.from_mime(doc.content_type), bytes.fromhex(url_id))
        record = Record(
            doc_num=num,
            url=doc.url,
            url_id=url_id,
            doc_id=hashlib.sha1(body).hexdigest(),
            content_type=doc.content_type,
            title=doc.title,
            text=doc.text,
            description=doc.description,
            lang="en",
            content_block=content_name,
            content_index=index,
            links=[Link(url, anchor) for url, anchor in doc.links],
            noarchive=doc.noarchive,
        )
        offset, length = records.add(record)
        rows.append(
            dict(
                url_id=url_id,
                doc_num=num,
                url=doc.url,
                doc_id=record.doc_id,
                content_type=doc.content_type,
                title=doc.title,
                lang="en",
                length=len(body),
                last_crawled=1_700_000_000.0,
                content_block=content_name,
                content_index=index,
                record_block=record_name,
                record_offset=offset,
                record_length=length,
            )
        )
    offsets = [entry.offset for entry in content.entries()]
    blobs.put(content_name, content.to_bytes())
    blobs.put(record_name, records.to_bytes())
    engine = make_engine(settings.database_url)
    init_db(engine)
    try:
        with session_factory(engine).begin() as session:
            for row, offset in zip(rows, offsets, strict=True):
                session.add(Document(**row, content_offset=offset))
    finally:
        engine.dispose()


def segment_arrays(
    docs: list[Doc], pagerank: list[float] | None = None, only: Sequence[int] | None = None
) -> dict[str, np.ndarray]:
    """The contract's arrays for ``docs`` (doc_num = position in the list), through the
    index job's pure functions and the publisher, without running mrjob; ``only``: the
    documents a delta holds (the others numbered, without text)."""
    buffer = PostingBuffer()
    rows: list = []
    for num, doc in enumerate(docs):
        if only is not None and num not in only:
            continue
        buffer.add(
            Record(
                doc_num=num,
                url=doc.url,
                url_id="",
                doc_id="",
                content_type=doc.content_type,
                title=doc.title,
                text=doc.text,
                description=doc.description,
            )
        )
    chunks, lengths = buffer.drain()
    rows += [([LENGTH, num], [n or 0 for n in fields]) for num, fields in lengths.items()]
    rows += [([TERM, term], chunk.encode()) for term, chunk in chunks]
    rows += [([FORMS, num], forms) for num, forms in chunks.forms.items()]
    rows += [([VOCABULARY, form], held) for form, held in chunks.vocabulary.items()]
    ranks = np.array(pagerank or [1.0 / len(docs)] * len(docs), dtype=np.float64)
    number = {doc.url: num for num, doc in enumerate(docs)}
    graph = {
        num: [number[url] for url, _ in doc.links if url in number and number[url] != num]
        for num, doc in enumerate(docs)
        if only is None or num in only
    }
    return publish_arrays(collect_index_rows(rows), ranks, len(docs), links=graph)


def publish_index(
    settings: Settings,
    docs: list[Doc],
    version: str,
    pagerank: list[float] | None = None,
    through_seq: int | None = None,
) -> int:
    """Pack, store and activate a segment over all ``docs``; returns the IndexVersion id.
    ``through_seq``: the commit mark the version records (none: a version from before marks)."""
    arrays = segment_arrays(docs, pagerank)
    meta = _meta(arrays, len(docs), len(docs), through_seq)
    meta |= {"pagerank_iterations": 1, "pagerank_damping": 0.85}
    name = f"index/segment-{version}.nseg"
    open_blobstore(settings.blob_url, settings.aws_endpoint_url).put(
        name, pack_segment(compact_segment(arrays), meta)
    )
    engine = make_engine(settings.database_url)
    init_db(engine)
    try:
        with session_factory(engine).begin() as session:
            return activate_index(session, name, meta["num_docs"], meta["num_terms"]).id
    finally:
        engine.dispose()


def _meta(arrays: dict[str, np.ndarray], num_docs: int, indexed: int, through_seq: int | None) -> dict:
    """A segment's meta as the publish step writes it, for ``num_docs`` document numbers of
    which ``indexed`` have text; ``through_seq``: its commit mark (none: from before marks)."""
    meta = {
        "format": SEGMENT_FORMAT,
        "num_docs": num_docs,
        "num_terms": int(arrays["df"].shape[0]),
        "num_postings": int(arrays["post_docs"].shape[0]),
        "created_at": 1_700_000_000,
        "analyzer": analyzer_version(),
        "languages": {"en": indexed},
    }
    if through_seq is not None:
        meta |= {"through_seq": through_seq, "pending_seqs": []}
    return meta


def publish_delta(
    settings: Settings,
    docs: list[Doc],
    holds: Sequence[int],
    version: str,
    *,
    removed: Sequence[int] = (),
    through_seq: int | None = None,
) -> int:
    """A delta segment holding ``docs[i]`` for ``i`` in ``holds`` (numbered over all ``docs``),
    stored and activated after the active version's segments; returns the version id. Its
    impacts are the delta's own statistics' (the search side takes them as given)."""
    arrays = held_rows(segment_arrays(docs, only=holds), np.array(sorted(holds), dtype=np.int64))
    meta = _meta(arrays, len(docs), len(holds), through_seq)
    engine = make_engine(settings.database_url)
    try:
        with session_factory(engine).begin() as session:
            active = active_index(session)
            assert active is not None, "publish a base first"
            base, deltas = active.segment, active.delta_segments
            held, gone = np.array(sorted(holds), np.uint32), np.array(removed, np.uint32)
            meta |= DeltaDocs(base, held, gone, rows_held=True).to_meta()
            name = f"index/delta-{version}.nseg"
            open_blobstore(settings.blob_url, settings.aws_endpoint_url).put(
                name, pack_segment(compact_segment(arrays), meta)
            )
            return activate_index(session, base, len(docs), meta["num_terms"], deltas=[*deltas, name]).id
    finally:
        engine.dispose()


def publish_corpus(settings: Settings, docs: list[Doc], stem: str) -> Settings:
    """``docs`` committed as one crawl (``stem``) and indexed as version "v1": what most
    search tests start from; returns ``settings`` for the fixture to hand on."""
    commit_documents(settings, docs, 0, stem)
    publish_index(settings, docs, "v1")
    return settings
