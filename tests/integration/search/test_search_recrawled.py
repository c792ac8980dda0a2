"""A recrawl changes a document after the index was built: the Document row keeps its
doc_num but points to a new record and new content. Until the next build the index
still ranks by the old text, and the hit shows the latest version (title, snippet,
cached copy), never a crash or the superseded text."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy import select, update

from services.search.http.app import create_app
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.models import Document
from tests.integration.search.search_corpus import Doc, commit_documents, publish_index

CORPUS = [
    Doc("http://a.test/glider", "Gliders", "Gliders soar on thermals without an engine."),
    Doc("http://a.test/balloon", "Balloons", "Hot air balloons drift with the wind."),
]
NEW_GLIDER = Doc(
    "http://a.test/glider",
    "Sailplanes",
    "Sailplanes ride ridge lift for hours.",
    body=b"<html>sailplanes v2</html>",
)
POINTERS = (
    "doc_id",
    "title",
    "length",
    "content_block",
    "content_index",
    "content_offset",
    "record_block",
    "record_offset",
    "record_length",
)


def recrawl(settings, tmp_path, doc_num: int, doc: Doc) -> None:
    """Append the new version to new blocks (a scratch database takes the throwaway row)
    and repoint the real row, as the crawler does for a changed page."""
    scratch = settings.with_overrides(database_url=f"sqlite:///{tmp_path / 'scratch.db'}")
    commit_documents(scratch, [doc], doc_num, "crawl-0002")
    engine = make_engine(scratch.database_url)
    with session_factory(engine)() as s:
        new = s.scalars(select(Document)).one()
        values = {name: getattr(new, name) for name in POINTERS}
    engine.dispose()
    engine = make_engine(settings.database_url)
    with session_factory(engine).begin() as s:
        s.execute(
            update(Document)
            .where(Document.doc_num == doc_num)
            .values(**values, versions=Document.versions + 1)
        )
    engine.dispose()


def test_hits_show_the_current_version_until_the_next_build(settings, tmp_path):
    commit_documents(settings, CORPUS, 0, "crawl-0001")
    publish_index(settings, CORPUS, "v1")
    recrawl(settings, tmp_path, 0, NEW_GLIDER)
    with TestClient(create_app(settings, recheck_seconds=0)) as client:
        old = client.get("/api/search", params={"q": "thermals"}).json()
        assert old["total"] == 1  # the index still holds the old text
        hit = old["hits"][0]
        assert (hit["doc_num"], hit["title"]) == (0, "Sailplanes")
        assert hit["snippet"] == NEW_GLIDER.text and hit["highlights"] == []
        page = client.get("/", params={"q": "thermals"}).text
        assert "ride ridge lift" in page and "soar on" not in page and "Gliders" not in page
        assert client.get("/cached/0").content == NEW_GLIDER.body
        # New words are found after `nimbus index`, not before.
        assert client.get("/api/search", params={"q": "sailplanes"}).json()["total"] == 0


def test_a_row_pointing_at_another_documents_record_gets_no_snippet(settings):
    commit_documents(settings, CORPUS, 0, "crawl-0001")
    publish_index(settings, CORPUS, "v1")
    engine = make_engine(settings.database_url)
    with session_factory(engine).begin() as s:
        glider = s.scalars(select(Document).where(Document.doc_num == 0)).one()
        s.execute(
            update(Document)
            .where(Document.doc_num == 1)
            .values(record_offset=glider.record_offset, record_length=glider.record_length)
        )
    engine.dispose()
    with TestClient(create_app(settings, recheck_seconds=0)) as client:
        body = client.get("/api/search", params={"q": "balloons"}).json()
        assert [(h["doc_num"], h["title"], h["snippet"]) for h in body["hits"]] == [(1, "Balloons", "")]
