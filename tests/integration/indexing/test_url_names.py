"""The link graph's second input: every other name of a stored document, from the database
(``services.indexing.url_names``): duplicate URLs, aliases resolved through the documents,
the duplicate URLs or one more alias; an alias of a page never stored names nothing."""

from __future__ import annotations

import gzip
from pathlib import Path

from mapreduce.mr_linkgraph import name_announcement
from services.config import Settings
from services.indexing.url_names import write_name_lines
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.models import Document, DuplicateUrl, UrlAlias
from services.storage.sql.schema import init_db
from services.text.urls import url_id


def _doc(num: int, url: str) -> Document:
    return Document(
        url_id=url_id(url), doc_num=num, url=url, doc_id=f"{num:040d}", content_type="text/plain",
        length=1, last_crawled=0.0, content_block="c", content_index=num, content_offset=0,
        record_block="r", record_offset=0, record_length=1,
    )  # fmt: skip


def _alias(url: str, target: str, title: str | None = None) -> UrlAlias:
    return UrlAlias(
        url_id=url_id(url), url=url, target_url_id=url_id(target), target_url=target, title=title,
        first_seen=0.0, last_seen=0.0,
    )  # fmt: skip


def test_every_other_name_of_a_document_becomes_a_name_line(settings: Settings, tmp_path: Path) -> None:
    engine = make_engine(settings.database_url)
    init_db(engine)
    sessions = session_factory(engine)
    with sessions.begin() as s:
        s.add_all([_doc(0, "http://w.test/wiki/United_Kingdom"), _doc(1, "http://w.test/wiki/Abacus")])
        s.add(
            DuplicateUrl(
                url_id=url_id("http://copy.test/abacus"), url="http://copy.test/abacus", doc_num=1,
                doc_id=f"{1:040d}", first_seen=0.0, last_seen=0.0,
            )
        )  # fmt: skip
        s.add_all(
            [
                _alias("http://w.test/wiki/UK", "http://w.test/wiki/United_Kingdom", "UK"),
                _alias("http://w.test/wiki/U.K.", "http://w.test/wiki/UK", "U.K."),  # a double redirect
                _alias("http://old.test/abacus", "http://copy.test/abacus"),  # to a duplicate URL
                _alias("http://w.test/wiki/Gone", "http://w.test/wiki/Never_stored", "Gone"),
            ]
        )
    with sessions() as s:
        counts = write_name_lines(s, tmp_path / "names.txt.gz")
    engine.dispose()
    assert (counts.duplicates, counts.aliases, counts.unresolved) == (1, 3, 1)
    with gzip.open(tmp_path / "names.txt.gz", "rt", encoding="utf-8") as fh:
        names = dict(name_announcement(line) for line in fh)
    assert names == {
        url_id("http://copy.test/abacus"): ["name", 1, ""],
        url_id("http://w.test/wiki/UK"): ["name", 0, "UK"],
        url_id("http://w.test/wiki/U.K."): ["name", 0, "U.K."],
        url_id("http://old.test/abacus"): ["name", 1, ""],
    }
