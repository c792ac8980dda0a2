"""Hand-made crawls for the MapReduce tests: record blocks in a blob store and the
matching document rows, written the way the committer writes them (blocks
first, then rows), with no crawler involved."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import pytest

from services.storage.blobs.blobstore import BlobStore
from services.storage.formats.records import Link, Record, RecordBlockWriter
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.models import Document
from services.storage.sql.schema import init_db
from services.text.urls import normalize_url, url_id


@dataclass
class Page:
    url: str
    title: str = ""
    text: str = ""
    description: str = ""
    links: Sequence[str] = field(default_factory=tuple)
    nav: str = ""  # menus, link lists, form words (Record.nav)
    recrawl_of: int | None = None  # a newer version of this doc_num: the row moves to it


def write_corpus(
    store: BlobStore,
    database_url: str,
    blocks: Sequence[Sequence[Page | dict]],
    *,
    first_doc: int = 0,
    commit_seq: int | None = None,
) -> list[Record]:
    """One record block per inner list of pages (``Page`` or its fields as a dict);
    doc_nums dense in order from ``first_doc``, except that a page with ``recrawl_of`` is a
    later version of that document: its record keeps the doc_num and the Document row
    points to it, as after a recrawl that changed the page (also of a document an earlier
    call wrote). Rows carry ``commit_seq``, as a committer's do. Returns the records."""
    engine = make_engine(database_url)
    init_db(engine)
    records: list[Record] = []
    rows: dict[int, Document] = {}
    fresh = first_doc
    for b, pages in enumerate(blocks):
        stem = f"test-{b:03d}" if not first_doc else f"test-{first_doc:05d}-{b:03d}"  # names never reused
        name = f"records/{stem}.rec.gz"
        writer = RecordBlockWriter()
        for i, spec in enumerate(pages):
            page = spec if isinstance(spec, Page) else Page(**spec)
            url = normalize_url(page.url)
            body = f"{page.title}|{page.text}".encode()
            num = fresh if page.recrawl_of is None else page.recrawl_of
            fresh += page.recrawl_of is None
            record = Record(
                doc_num=num,
                url=url,
                url_id=url_id(url),
                doc_id=hashlib.sha1(body).hexdigest(),
                content_type="text/html",
                title=page.title,
                text=page.text,
                description=page.description,
                nav=page.nav,
                lang="en",
                links=[Link(normalize_url(link), "anchor") for link in page.links],
                fetched_at=1_700_000_000.0,
                content_block=f"content/{stem}.ncb",
                content_index=i,
            )
            offset, length = writer.add(record)
            records.append(record)
            rows[num] = Document(
                url_id=record.url_id,
                doc_num=record.doc_num,
                url=url,
                doc_id=record.doc_id,
                content_type="text/html",
                title=page.title,
                lang="en",
                length=len(body),
                status=200,
                depth=0,
                last_crawled=record.fetched_at,
                content_block=record.content_block,
                content_index=i,
                content_offset=0,
                record_block=name,
                record_offset=offset,
                record_length=length,
                commit_seq=commit_seq,
            )
        store.put(name, writer.to_bytes())
    with session_factory(engine).begin() as session:
        for row in rows.values():
            session.merge(row)  # a recrawl of an earlier call's document replaces its row
    engine.dispose()
    return records


@pytest.fixture
def corpus_writer() -> Callable[..., list[Record]]:
    return write_corpus
