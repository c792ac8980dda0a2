"""The API's results body written from dicts must equal what the pydantic models write."""

from __future__ import annotations

import json
import math

import pytest

from services.search.display.snippets import Fragment
from services.search.http.schemas import SearchResponse, search_response_json
from services.search.query.limits import QueryCut, Repeat
from services.search.results import SearchHit, SearchResults


def _hit(num: int, score: float = 3.25) -> SearchHit:
    return SearchHit(
        doc_num=num,
        url=f'http://example.org/a/{num}?q="x"&y=</script>',
        title="Zürich \u2014 «quotes» \\ back\nslash \U0001f600",
        score=score,
        text_score=0.1 + 0.2,
        pagerank=1e-07,
        snippet=[
            Fragment("… before ", False),
            Fragment("Zürich", True),
            Fragment(" between <b>", False),
            Fragment("lakes", True),
            Fragment(" …", False),
        ],
        cached_url=f"/cached/{num}",
        also_at=["http://mirror.example/a", "https://example.org/ä"],
        content_type="application/pdf",
    )


def _bodies(results: SearchResults) -> tuple[object, object]:
    fast = search_response_json(results)
    slow = SearchResponse.from_results(results).model_dump_json()
    assert isinstance(fast, bytes)
    return json.loads(fast), json.loads(slow)


@pytest.mark.parametrize(
    "results",
    [
        SearchResults(
            query="zürich lakes",
            total=2,
            page=1,
            per_page=10,
            hits=[_hit(1), _hit(7, 12.0)],
            took_ms=1.23456,
            terms=["zurich", "lake"],
            index_version=4,
            mode="and",
            suggestion="zurich lake",
            cached=True,
        ),
        SearchResults(
            query="",
            total=0,
            page=3,
            per_page=5,
            message="nothing is published yet",
            index_version=None,
            fewer=["a b", '"c d"'],
        ),
        SearchResults(query="x", total=10_000, page=2, per_page=1, hits=[_hit(0, 0.0)], mode="or+feedback"),
        SearchResults(  # a query cut by the limits (services/search/query/limits.py)
            query="ab w1",
            total=0,
            page=1,
            per_page=10,
            cut=QueryCut(
                ignored_chars=7, repeats=(Repeat("ab", 400), Repeat('"c d"', 3)), ignored_words=("«z»",)
            ),
        ),
    ],
)
def test_the_fast_body_equals_the_models_body(results: SearchResults) -> None:
    fast, slow = _bodies(results)
    assert fast == slow
    assert list(fast) == list(slow)  # fields in the schema's order


def test_highlights_point_at_the_matching_words() -> None:
    fast = json.loads(
        search_response_json(SearchResults(query="q", total=1, page=1, per_page=10, hits=[_hit(3)]))
    )
    hit = fast["hits"][0]
    assert [hit["snippet"][h["start"] : h["end"]] for h in hit["highlights"]] == ["Zürich", "lakes"]


def test_a_score_that_is_not_finite_is_written_as_the_models_write_it() -> None:
    results = SearchResults(query="q", total=1, page=1, per_page=10, hits=[_hit(3, math.inf)])
    fast, slow = _bodies(results)
    assert fast == slow
    assert fast["hits"][0]["score"] is None
