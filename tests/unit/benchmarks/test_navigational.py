"""The navigational benchmark's measures and the query set it reads."""

from __future__ import annotations

import pytest

from benchmarks.navigational import _worse, answer_url, load_queries, measures


def test_mrr_and_success_at_1_and_10() -> None:
    m = measures([1, 2, None, 10, 11])
    assert m["queries"] == 5
    assert m["MRR"] == pytest.approx((1 + 1 / 2 + 1 / 10 + 1 / 11) / 5)
    assert m["S@1"] == pytest.approx(1 / 5) and m["S@10"] == pytest.approx(3 / 5)
    assert measures([])["queries"] == 0


def test_answers_map_to_the_origin_serving_their_host() -> None:
    hosts = {"www.iana.org": "http://127.0.0.1:4000"}
    assert answer_url("http://www.iana.org/time-zones", hosts) == "http://127.0.0.1:4000/time-zones"
    assert answer_url("https://www.iana.org/dnssec", hosts) == "http://127.0.0.1:4000/dnssec"
    assert answer_url("http://www.iana.org", hosts) == "http://127.0.0.1:4000/"
    assert answer_url("http://example.com/", hosts) is None  # not served there
    assert answer_url("http://example.com/", {}) == "http://example.com/"  # the archive's own URLs


def test_worse_ranks() -> None:
    assert _worse(3, 1) and _worse(None, 5) and not _worse(1, 3) and not _worse(2, 2) and not _worse(4, None)


def test_the_stored_queries_name_one_page_each_by_a_known_rule() -> None:
    queries = load_queries()
    assert len(queries) == len({q.id for q in queries}) == 129
    assert {q.group for q in queries} == {"home pages", "section pages", "named pages"}
    assert ("iana", "http://www.iana.org/") in {(q.text, q.url) for q in queries}
