"""The index build's second input to the link graph: every other name of a stored document.

A link may name a document by another URL than the one it was stored under: a URL whose
bytes equal it (``duplicate_urls``, written by the committer for web and archive crawls
alike) or an alias (``url_aliases``: a MediaWiki redirect, an archived 3xx, a web crawl's
permanent redirect). Each becomes a name line for ``MRLinkGraph`` (``mapreduce.
mr_linkgraph.name_line``), so a link through it counts for the document in PageRank and its
anchor text joins the document's, and an alias's title (a wiki redirect's) is anchor text of
the document.

An alias names a URL, not a document: its target is resolved here to a doc number through
the documents, the duplicate URLs, or one more alias (a double redirect, which MediaWiki
itself leaves unresolved but a web server's chain of two 301s is common), in one streamed
query. An alias whose target is not stored names nothing and is counted.
"""

from __future__ import annotations

import contextlib
import gzip
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import func, select
from sqlalchemy.orm import Session, aliased

from mapreduce.mr_linkgraph import name_line
from services.storage.sql.models import Document, DuplicateUrl, UrlAlias


@dataclass
class NameCounts:
    duplicates: int = 0  # duplicate URLs listed
    aliases: int = 0  # aliases resolved to a document
    unresolved: int = 0  # aliases whose target is not stored

    @property
    def lines(self) -> int:
        return self.duplicates + self.aliases


def resolved_aliases(session: Session) -> Iterator[tuple[str, int | None, str]]:
    """(alias url_id, the doc_num its target resolves to or None, the alias's title)."""
    second = aliased(UrlAlias)
    docs = [aliased(Document) for _ in range(2)]
    dups = [aliased(DuplicateUrl) for _ in range(2)]
    rows = session.execute(
        select(
            UrlAlias.url_id,
            UrlAlias.title,
            func.coalesce(docs[0].doc_num, dups[0].doc_num, docs[1].doc_num, dups[1].doc_num),
        )
        .outerjoin(docs[0], docs[0].url_id == UrlAlias.target_url_id)
        .outerjoin(dups[0], dups[0].url_id == UrlAlias.target_url_id)
        .outerjoin(second, second.url_id == UrlAlias.target_url_id)
        .outerjoin(docs[1], docs[1].url_id == second.target_url_id)
        .outerjoin(dups[1], dups[1].url_id == second.target_url_id)
        .order_by(UrlAlias.url_id)
        .execution_options(yield_per=10_000)
    )
    for key, title, doc_num in rows:
        yield key, None if doc_num is None else int(doc_num), title or ""


def write_name_lines(session: Session, path: Path, below: int | None = None) -> NameCounts:
    """Write the name lines of every duplicate URL and resolved alias to ``path`` (gzip);
    ``below``: only of documents numbered below it (those the build's manifest can hold:
    a crawl committing meanwhile adds names of documents it has not listed)."""
    counts = NameCounts()
    # A page a recrawl found gone or noindex is left out of the index: no name gives it
    # anchor text or in-links either.
    removed = set(session.scalars(select(Document.doc_num).where(Document.removed_at.is_not(None))))
    with contextlib.ExitStack() as stack:
        out = stack.enter_context(gzip.open(path, "wt", encoding="utf-8"))
        duplicates = session.execute(
            select(DuplicateUrl.url_id, DuplicateUrl.doc_num)
            .order_by(DuplicateUrl.url_id)
            .execution_options(yield_per=10_000)
        )
        for key, doc_num in duplicates:
            if doc_num in removed or (below is not None and doc_num >= below):
                continue
            out.write(name_line(key, int(doc_num)))
            counts.duplicates += 1
        for key, target, title in resolved_aliases(session):
            if target is None or target in removed or (below is not None and target >= below):
                counts.unresolved += 1
                continue
            out.write(name_line(key, target, title))
            counts.aliases += 1
    return counts
