"""MRPageRankStep: one PageRank iteration as a MapReduce job, and the driver that
iterates it to convergence.

Input and output rows (JSONProtocol)::

    doc_num  ->  [rank, [targets...]]                  (input; extra items ignored)
    doc_num  ->  [new_rank, [targets...], old_rank]    (output)

The output is the next iteration's input, and carries the old rank so the
driver reads the L1 change and the next dangling mass in one streaming pass,
holding nothing but the counts. N and the dangling mass are global numbers a
task cannot see, so the driver passes them in as options
(``--num-docs``, ``--dangling-mass``). The math is ``mapreduce.pagerank``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import numpy as np
from mrjob.protocol import StandardJSONProtocol
from mrjob.step import MRStep

from mapreduce.mr_linkgraph import adjacency_rows
from mapreduce.pagerank import PageRankResult, contributions, updated_rank
from mapreduce.runner import JobError, read_rows, run_job, write_rows
from mapreduce.task_output import BufferedOutputJob
from services.config import Settings

NODE = "node"


class MRPageRankStep(BufferedOutputJob):
    """x' = (1-d)/N + d * (incoming shares + dangling mass / N), for every page."""

    INPUT_PROTOCOL = StandardJSONProtocol
    INTERNAL_PROTOCOL = StandardJSONProtocol
    OUTPUT_PROTOCOL = StandardJSONProtocol

    def configure_args(self) -> None:
        super().configure_args()
        self.add_passthru_arg("--num-docs", type=int, required=True, help="N, pages in the graph")
        self.add_passthru_arg("--damping", type=float, default=0.85, help="d, follow-a-link odds")
        self.add_passthru_arg("--dangling-mass", type=float, required=True,
                              help="total rank of pages without out-links in the input vector")

    def steps(self) -> list[MRStep]:
        # No combiner: in the local runner it costs one more process per map task,
        # more than the shuffle it saves on graphs this engine crawls.
        return [MRStep(mapper=self.mapper_spread, reducer=self.reducer_rank)]

    def mapper_spread(self, doc: int, value: list) -> Iterator[tuple[int, object]]:
        rank, targets = value[0], value[1]
        yield doc, [NODE, targets, rank]  # keep the graph for the next iteration
        yield from contributions(rank, targets)

    def reducer_rank(self, doc: int, values: Iterable[object]) -> Iterator[tuple[int, list]]:
        incoming = 0.0
        node: list | None = None
        for value in values:
            if isinstance(value, list):
                node = value
            else:
                incoming += value
        if node is None:
            raise ValueError(f"doc_num {doc} receives links but is not a node of the graph: "
                             "the adjacency input is incomplete; rebuild the link graph")
        _, targets, old_rank = node
        opts = self.options
        new_rank = updated_rank(incoming, opts.num_docs, opts.damping, opts.dangling_mass)
        yield doc, [new_rank, targets, old_rank]


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
                raise JobError(f"link graph {adjacency} names a doc_num outside 0..{num_docs - 1} "
                               f"(row {doc}): the record blocks and the documents table disagree")
            seen[doc] = True
            dangling += not targets
            yield doc, [rank, targets]
        for doc in np.flatnonzero(~seen):
            dangling += 1
            yield int(doc), [rank, []]

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


def run_pagerank(adjacency: Path, num_docs: int, settings: Settings, scratch: Path, *,
                 progress: Callable[[str], None] | None = None) -> PageRankResult:
    """Iterate MRPageRankStep from the uniform vector until the L1 change drops below
    ``settings.pagerank_tolerance`` or ``settings.pagerank_max_iterations`` is reached."""
    scratch.mkdir(parents=True, exist_ok=True)
    current = scratch / "pagerank-0.jsonl"
    dangling = initial_vector(adjacency, num_docs, current)
    iterations, delta = 0, float("inf")
    while iterations < settings.pagerank_max_iterations:
        iterations += 1
        out = scratch / f"pagerank-{iterations}.jsonl"
        options = ["--num-docs", str(num_docs), "--damping", repr(settings.pagerank_damping),
                   "--dangling-mass", repr(dangling)]
        run_job(MRPageRankStep, [current], settings, output=out, scratch=scratch,
                extra_args=options)
        delta, dangling = summarize_iteration(out, num_docs)
        current.unlink()
        current = out
        if progress:
            progress(f"pagerank iteration {iterations}: L1 change {delta:.3g}")
        if delta < settings.pagerank_tolerance:
            break
    return PageRankResult(ranks=read_vector(current, num_docs), iterations=iterations,
                          delta=delta)


if __name__ == "__main__":
    MRPageRankStep.run()
