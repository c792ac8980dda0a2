"""Two runs on the same judged queries, compared query by query.

One mean hides what a change did: a paired comparison says how many queries
got better and worse, and whether the mean difference could be chance (a
paired t-test and a two-sided paired randomization test, Smucker et al.,
CIKM 2007, the test IR evaluation recommends; scipy computes both).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import ir_measures
import numpy as np
from scipy import stats

from services.eval.metrics import MEASURES


@dataclass(frozen=True)
class Paired:
    measure: str
    queries: int
    mean_a: float
    mean_b: float
    better: int
    worse: int
    t_test_p: float
    randomization_p: float

    def lines(self) -> list[str]:
        return [
            f"{self.measure} over {self.queries} judged queries: A {self.mean_a:.4f}, B {self.mean_b:.4f} "
            f"(B - A {self.mean_b - self.mean_a:+.4f})",
            f"  B better on {self.better}, worse on {self.worse}, equal on "
            f"{self.queries - self.better - self.worse}",
            f"  paired t-test p = {self.t_test_p:.4f}; "
            f"paired randomization test p = {self.randomization_p:.4f}",
        ]


def per_query(run: Path, qrels: Mapping[str, Mapping[str, int]], measure: str) -> dict[str, float]:
    """``measure`` for every judged query (0 where the run has nothing for it)."""
    metric = MEASURES[measure]
    qrel_rows = [ir_measures.Qrel(q, d, rel) for q, docs in qrels.items() for d, rel in docs.items()]
    scores = {q: 0.0 for q in qrels}
    for row in ir_measures.iter_calc([metric], qrel_rows, ir_measures.read_trec_run(str(run))):
        if row.query_id in scores:
            scores[row.query_id] = float(row.value)
    return scores


def compare(
    run_a: Path, run_b: Path, qrels: Mapping[str, Mapping[str, int]], measure: str = "MAP", seed: int = 1
) -> Paired:
    a, b = per_query(run_a, qrels, measure), per_query(run_b, qrels, measure)
    queries = sorted(a)
    xa = np.array([a[q] for q in queries])
    xb = np.array([b[q] for q in queries])
    diff = xb - xa
    t_p = float(stats.ttest_rel(xb, xa).pvalue) if np.any(diff) else 1.0
    randomized = stats.permutation_test(
        (diff,),
        np.mean,
        permutation_type="samples",
        n_resamples=10_000,
        alternative="two-sided",
        random_state=seed,
    )
    return Paired(
        measure,
        len(queries),
        float(xa.mean()),
        float(xb.mean()),
        int((diff > 1e-12).sum()),
        int((diff < -1e-12).sum()),
        t_p,
        float(randomized.pvalue),
    )
