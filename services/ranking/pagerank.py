"""PageRank math: the update rule the MapReduce step applies, and an in-memory
reference that cross-checks it.

The model (Brin and Page, with the usual fix for pages without out-links)::

    x'_j = (1 - d) / N  +  d * ( sum_{i -> j} x_i / outdeg(i)  +  D / N )

where ``D`` is the dangling mass: the total rank of pages with no out-links,
spread uniformly over all N pages (as if a dangling page linked to every
page, without materialising N edges per dangling page). The teleport term
``(1 - d) / N`` is uniform too, so ``x'`` sums to 1 whenever ``x`` does.

The graph is an adjacency list indexed by doc_num: ``adjacency[i]`` holds the
distinct targets of page ``i`` (no self-links: see ``mapreduce.mr_linkgraph``);
``pagerank_edges`` takes the same graph as two edge arrays (what the in-memory
engine runs on at scale), and ``host_pagerank_edges`` ranks hosts instead of
pages (``NIMBUS_PAGERANK_LEVEL=host``). Convergence is measured as the L1
change between successive vectors; the MapReduce driver and the reference use
the same rule and report the same (iterations, delta).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain

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


def pagerank_dense(
    adjacency: Adjacency, damping: float, tolerance: float, max_iterations: int
) -> PageRankResult:
    """Power iteration with the dense Google matrix: O(N^2), the obviously-right version."""
    matrix = google_matrix(adjacency, damping)
    return _iterate(lambda x: matrix @ x, len(adjacency), tolerance, max_iterations)


def pagerank_sparse(
    adjacency: Adjacency, damping: float, tolerance: float, max_iterations: int
) -> PageRankResult:
    """Power iteration over the adjacency list: ``pagerank_edges`` on its edge arrays."""
    sources, targets = edge_arrays(adjacency)
    return pagerank_edges(sources, targets, len(adjacency), damping, tolerance, max_iterations)


def edge_arrays(adjacency: Adjacency) -> tuple[np.ndarray, np.ndarray]:
    """(sources, targets) int64 arrays of an adjacency list, edges in list order.

    ``itertools.chain`` feeds ``np.fromiter`` from C, so 10M edges take no
    Python-level loop over the edges (one ``len`` per page)."""
    n = len(adjacency)
    out_degree = np.fromiter(map(len, adjacency), dtype=np.int64, count=n)
    sources = np.repeat(np.arange(n, dtype=np.int64), out_degree)
    targets = np.fromiter(chain.from_iterable(adjacency), dtype=np.int64, count=int(out_degree.sum()))
    return sources, targets


def pagerank_edges(
    sources: np.ndarray, targets: np.ndarray, n: int, damping: float, tolerance: float, max_iterations: int
) -> PageRankResult:
    """Power iteration over edge arrays (edge k is ``sources[k] -> targets[k]``), pages 0..n-1.

    Exactly the update MRPageRankStep applies to the same edges: a page sends
    ``rank / outdeg`` along each edge, pages without edges are dangling. Edges
    are taken as given, as the job takes its adjacency rows: a repeated edge
    counts twice and a self-link is an edge (``mapreduce.mr_linkgraph`` has
    already removed both; ``host_pagerank_edges`` removes them itself).

    The transition matrix ``P[target, source] = 1 / outdeg(source)`` is built
    once as a scipy CSC matrix (int32 indices while they fit), so an iteration
    is one sparse mat-vec in C plus O(N) vector work, about twice as fast as a
    numpy ``bincount`` scatter. CSC rather than CSR: the mat-vec then reads ``x``
    in order and scatters into the few hot targets of a power-law graph,
    which caches better than CSR's random gathers from ``x``. Both timings:
    docs/benchmarks.md (PageRank).
    """
    from scipy import sparse  # here, not at the top: the mrjob tasks import this module too

    sources = np.asarray(sources)
    targets = np.asarray(targets)
    if sources.shape != targets.shape or sources.ndim != 1:
        raise ValueError(
            f"edge arrays must be 1-D and of one length, got {sources.shape} and {targets.shape}"
        )
    if n <= 0:
        raise ValueError("PageRank needs at least one document")
    for name, ends in (("source", sources), ("target", targets)):
        if ends.size and (ends.min() < 0 or ends.max() >= n):
            raise ValueError(f"an edge {name} lies outside 0..{n - 1}: the edges and the page count disagree")
    index = np.int32 if n < 2**31 and sources.size < 2**31 else np.int64
    sources = sources.astype(index, copy=False)
    targets = targets.astype(index, copy=False)
    out_degree = np.bincount(sources, minlength=n)
    dangling = np.flatnonzero(out_degree == 0)
    # Duplicate (target, source) entries are summed: the job sends one share per edge.
    matrix = sparse.csc_array((1.0 / out_degree[sources], (targets, sources)), shape=(n, n))
    teleport = (1.0 - damping) / n

    def step(x: np.ndarray) -> np.ndarray:
        new: np.ndarray = matrix @ x
        new += x[dangling].sum() / n
        new *= damping
        new += teleport
        return new

    return _iterate(step, n, tolerance, max_iterations)


def host_pagerank(
    adjacency: Adjacency,
    doc_hosts: np.ndarray,
    num_hosts: int,
    damping: float,
    tolerance: float,
    max_iterations: int,
) -> PageRankResult:
    """``host_pagerank_edges`` over an adjacency list of pages."""
    sources, targets = edge_arrays(adjacency)
    return host_pagerank_edges(sources, targets, doc_hosts, num_hosts, damping, tolerance, max_iterations)


def host_pagerank_edges(
    sources: np.ndarray,
    targets: np.ndarray,
    doc_hosts: np.ndarray,
    num_hosts: int,
    damping: float,
    tolerance: float,
    max_iterations: int,
) -> PageRankResult:
    """PageRank of the host graph, shared out over each host's pages.

    ``doc_hosts[doc]`` is the host id (0..num_hosts-1) of each page; the
    page edges are collapsed to host -> host edges, deduplicated, without
    links inside a host, and PageRank (same damping, uniform teleport and
    dangling rule, over hosts) runs on that graph. Each page then gets
    ``host_rank / pages_of_host``.

    Why: on the page graph a site votes for itself. Navigation menus, index
    pages and a wiki's "all articles" list make every page of a big site
    link to every other, and that mass stays on the site however few other
    sites cite it (the same lever a link farm pulls). On the host graph a
    site's own links do not count and a site that links to another a
    thousand times casts one vote, so a host's rank says how much *other*
    sites point at it (the host graph of Bharat et al., "Who links to whom",
    ICDM 2001). Dividing by the page count keeps the page vector summing to
    1, so the search prior ``N * PR`` still averages 1 (docs/ranking.md);
    the price is that pages of one host tie on PageRank (text decides
    between them) and a host's rank is spread thinner the more pages it has.

    ``iterations`` and ``delta`` are the host run's. The L1 change is also
    the page vector's: each host's change is split over its pages and summed
    back. Every host id must have at least one page.
    """
    doc_hosts = np.asarray(doc_hosts)
    if doc_hosts.ndim != 1 or not np.issubdtype(doc_hosts.dtype, np.integer):
        raise ValueError("doc_hosts must be a 1-D integer array: the host id of each page")
    if doc_hosts.size and (doc_hosts.min() < 0 or doc_hosts.max() >= num_hosts):
        raise ValueError(f"a host id lies outside 0..{num_hosts - 1}")
    pages = np.bincount(doc_hosts, minlength=num_hosts)
    if num_hosts <= 0 or (pages == 0).any():
        raise ValueError(
            "every host id 0..num_hosts-1 needs at least one page: number the hosts of the documents densely"
        )
    sources = np.asarray(sources)
    targets = np.asarray(targets)
    if sources.shape != targets.shape:
        raise ValueError("sources and targets must be of one length")
    if sources.size and (
        min(sources.min(), targets.min()) < 0 or max(sources.max(), targets.max()) >= doc_hosts.size
    ):
        raise ValueError(
            f"an edge names a page outside 0..{doc_hosts.size - 1}: the edges and doc_hosts disagree"
        )
    host_sources = doc_hosts[sources].astype(np.int64)
    host_targets = doc_hosts[targets].astype(np.int64)
    across = host_sources != host_targets
    # Sort, then keep first occurrences: np.unique is many times slower on int64 keys
    # (docs/performance-notes.md).
    keys = np.sort(host_sources[across] * num_hosts + host_targets[across])
    keys = keys[np.concatenate(([True], keys[1:] != keys[:-1]))] if keys.size else keys
    hosts = pagerank_edges(keys // num_hosts, keys % num_hosts, num_hosts, damping, tolerance, max_iterations)
    ranks = hosts.ranks[doc_hosts] / pages[doc_hosts]
    return PageRankResult(ranks=ranks, iterations=hosts.iterations, delta=hosts.delta)


def _iterate(
    step: Callable[[np.ndarray], np.ndarray], n: int, tolerance: float, max_iterations: int
) -> PageRankResult:
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
