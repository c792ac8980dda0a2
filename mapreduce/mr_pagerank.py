"""MRPageRankStep: one PageRank iteration as a MapReduce job (the driver that iterates it
to convergence is ``services.indexing.pagerank_driver``).

Input and output rows (JSONProtocol)::

    doc_num  ->  [rank, [targets...]]                  (input; extra items ignored)
    doc_num  ->  [new_rank, [targets...], old_rank]    (output)

The output is the next iteration's input, and carries the old rank so the
driver reads the L1 change and the next dangling mass in one streaming pass,
holding nothing but the counts. N and the dangling mass are global numbers a
task cannot see, so the driver passes them in as options
(``--num-docs``, ``--dangling-mass``). The math is ``services.ranking.pagerank``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from mrjob.protocol import StandardJSONProtocol
from mrjob.step import MRStep

from mapreduce.task_output import BufferedOutputJob
from services.ranking.pagerank import contributions, updated_rank

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
        self.add_passthru_arg(
            "--dangling-mass",
            type=float,
            required=True,
            help="total rank of pages without out-links in the input vector",
        )

    def steps(self) -> list[MRStep]:
        # No combiner: in the local runner it costs one more process per map task,
        # more than the shuffle it saves on graphs this engine crawls.
        return [MRStep(mapper=self.mapper_spread, reducer=self.reducer_rank)]

    def mapper_spread(self, doc: int, value: list) -> Iterator[tuple[int, object]]:
        rank, targets = value[0], value[1]
        yield doc, [NODE, targets, rank]  # keep the graph for the next iteration
        yield from contributions(rank, targets)

    def reducer_rank(self, doc: int, values: Iterable[float | list[Any]]) -> Iterator[tuple[int, list[Any]]]:
        incoming = 0.0
        node: list[Any] | None = None
        for value in values:
            if isinstance(value, list):
                node = value
            else:
                incoming += value
        if node is None:
            raise ValueError(
                f"doc_num {doc} receives links but is not a node of the graph: "
                "the adjacency input is incomplete; rebuild the link graph"
            )
        _, targets, old_rank = node
        opts = self.options
        new_rank = updated_rank(incoming, opts.num_docs, opts.damping, opts.dangling_mass)
        yield doc, [new_rank, targets, old_rank]


if __name__ == "__main__":
    MRPageRankStep.run()
