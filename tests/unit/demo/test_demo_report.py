"""What the demo says of its crawl and of its admin dashboard: the requests by what they
answered (from the crawl's counters), and where to sign in."""

from __future__ import annotations

from services.crawler.report.progress import CrawlStats
from services.demo.report import admin_lines, crawl_summary, status_classes

# The counters of the demo's crawl of the whole sample web (2026-11-27): 2,050 requests,
# 124 documents, 1,926 of the IANA capture's links to pages it does not hold.
DEMO_CRAWL = {"documents": 124, "pages": 2050, "status_200": 124, "status_404": 1926, "robots_fetched": 2}


def test_the_demo_says_how_many_requests_were_documents_404s_and_redirects():
    line = crawl_summary(CrawlStats(pages=2050, seconds=7.04, counters=DEMO_CRAWL), 8.0)
    assert line == (
        "demo: crawled 2,050 URLs in 7.0 s: 124 documents, 0 redirects, 1,926 not found (404, 410); "
        "indexed in 8.0 s"
    )


def test_every_kind_of_answer_is_named_when_there_is_one():
    counters = {
        "documents": 10,
        "status_200": 13,
        "status_301": 2,
        "status_302": 1,
        "status_404": 4,
        "status_410": 1,
        "status_403": 2,
        "status_503": 3,
    }
    line = crawl_summary(CrawlStats(pages=30, seconds=1.0, errors=4, counters=counters), 2.0)
    assert "10 documents, 3 other 200s not kept (duplicates, soft 404s, noindex)" in line
    assert "3 redirects, 5 not found (404, 410), 2 other 4xx, 3 server errors (5xx), 4 failed fetches" in line


def test_status_counters_by_class():
    counters = {"status_200": 3, "status_301": 1, "status_404": 5, "status_410": 0, "status_x": 9, "pages": 7}
    assert status_classes(counters) == {"2xx": 3, "3xx": 1, "4xx": 5}


def test_the_admin_line_prints_a_generated_token_and_never_the_operators():
    (generated,) = admin_lines("http://127.0.0.1:8000/", "s3cret-made-here", generated=True)
    assert "http://127.0.0.1:8000/admin" in generated and "s3cret-made-here" in generated
    assert "NIMBUS_ADMIN_TOKEN" in generated
    (own,) = admin_lines("http://127.0.0.1:8000/", "operators-own", generated=False)
    assert "http://127.0.0.1:8000/admin" in own and "operators-own" not in own
    assert "NIMBUS_ADMIN_TOKEN" in own
