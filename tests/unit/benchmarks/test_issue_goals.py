"""Issue 31's goals read from one run's figures, unrounded."""

from __future__ import annotations

from benchmarks.index import issue_goals

TANTIVY = {"build_s": 10.0, "index_bytes": 100.0, "p95": 0.40, "and_p95": 0.36}


def test_a_run_meeting_every_goal() -> None:
    nimbus = {"build_s": 19.0, "index_bytes": 141.0, "p95": 0.39, "or_p95": 0.40, "and_p95": 0.18}
    goals = issue_goals(nimbus, TANTIVY)
    assert [met for *_, met in goals] == [True] * 5
    assert [round(ratio, 3) for _, ratio, _, _ in goals] == [0.526, 1.41, 0.975, 1.0, 0.5]


def test_a_ratio_that_prints_as_the_bound_but_is_above_it_misses() -> None:
    nimbus = {"build_s": 20.1, "index_bytes": 151.0, "p95": 0.401, "or_p95": 0.39, "and_p95": 0.1815}
    met = {name: ok for name, _, _, ok in issue_goals(nimbus, TANTIVY)}
    assert met == {
        "build, documents a second": False,  # 0.4975x
        "index bytes": False,
        "p95 as typed": False,  # 1.0025x
        "p95 OR": True,
        "p95 AND (+every +word, both)": False,  # 0.504x prints as 0.50x
    }
