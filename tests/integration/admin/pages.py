"""Stored pages for the operator's purge to find."""

from __future__ import annotations

from sqlalchemy.orm import Session, sessionmaker

from services.storage.sql.models import Document
from services.text.urls import url_id


def store_pages(sessions: sessionmaker[Session], *urls: str) -> None:
    """Document rows (a crawl's, its bytes aside) for ``urls``."""
    with sessions.begin() as session:
        for num, url in enumerate(urls):
            session.add(
                Document(
                    url_id=url_id(url),
                    doc_num=num,
                    url=url,
                    doc_id=f"{num:040d}",
                    content_type="text/html",
                    length=10,
                    last_crawled=1.0,
                    content_block="content/x.ncb",
                    content_index=num,
                    content_offset=0,
                    record_block="records/x.rec.gz",
                    record_offset=0,
                    record_length=1,
                    commit_seq=1,
                )
            )
