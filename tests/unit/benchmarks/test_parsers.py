"""The parser benchmark's timing and sanity columns (benchmarks/parser_harness.py), on a fake clock."""

from __future__ import annotations

from collections.abc import Callable

from benchmarks.parser_harness import Archive, Extract, archive_columns, measure, text_columns


class FakeClock:
    """CPU time that advances by ``step`` on each call of the work function."""

    def __init__(self, step: float) -> None:
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        return self.now

    def work(self, item: str) -> str:
        self.now += self.step
        return item.upper()


def test_measure_repeats_whole_passes_until_the_minimum_time_and_takes_the_median() -> None:
    clock = FakeClock(step=0.1)  # 0.1 s an input: a pass over two inputs takes 0.2 s
    results = measure({"upper": clock.work}, ["a", "b"], reps=3, min_seconds=0.5, clock=clock)
    rate, outputs = results["upper"]
    assert outputs == ["A", "B"]  # the warm-up pass's outputs
    # Three passes reach 0.6 s >= 0.5 s: 3 passes / 0.6 s = 5 passes a second.
    assert abs(rate - 5.0) < 1e-9
    assert abs(clock.now - (0.2 + 3 * 0.6)) < 1e-9  # warm-up, then three repetitions


def test_measure_lets_the_contenders_take_turns() -> None:
    clock = FakeClock(step=0.1)
    calls: list[str] = []

    def named(name: str) -> Callable[[str], str]:
        def work(item: str) -> str:
            calls.append(name)
            return clock.work(item)

        return work

    results = measure({"a": named("a"), "b": named("b")}, ["x"], reps=2, min_seconds=0.0, clock=clock)
    assert calls == ["a", "b", "a", "b", "a", "b"]  # warm-ups, then one repetition each per round
    assert list(results) == ["a", "b"]


def test_text_columns_compare_each_document_with_the_reference() -> None:
    base = [Extract("wing flow", 2), Extract("heat transfer", 1)]
    same = text_columns(base, base)
    assert same == {"words": "4", "links": "3", "Jaccard": "1.000"}
    other = text_columns([Extract("wing", 2), Extract("heat transfer", 0)], base)
    assert other == {"words": "3", "links": "2", "Jaccard": "0.750"}  # (1/2 + 1) / 2


def test_text_columns_leave_out_links_when_the_reference_has_none() -> None:
    assert list(text_columns([Extract("a b")], [Extract("a b")])) == ["words", "Jaccard"]


def test_archive_columns_say_whether_payloads_are_the_references() -> None:
    base = [Archive(343, 2_069_892, "abc")]
    assert archive_columns(base, base) == {
        "records": "343",
        "payload bytes": "2,069,892",
        "same payloads": "yes",
    }
    assert archive_columns([Archive(343, 2_069_892, "abd")], base)["same payloads"] == "NO"
