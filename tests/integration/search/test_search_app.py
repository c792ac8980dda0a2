"""The search app end to end over a real (small) published index.

Each test commits documents to blocks and the database, publishes a segment
(tests/integration/search/search_corpus.py) and talks HTTP to the FastAPI
app through TestClient. The main test runs on both backends: SQLite + files
and MariaDB + S3 (moto).
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import update

from mapreduce.postings import url_words
from services.config import Settings
from services.search.http.app import create_app
from services.search.retrieval.exact_forms import EXACT_FORM_BONUS
from services.storage.sql.engines import make_engine, session_factory
from services.storage.sql.models import Document
from services.text.analysis.analyze import analyze, analyze_forms
from tests.integration.search.search_corpus import Doc, commit_documents, publish_index

XSS_BODY = b"<html><script>alert('stored')</script>\xff\xfe<p>Hypersonic flow</p></html>"
CORPUS = [
    Doc(
        "http://a.test/wing",
        "Wing design",
        "The wing of an aircraft produces lift. Wing shape matters: wing twist, wing sweep.",
    ),
    Doc("http://a.test/lift", "Lift", "Lift is produced by air flowing over the wing surface."),
    Doc(
        "http://a.test/xss",
        "<script>alert('x')</script> Hypersonic flow",
        "Hypersonic flow over a blunt body heats the nose.",
        body=XSS_BODY,
    ),
    Doc(
        "http://a.test/notes.txt",
        "Notes",
        "Plain notes about drag, thrust and the wing.",
        content_type="text/plain",
    ),
    Doc(
        "http://a.test/report.pdf",
        "Report",
        "A report on boundary layers and drag.",
        content_type="application/pdf",
        body=b"%PDF-1.4 not really a pdf",
    ),
    Doc("http://a.test/drag", "Drag", "Drag slows the aircraft down; drag grows with speed."),
]
PAGERANK = [0.10, 0.30, 0.10, 0.25, 0.15, 0.10]
WEIGHT = 2.0  # PageRank prior weight for these tests: large enough to reorder this corpus


def expected_ranking(
    docs: list[Doc], query: str, pagerank: list[float], weight: float
) -> list[tuple[int, float]]:
    """Brute-force reference of the documented BM25F formula (docs/ranking.md), in plain Python."""
    n = len(docs)
    params = {"title": (1.5, 0.5), "body": (1.0, 0.75), "url": (0.5, 0.5)}
    fields = [
        {
            "title": Counter(analyze(d.title)),
            "body": Counter(analyze(f"{d.description} {d.text}")),
            "url": Counter(analyze(url_words(d.url))),
        }
        for d in docs
    ]
    length = [{f: sum(c.values()) for f, c in doc.items()} for doc in fields]
    avg = {f: (sum(x[f] for x in length) / n) or 1.0 for f in params}
    df = Counter(t for doc in fields for t in set().union(*doc.values()))
    k1 = 1.2
    scores = []
    for d, doc in enumerate(fields):
        text, matched = 0.0, False
        for t, qtf in Counter(analyze(query)).items():
            pseudo = sum(w * doc[f][t] / (1 - b + b * length[d][f] / avg[f]) for f, (w, b) in params.items())
            if pseudo:
                matched = True
                idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
                # Stored in steps of 1/255 of the term's bound (services.ranking.impact_levels).
                step = idf * (k1 + 1) / 255
                text += qtf * max(1, round(idf * pseudo * (k1 + 1) / (pseudo + k1) / step)) * step
        if matched:
            s = n * pagerank[d]
            # The words-as-typed rescore (services.search.retrieval.exact_forms): the query's written forms
            # the document holds in its title or body (exact here; a Bloom filter in the index).
            typed = {form for _, form in analyze_forms(query)}
            held = {
                form for _, form in analyze_forms(f"{docs[d].title} {docs[d].description} {docs[d].text}")
            }
            bonus = 1 + EXACT_FORM_BONUS * len(typed & held) / len(typed)
            scores.append((d, text * (1 + weight * s / (s + 1)) * bonus))
    return sorted(scores, key=lambda s: (-s[1], s[0]))


def make_settings(request, tmp_path, backend: str) -> Settings:
    base = request.getfixturevalue("settings")
    if backend == "aws":
        bucket = request.getfixturevalue("s3_bucket")
        base = base.with_overrides(
            database_url=request.getfixturevalue("mysql_url"),
            blob_url=f"s3://{bucket}/nimbus",
            aws_endpoint_url=request.getfixturevalue("moto_server"),
        )
    # Feedback off: these tests check the formula on the user's words.
    return base.with_overrides(results_per_page=2, pagerank_weight=WEIGHT, feedback_docs=0)


@pytest.fixture
def published(request, tmp_path):
    backend = getattr(request, "param", "local")
    settings = make_settings(request, tmp_path, backend)
    commit_documents(settings, CORPUS, 0, "crawl-0001")
    publish_index(settings, CORPUS, "v1", PAGERANK)
    return settings


@pytest.mark.parametrize(
    "published", ["local", pytest.param("aws", marks=pytest.mark.mariadb)], indirect=True
)
def test_api_ranks_by_the_formula_and_pages_through_hits(published, client):
    expected = expected_ranking(CORPUS, "wing wing lift", PAGERANK, WEIGHT)
    assert {d for d, _ in expected} == {0, 1, 3}  # hold "wing" or "lift"
    first = client.get("/api/search", params={"q": "wing wing lift"}).json()
    second = client.get("/api/search", params={"q": "wing wing lift", "page": 2}).json()
    assert (first["total"], first["pages"], first["page"], first["per_page"]) == (3, 2, 1, 2)
    hits = first["hits"] + second["hits"]
    assert [h["doc_num"] for h in hits] == [d for d, _ in expected]
    assert [h["score"] for h in hits] == pytest.approx([s for _, s in expected], rel=1e-5)
    top = hits[0]
    doc = CORPUS[top["doc_num"]]
    assert (top["url"], top["title"]) == (doc.url, doc.title)
    assert top["cached_url"] == f"/cached/{top['doc_num']}"
    assert top["pagerank"] == PAGERANK[top["doc_num"]]
    prior = len(CORPUS) * top["pagerank"] / (len(CORPUS) * top["pagerank"] + 1)
    both_typed = 1 + EXACT_FORM_BONUS  # the top page holds "wing" and "lift" as typed
    assert top["score"] == pytest.approx(top["text_score"] * (1 + WEIGHT * prior) * both_typed, rel=1e-9)
    marked = [top["snippet"][s["start"] : s["end"]].lower() for s in top["highlights"]]
    assert marked and set(marked) <= {"wing", "lift"}
    assert first["terms"] == ["wing", "lift"]
    beyond = client.get("/api/search", params={"q": "wing", "page": 9}).json()
    assert (beyond["total"], beyond["hits"]) == (3, [])


def test_expected_ranking_reference_is_sensitive_to_pagerank():
    """Guards the test above: with these numbers PageRank really changes the order."""
    by_text = [d for d, _ in expected_ranking(CORPUS, "wing wing lift", PAGERANK, 0.0)]
    merged = [d for d, _ in expected_ranking(CORPUS, "wing wing lift", PAGERANK, WEIGHT)]
    assert by_text != merged


def test_empty_and_stop_word_queries_return_nothing_with_a_reason(client):
    empty = client.get("/api/search", params={"q": "  "}).json()
    assert (empty["total"], empty["hits"], empty["message"]) == (0, [], "")
    stop = client.get("/api/search", params={"q": "the of and"}).json()
    assert stop["total"] == 0 and "common words" in stop["message"]
    unknown = client.get("/api/search", params={"q": "zeppelin"}).json()
    assert (unknown["total"], unknown["terms"]) == (0, [])
    assert client.get("/api/search", params={"q": "x", "page": 0}).status_code == 422


def test_search_page_renders_escaped_results_with_marks_and_pagination(client):
    page = client.get("/", params={"q": "hypersonic"})
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    html = page.text
    assert "<script>alert('x')</script>" not in html
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; Hypersonic flow" in html
    assert "<mark>Hypersonic</mark>" in html
    assert 'href="http://a.test/xss"' in html and "/page/2?q=" in html
    assert 'href="/cached/2/view?q=hypersonic"' in html
    assert "1 result" in html and " ms" in html
    paged = client.get("/", params={"q": "wing", "page": "2"}).text
    assert "3 results" in paged and 'aria-current="page">2<' in paged
    assert 'href="/?q=wing&amp;page=1"' in paged
    assert "No results for <strong>zeppelin</strong>" in client.get("/?q=zeppelin").text
    home = client.get("/")
    assert home.status_code == 200 and "autofocus" in home.text
    assert client.get("/static/style.css").status_code == 200


def test_cached_copy_is_byte_identical_and_sandboxed(client):
    resp = client.get("/cached/2")
    assert resp.status_code == 200
    assert resp.content == XSS_BODY
    assert hashlib.sha1(resp.content).hexdigest() == hashlib.sha1(XSS_BODY).hexdigest()
    assert resp.headers["content-security-policy"].split(";")[0] == "sandbox"
    assert "allow-scripts" not in resp.headers["content-security-policy"]
    assert resp.headers["x-content-type-options"] == "nosniff"
    assert resp.headers["content-type"] == "text/html"  # no invented charset
    pdf = client.get("/cached/4")
    assert (pdf.content, pdf.headers["content-type"]) == (CORPUS[4].body, "application/pdf")
    assert client.get("/cached/3").headers["content-type"] == "text/plain"


def test_cached_copy_404s_and_refuses_a_mismatched_copy(published, client):
    assert client.get("/cached/999").status_code == 404
    assert client.get("/cached/-1").status_code == 404
    engine = make_engine(published.database_url)
    with session_factory(engine).begin() as s:
        s.execute(update(Document).where(Document.doc_num == 0).values(doc_id="0" * 40))
    engine.dispose()
    resp = client.get("/cached/0")
    assert resp.status_code == 503 and "unavailable" in resp.json()["detail"]


def test_healthz_reports_the_active_index(client):
    health = client.get("/healthz").json()
    assert health["status"] == "ok"
    assert (health["num_docs"], health["segment"]) == (6, "index/segment-v1.nseg")
    assert health["num_terms"] > 10


def test_without_an_index_every_route_says_how_to_build_one(settings):
    with TestClient(create_app(settings, recheck_seconds=0)) as client:
        page = client.get("/", params={"q": "wing"})
        assert page.status_code == 200 and "nimbus crawl" in page.text
        api = client.get("/api/search", params={"q": "wing"})
        assert api.status_code == 503 and "nimbus index" in api.json()["message"]
        health = client.get("/healthz")
        assert health.json()["status"] == "no-index"
        assert health.status_code == 200  # alive: a load balancer keeps the instance
        assert client.get("/cached/0").status_code == 404


def test_a_new_index_version_is_picked_up_without_restart(published, client):
    # As typed (nfpr): the old index lacks the word, and its correction is not the point here.
    assert client.get("/api/search", params={"q": "supersonic", "nfpr": "true"}).json()["total"] == 0
    service = client.app.state.service
    old = service.index()
    new_docs = [
        Doc("http://b.test/mach", "Supersonic flight", "Supersonic aircraft break Mach 1."),
        Doc("http://b.test/boom", "Sonic boom", "A supersonic body makes a sonic boom."),
    ]
    commit_documents(published, new_docs, len(CORPUS), "crawl-0002")
    version = publish_index(published, CORPUS + new_docs, "v2", PAGERANK[:4] + [0.1] * 4)
    found = client.get("/api/search", params={"q": "supersonic"}).json()
    assert found["index_version"] == version and found["total"] == 2
    assert {h["url"] for h in found["hits"]} == {"http://b.test/mach", "http://b.test/boom"}
    assert client.get("/healthz").json()["num_docs"] == 8
    # A request that still holds the old index finishes on it, unchanged.
    assert old.version_id != version and old.num_docs == 6
    assert old.postings(old.term_id("wing"))[0].tolist() == [0, 1, 3]
    assert old.term_id("supersonic") is None


@pytest.mark.parametrize(
    "published", ["local", pytest.param("aws", marks=pytest.mark.mariadb)], indirect=True
)
def test_answers_on_the_event_loop_only_when_nothing_is_remote_and_the_same_either_way(published, client):
    """Local stores and a recently checked, prepared version: searches run on the event loop;
    S3 or MySQL, or a version due for a check: on the thread pool. The answers are the same."""
    with TestClient(create_app(published, recheck_seconds=3600)) as settled:
        service = settled.app.state.service
        for params in ({"q": "wing wing lift"}, {"q": "wing", "page": 2}, {"q": "wnig"}):
            inline = settled.get("/api/search", params=params).json()
            pooled = client.get("/api/search", params=params).json()
            assert {k: v for k, v in inline.items() if k != "took_ms"} == {
                k: v for k, v in pooled.items() if k != "took_ms"
            }
        assert (
            settled.get("/api/suggest", params={"q": "wi"}).json()
            == client.get("/api/suggest", params={"q": "wi"}).json()
        )
        assert service.answers_at_once() is (published.blob_url.startswith("file://"))
    # A version due for a check may mean a database read and a load: never on the loop.
    assert client.app.state.service.answers_at_once() is False


@pytest.mark.parametrize("published", [pytest.param("aws", marks=pytest.mark.mariadb)], indirect=True)
def test_record_blocks_read_from_s3_are_kept_on_disk_and_read_there(published):
    from sqlalchemy import select

    from services.search.service import SearchService
    from services.storage.sql.models import Document
    from tests.polling import wait_for

    service = SearchService(published.with_overrides(result_cache_size=0))
    try:
        first = service.search("wing", size=10)
        assert first.hits and all(hit.snippet for hit in first.hits)
        with service.engine.connect() as connection:
            nums = [hit.doc_num for hit in first.hits]
            blocks = set(connection.scalars(select(Document.record_block).where(Document.doc_num.in_(nums))))
        assert service.blocks is not None
        wait_for(lambda: all(service.blocks.holds(b) for b in blocks), timeout=20, what="the blocks copied")
        for name in blocks:
            service.blobs.delete(name)  # only the local copies can answer now
        again = service.search("wing", size=10)
        assert [hit.snippet for hit in again.hits] == [hit.snippet for hit in first.hits]
    finally:
        service.close()
