"""The driver of the MapReduce PageRank engine: iterate ``MRPageRankStep`` to convergence.

Each iteration is one job whose output is the next one's input (rows
``doc_num -> [rank, targets, old_rank]``, see ``mapreduce.mr_pagerank``); the
driver reads the L1 change and the dangling mass from each output in one
streaming pass and passes them to the next step as options.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from mapreduce.mr_linkgraph import adjacency_rows
from mapreduce.mr_pagerank import MRPageRankStep
from services.config import Settings
from services.indexing.errors import JobError
from services.indexing.runner import read_rows, run_job, write_rows
from services.ranking.pagerank import PageRankResult


def initial_vector(adjacency: Path, num_docs: int, dest: Path) -> float:
    """Write the uniform start vector over doc_nums 0..N-1; returns its dangling mass.

    Documents the link graph lacks (no record was read for them) become
    dangling nodes, so the vector always covers exactly N pages.
    """
    seen = np.zeros(num_docs, dtype=bool)
    rank = 1.0 / num_docs
    dangling = 0

    def rows() -> Iterator[tuple[int, list]]:
        nonlocal dangling
        for doc, targets in adjacency_rows(adjacency):
            if not 0 <= doc < num_docs or any(not 0 <= t < num_docs for t in targets):
                raise JobError(
                    f"link graph {adjacency} names a doc_num outside 0..{num_docs - 1} "
                    f"(row {doc}): the record blocks and the documents table disagree"
                )
            seen[doc] = True
            dangling += not targets
            yield doc, [rank, targets]
        for missing in np.flatnonzero(~seen).tolist():
            dangling += 1
            yield missing, [rank, []]

    write_rows(dest, rows())
    return dangling * rank


def summarize_iteration(path: Path, num_docs: int) -> tuple[float, float]:
    """(L1 change, dangling mass of the new vector) from one step's output."""
    delta = dangling = 0.0
    count = 0
    for _doc, (new_rank, targets, old_rank) in read_rows(path):
        delta += abs(new_rank - old_rank)
        if not targets:
            dangling += new_rank
        count += 1
    if count != num_docs:
        raise JobError(f"PageRank step output {path} has {count} pages, expected {num_docs}")
    return delta, dangling


def read_vector(path: Path, num_docs: int) -> np.ndarray:
    ranks = np.zeros(num_docs, dtype=np.float64)
    for doc, value in read_rows(path):
        ranks[doc] = value[0]
    return ranks


def run_pagerank(
    adjacency: Path,
    num_docs: int,
    settings: Settings,
    scratch: Path,
    *,
    progress: Callable[[str], None] | None = None,
) -> PageRankResult:
    """Iterate MRPageRankStep from the uniform vector until the L1 change drops below
    ``settings.index.pagerank_tolerance`` or ``settings.index.pagerank_max_iterations`` is reached."""
    scratch.mkdir(parents=True, exist_ok=True)
    current = scratch / "pagerank-0.jsonl"
    dangling = initial_vector(adjacency, num_docs, current)
    iterations, delta = 0, float("inf")
    while iterations < settings.index.pagerank_max_iterations:
        iterations += 1
        out = scratch / f"pagerank-{iterations}.jsonl"
        options = [
            "--num-docs",
            str(num_docs),
            "--damping",
            repr(settings.index.pagerank_damping),
            "--dangling-mass",
            repr(dangling),
        ]
        run_job(MRPageRankStep, [current], settings, output=out, scratch=scratch, extra_args=options)
        delta, dangling = summarize_iteration(out, num_docs)
        current.unlink()
        current = out
        if progress:
            progress(f"pagerank iteration {iterations}: L1 change {delta:.3g}")
        if delta < settings.index.pagerank_tolerance:
            break
    return PageRankResult(ranks=read_vector(current, num_docs), iterations=iterations, delta=delta)
