"""benchmarks.passes: each query's fastest pass, the first pass kept apart, per
workload prefix; every query of every workload run in each pass."""

from __future__ import annotations

from benchmarks.passes import one_pass, summarize, warm_up


def test_a_query_s_figure_is_its_fastest_pass_and_the_first_pass_is_kept() -> None:
    passes = [
        {"": [5.0, 1.0, 3.0], "or_": [2.0]},
        {"": [1.0, 4.0, 3.0], "or_": [9.0]},
        {"": [2.0, 2.0, 0.5], "or_": [4.0]},
    ]
    got = summarize(passes)
    # Fastest of each query: 1.0, 1.0, 0.5; p50 the middle one, p95 the largest of three.
    assert (got["p50"], got["p95"], got["mean"]) == (1.0, 1.0, 2.5 / 3)
    assert (got["p50_one_pass"], got["p95_one_pass"]) == (3.0, 5.0)
    assert (got["or_p50"], got["or_p95"], got["or_p50_one_pass"]) == (2.0, 2.0, 2.0)


def test_every_workload_runs_every_query_once_a_pass() -> None:
    ran: list[tuple[str, str]] = []
    workloads = {
        "": (lambda q: ran.append(("typed", q)), ["a", "b"]),
        "and_": (lambda q: ran.append(("and", q)), ["+a", "+b", "+c"]),
    }
    warm_up(workloads)
    assert len(ran) == 5
    times = one_pass(workloads)
    assert ran[5:] == [("typed", "a"), ("typed", "b"), ("and", "+a"), ("and", "+b"), ("and", "+c")]
    assert [len(times[""]), len(times["and_"])] == [2, 3]
    assert all(t >= 0.0 for t in times[""] + times["and_"])
