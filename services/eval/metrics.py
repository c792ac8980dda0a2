"""TREC run files and the standard measures, computed by ir-measures (pytrec_eval).

No metric is computed by hand here: ir-measures wraps trec_eval's own code,
so the figures are comparable with published ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import ir_measures
from ir_measures import AP, RR, P, R, nDCG

# The measures `nimbus eval` reports, in the order they are printed.
MEASURES = {"MAP": AP, "nDCG@10": nDCG @ 10, "P@10": P @ 10, "Recall@100": R @ 100, "MRR": RR}

Run = Mapping[str, list[tuple[str, float]]]  # query id -> [(doc id, score)] best first


def write_trec_run(run: Run, path: Path, tag: str = "nimbus") -> Path:
    """The six-column TREC format: ``qid Q0 docno rank score tag``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for qid in sorted(run, key=_numeric_first):
            for rank, (docno, score) in enumerate(run[qid], 1):
                fh.write(f"{qid} Q0 {docno} {rank} {score:.6f} {tag}\n")
    return path


def evaluate(run: Run, qrels: Mapping[str, Mapping[str, int]]) -> dict[str, float]:
    """Mean of each measure over the judged queries (a judged query with no results counts as 0)."""
    qrel_rows = [ir_measures.Qrel(q, d, rel) for q, docs in qrels.items() for d, rel in docs.items()]
    run_rows = [ir_measures.ScoredDoc(q, d, s) for q, hits in run.items() if q in qrels for d, s in hits]
    judged = list(qrels)
    totals = {name: 0.0 for name in MEASURES}
    per_query = ir_measures.iter_calc(list(MEASURES.values()), qrel_rows, run_rows)
    by_measure = {measure: name for name, measure in MEASURES.items()}
    for metric in per_query:
        totals[by_measure[metric.measure]] += metric.value
    return {name: total / len(judged) if judged else 0.0 for name, total in totals.items()}


def format_metrics(metrics: Mapping[str, float]) -> Iterable[str]:
    """One line per measure, ``MAP 0.3312``."""
    for name in MEASURES:
        yield f"{name} {metrics[name]:.4f}"


def _numeric_first(qid: str) -> tuple[int, int | str]:
    return (0, int(qid)) if qid.isdigit() else (1, qid)
