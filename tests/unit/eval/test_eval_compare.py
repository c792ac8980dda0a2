"""Paired comparison of two runs: per-query counts and significance that can fail."""

from __future__ import annotations

from pathlib import Path

from services.eval.compare import compare


def _run(path: Path, ranking: dict[str, list[str]]) -> Path:
    lines = [f"{q} Q0 {d} {i + 1} {10 - i} x" for q, docs in ranking.items() for i, d in enumerate(docs)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_identical_runs_are_equal_and_a_uniform_gain_is_significant(tmp_path: Path) -> None:
    qrels = {str(q): {"good": 1} for q in range(30)}
    worse = {str(q): ["bad1", "bad2", "good"] for q in range(30)}
    better = {str(q): ["good", "bad1", "bad2"] for q in range(30)}
    same = compare(_run(tmp_path / "a", worse), _run(tmp_path / "b", worse), qrels)
    assert (same.better, same.worse, same.mean_a) == (0, 0, same.mean_b)
    assert same.randomization_p == 1.0 and same.t_test_p == 1.0
    gain = compare(_run(tmp_path / "a", worse), _run(tmp_path / "c", better), qrels)
    assert gain.better == 30 and gain.mean_b == 1.0 and gain.mean_a < 0.34
    assert gain.randomization_p < 0.01 and gain.t_test_p < 0.01
    assert any("B better on 30" in line for line in gain.lines())
