"""PageRank math: the update rule the MapReduce step applies, and an in-memory
reference that cross-checks it.

The model (Brin and Page, with the usual fix for pages without out-links)::

    x'_j = (1 - d) / N  +  d * ( sum_{i -> j} x_i / outdeg(i)  +  D / N )

where ``D`` is the dangling mass: the total rank of pages with no out-links,
spread uniformly over all N pages (as if a dangling page linked to every
page, without materialising N edges per dangling page). The teleport term
``(1 - d) / N`` is uniform too, so ``x'`` sums to 1 whenever ``x`` does.

The graph is an adjacency list indexed by doc_num: ``adjacency[i]`` holds the
distinct targets of page ``i`` (no self-links: see ``mapreduce.mr_linkgraph``).
Convergence is measured as the L1 change between successive vectors; the
MapReduce driver and the reference use the same rule and report the same
(iterations, delta).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

Adjacency = Sequence[Sequence[int]]


@dataclass
class PageRankResult:
    ranks: np.ndarray  # float64 [N], sums to 1
    iterations: int
    delta: float  # L1 change of the last iteration


def contributions(rank: float, targets: Sequence[int]) -> Iterator[tuple[int, float]]:
    """The share of ``rank`` a page sends along each out-link (none if dangling)."""
    if not targets:
        return
    share = rank / len(targets)
    for target in targets:
        yield target, share


def updated_rank(incoming: float, num_docs: int, damping: float, dangling_mass: float) -> float:
    """One page's new rank from the sum of the shares it received."""
    return (1.0 - damping) / num_docs + damping * (incoming + dangling_mass / num_docs)


def uniform_ranks(num_docs: int) -> np.ndarray:
    """The starting vector: every page equally likely."""
    if num_docs <= 0:
        raise ValueError("PageRank needs at least one document")
    return np.full(num_docs, 1.0 / num_docs)


def adjacency_from_mapping(graph: Mapping[int, Sequence[int]], num_docs: int) -> list[list[int]]:
    """A dense adjacency list for doc_nums 0..N-1; pages missing from ``graph`` are dangling."""
    adjacency: list[list[int]] = [[] for _ in range(num_docs)]
    for source, targets in graph.items():
        adjacency[source] = sorted(set(targets))
    return adjacency


def google_matrix(adjacency: Adjacency, damping: float) -> np.ndarray:
    """The dense column-stochastic matrix G with x' = G x (for small graphs and tests)."""
    n = len(adjacency)
    matrix = np.zeros((n, n))
    for source, targets in enumerate(adjacency):
        if targets:
            for target in targets:
                matrix[target, source] += 1.0 / len(targets)
        else:
            matrix[:, source] = 1.0 / n  # dangling: spread uniformly
    return damping * matrix + (1.0 - damping) / n


def pagerank_dense(adjacency: Adjacency, damping: float, tolerance: float,
                   max_iterations: int) -> PageRankResult:
    """Power iteration with the dense Google matrix: O(N^2), the obviously-right version."""
    matrix = google_matrix(adjacency, damping)
    return _iterate(lambda x: matrix @ x, len(adjacency), tolerance, max_iterations)


def pagerank_sparse(adjacency: Adjacency, damping: float, tolerance: float,
                    max_iterations: int) -> PageRankResult:
    """Power iteration over edge arrays: O(edges) per iteration, the same update as the job."""
    n = len(adjacency)
    out_degree = np.array([len(t) for t in adjacency], dtype=np.float64)
    sources = np.repeat(np.arange(n), out_degree.astype(np.int64))
    targets = np.fromiter((t for ts in adjacency for t in ts), dtype=np.int64,
                          count=int(out_degree.sum()))
    dangling = out_degree == 0
    safe_degree = np.where(dangling, 1.0, out_degree)

    def step(x: np.ndarray) -> np.ndarray:
        incoming = np.bincount(targets, weights=(x / safe_degree)[sources], minlength=n)
        return (1.0 - damping) / n + damping * (incoming + x[dangling].sum() / n)

    return _iterate(step, n, tolerance, max_iterations)


def _iterate(step: Callable[[np.ndarray], np.ndarray], n: int, tolerance: float,
             max_iterations: int) -> PageRankResult:
    x = uniform_ranks(n)
    delta = float("inf")
    iterations = 0
    while iterations < max_iterations:
        new = step(x)
        delta = float(np.abs(new - x).sum())
        x = new
        iterations += 1
        if delta < tolerance:
            break
    return PageRankResult(ranks=x, iterations=iterations, delta=delta)
