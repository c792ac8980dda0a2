"""Page info: facts, in-links with their anchor text, duplicates and the score breakdown."""

from __future__ import annotations

import re

import pytest

from services.search.query.limits import MAX_QUERY_CHARS
from tests.integration.search.search_corpus import Doc, commit_documents, publish_index

HUB = "http://p.test/"
DOCS = [
    Doc(
        HUB,
        "Hub",
        "Index of pages.",
        links=[("http://p.test/wing", "the wing page"), ("http://p.test/lift", "")],
    ),
    Doc(
        "http://p.test/wing",
        "Wing design",
        "Wing lift in supersonic flow. Wing again.",
        links=[("http://p.test/lift", "lift notes")],
    ),
    Doc(
        "http://p.test/lift", "Lift", "Lift of a wing at low speed.", links=[("http://p.test/wing", "wings")]
    ),
    Doc("http://p.test/other", "Other", "Nothing about it.", content_type="application/pdf"),
]


@pytest.fixture
def published(settings):
    settings = settings.with_overrides(results_per_page=10, and_min_results=1, feedback_docs=0)
    commit_documents(settings, DOCS, 0, "crawl-p")
    publish_index(settings, DOCS, "v1", pagerank=[0.4, 0.3, 0.2, 0.1])
    return settings


def test_facts_links_in_and_out_with_anchor_text(client):
    info = client.get("/api/page/1").json()
    assert info["url"] == "http://p.test/wing" and info["title"] == "Wing design"
    assert info["content_type"] == "text/html" and info["size"] > 0 and info["lang"] == "en"
    assert info["in_link_count"] == 2 and info["out_link_count"] == 1
    # Best-linked first (the hub has the higher PageRank), each with its anchor text.
    assert [(i["doc_num"], i["anchor"]) for i in info["in_links"]] == [(0, "the wing page"), (2, "wings")]
    assert info["score"] is None  # no query given
    assert client.get("/api/page/3").json()["in_link_count"] == 0
    lift = client.get("/api/page/2").json()
    assert [(i["doc_num"], i["anchor"]) for i in lift["in_links"]] == [(0, ""), (1, "lift notes")]


def test_the_score_breakdown_adds_up_to_the_ranked_score(client):
    results = client.get("/api/search", params={"q": "wing lift"}).json()["hits"]
    info = client.get("/api/page/1", params={"q": "wing lift"}).json()
    score = info["score"]
    assert score["rank"] == [h["doc_num"] for h in results].index(1) + 1
    assert score["final_score"] == pytest.approx(results[score["rank"] - 1]["score"], rel=1e-6)
    assert {t["word"] for t in score["terms"]} == {"wing", "lift"}
    wing = next(t for t in score["terms"] if t["word"] == "wing")
    assert wing["tfs"]["title"] == 1 and wing["tfs"]["body"] == 2 and wing["impact"] > 0
    assert score["words_score"] == pytest.approx(sum(t["score"] for t in score["terms"]))
    assert score["text_score"] == pytest.approx(score["words_score"])  # no feedback here
    # final = text * (1 + prior) * (1 + bonus)
    rebuilt = score["text_score"] * (1 + score["prior"]) * score["entry_factor"] * (1 + score["exact_bonus"])
    assert rebuilt == pytest.approx(score["final_score"], rel=1e-9)
    # A page the query does not find: a breakdown with no rank and no impact.
    other = client.get("/api/page/3", params={"q": "wing"}).json()["score"]
    assert other["rank"] is None and other["terms"][0]["impact"] == 0


def test_the_html_page_shows_it_and_unknown_documents_are_404(client):
    page = client.get("/page/1", params={"q": "wing"})
    assert page.status_code == 200
    assert "the wing page" in page.text and "Why it ranked" in page.text and "Links in" in page.text
    # The score table has a column per BM25F field, the meta and nav fields too.
    header = page.text.split('<table class="scores"', 1)[1].split("</thead>", 1)[0]
    columns = re.findall(r'<th scope="col">([^<]*)</th>', header)
    assert columns == [
        "word",
        "indexed as",
        "title",
        "body",
        "anchor",
        "URL",
        "meta",
        "nav",
        "impact",
        "× weight",
    ]
    assert client.get("/page/3").text.count("PDF") >= 1
    assert client.get("/api/page/99").status_code == 404
    assert client.get("/api/page/-1").status_code in (404, 422)
    # Links from results carry the query as searched, never longer than the limit.
    assert client.get("/api/page/1", params={"q": "x" * (MAX_QUERY_CHARS + 1)}).status_code == 422


def test_a_pdf_is_badged_and_readable_as_its_extracted_text(client):
    page = client.get("/", params={"q": "nothing"}).text
    assert 'class="badge"' in page and 'href="/cached/3/text?q=nothing"' in page
    text = client.get("/cached/3/text")
    assert text.status_code == 200 and "Nothing about it." in text.text and "application/pdf" in text.text
    assert "script-src 'self'" in text.headers["content-security-policy"]
    assert client.get("/cached/99/text").status_code == 404
