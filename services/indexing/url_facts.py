"""What a build knows of each document from its URL alone: its form (root, section, path or
file: ``services.ranking.entry_pages``) and its host, as a dense id (host-level PageRank and
each site's name need one number a host: ``host_count`` of them). Read from the documents
table once per build, streamed (a million documents' URLs are not held at once)."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from services.ranking.entry_pages import UrlKind, url_kind
from services.storage.sql.bulk_sql import chunked
from services.storage.sql.models import Document
from services.text.urls import host_key


def url_facts_of(urls: Iterable[tuple[int, str]], num_docs: int) -> tuple[np.ndarray, np.ndarray]:
    """(each doc number's URL form, its host id) from (doc_num, url) pairs in ascending
    doc_num, in one pass. Host ids are dense from 0 in order of each host's first document; a
    number without a URL (a gap) is a PATH (no entry-page evidence) and a host of its own."""
    kinds = np.full(num_docs, UrlKind.PATH, dtype=np.uint8)
    hosts = np.full(num_docs, -1, dtype=np.int64)
    ids: dict[str, int] = {}
    for num, url in urls:
        if 0 <= num < num_docs:
            kinds[num] = url_kind(url)
            hosts[num] = ids.setdefault(host_key(url), len(ids))
    gaps = np.flatnonzero(hosts < 0)
    hosts[gaps] = len(ids) + np.arange(gaps.shape[0])
    return kinds, hosts


def url_facts(sessions: sessionmaker[Session], num_docs: int) -> tuple[np.ndarray, np.ndarray]:
    """``url_facts_of`` every document below ``num_docs``, in one read of the table (two
    before: 0.45-0.53 s at 100,000 documents, on the build's helper thread while the index
    job's tasks hold both cores)."""
    with sessions() as session:
        return url_facts_of(_urls(session, num_docs), num_docs)


def host_count(doc_hosts: np.ndarray) -> int:
    """The number of hosts of ``url_facts``' host ids (dense from 0)."""
    return int(doc_hosts.max()) + 1 if doc_hosts.shape[0] else 0


def held_url_facts(session: Session, docs: np.ndarray, num_docs: int) -> tuple[np.ndarray, np.ndarray]:
    """``url_facts`` for the documents a delta holds only (the others: PATH, a host of their
    own): a delta reads its own rows, not the whole documents table."""
    urls: list[tuple[int, str]] = []
    for chunk in chunked([int(d) for d in docs.tolist()], 1000):
        rows = session.execute(select(Document.doc_num, Document.url).where(Document.doc_num.in_(chunk)))
        urls += [(num, url) for num, url in rows]
    urls.sort()
    return url_facts_of(urls, num_docs)


def _urls(session: Session, num_docs: int) -> Iterable[tuple[int, str]]:
    """(doc_num, url) of the documents below ``num_docs`` (those committed after the
    manifest are the next build's), in doc_num order, streamed."""
    rows = session.execute(
        select(Document.doc_num, Document.url)
        .where(Document.doc_num < num_docs)
        .order_by(Document.doc_num)
        .execution_options(yield_per=10_000)
    )
    return ((num, url) for num, url in rows)
