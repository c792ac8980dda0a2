"""PageRank benchmark: Nimbus's in-memory engine against scipy power iteration.

    .venv/bin/python -m benchmarks.pagerank [--nodes 1000000] [--mr-nodes 20000]

Generates a seeded power-law web graph (default 1M pages, ~10M edges): each
edge's source is uniform over the pages that have out-links (10 % of pages
are dangling), its target is drawn with odds falling as rank^-0.9 over a
random order of the pages, which gives in-degrees a power-law tail of
exponent ~2.1, the web's (Broder et al., "Graph structure in the web", 2000).
Edges are deduplicated and self-links dropped, as MRLinkGraph does.

Then, in the same run, float64, damping 0.85, L1 tolerance 1e-8 (the
defaults), the same update and dangling rule everywhere:

* scipy-csr (the peer): a plain scipy power iteration, ``P @ x`` with the
  transition matrix as a CSR matrix, the textbook layout;
* nimbus: ``services.ranking.pagerank.pagerank_edges``, the memory engine;
* numpy-bincount: the memory engine in pure numpy (``np.bincount`` scatter), without scipy;
* mrjob: ``services.indexing.pagerank_driver.run_pagerank`` (one MRPageRankStep job per
  iteration) on a smaller graph of the same kind, ``--mr-nodes`` pages, for
  ``--mr-iterations`` iterations on ``--mr-runner`` (local by default, as
  ``nimbus index`` runs), because it is orders of magnitude slower.

Seconds per iteration come from two runs of each engine: to convergence, and
a single iteration; their difference over the extra iterations excludes the
setup (building the matrix), reported apart. Best of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from scipy import sparse

from services.config import Settings
from services.indexing.pagerank_driver import run_pagerank
from services.indexing.runner import write_rows
from services.ranking.pagerank import PageRankResult, _iterate, edge_arrays, pagerank_edges

DAMPING = 0.85
TOLERANCE = 1e-8
MAX_ITERATIONS = 100
Engine = Callable[[np.ndarray, np.ndarray, int, int], PageRankResult]


def power_law_graph(
    nodes: int, edges_per_node: float, seed: int = 42, dangling_share: float = 0.1, exponent: float = 0.9
) -> tuple[np.ndarray, np.ndarray]:
    """(sources, targets) int64, sorted by source, deduplicated, no self-links."""
    rng = np.random.default_rng(seed)
    draws = int(nodes * edges_per_node)
    # Inverse CDF of the continuous density ~ k^-exponent on [1, nodes + 1).
    top = (nodes + 1) ** (1 - exponent) - 1
    ranks = np.floor((top * rng.random(draws) + 1) ** (1 / (1 - exponent))).astype(np.int64) - 1
    targets = rng.permutation(nodes)[np.minimum(ranks, nodes - 1)]
    linking = np.flatnonzero(rng.random(nodes) >= dangling_share)
    sources = linking[rng.integers(0, linking.size, draws)]
    # Sort-based dedup: np.unique is many times slower on int64 keys (docs/performance-notes.md).
    keys = np.sort(sources * nodes + targets)
    keys = keys[np.concatenate(([True], keys[1:] != keys[:-1]))]
    sources, targets = keys // nodes, keys % nodes
    keep = sources != targets
    return sources[keep], targets[keep]


def scipy_csr(sources: np.ndarray, targets: np.ndarray, n: int, iterations: int) -> PageRankResult:
    """The peer: what a scipy user writes (CSR transition matrix, one mat-vec a step)."""
    out_degree = np.bincount(sources, minlength=n)
    dangling = out_degree == 0
    matrix = sparse.csr_array((1.0 / out_degree[sources], (targets, sources)), shape=(n, n))

    def step(x: np.ndarray) -> np.ndarray:
        return DAMPING * (matrix @ x + x[dangling].sum() / n) + (1.0 - DAMPING) / n

    return _iterate(step, n, TOLERANCE, iterations)


def numpy_bincount(sources: np.ndarray, targets: np.ndarray, n: int, iterations: int) -> PageRankResult:
    """The memory engine in pure numpy: gather shares, scatter with ``np.bincount``."""
    out_degree = np.bincount(sources, minlength=n).astype(np.float64)
    dangling = out_degree == 0
    safe_degree = np.where(dangling, 1.0, out_degree)

    def step(x: np.ndarray) -> np.ndarray:
        incoming = np.bincount(targets, weights=(x / safe_degree)[sources], minlength=n)
        return (1.0 - DAMPING) / n + DAMPING * (incoming + x[dangling].sum() / n)

    return _iterate(step, n, TOLERANCE, iterations)


def nimbus(sources: np.ndarray, targets: np.ndarray, n: int, iterations: int) -> PageRankResult:
    return pagerank_edges(sources, targets, n, DAMPING, TOLERANCE, iterations)


def measure(
    engine: Engine, sources: np.ndarray, targets: np.ndarray, n: int, repeat: int
) -> tuple[PageRankResult, float, float]:
    """(converged result, seconds per iteration, setup seconds), best of ``repeat``."""
    full = one = float("inf")
    result = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = engine(sources, targets, n, MAX_ITERATIONS)
        full = min(full, time.perf_counter() - start)
        start = time.perf_counter()
        engine(sources, targets, n, 1)
        one = min(one, time.perf_counter() - start)
    assert result is not None
    per_iteration = (full - one) / max(result.iterations - 1, 1)
    return result, per_iteration, one - per_iteration


def measure_mrjob(nodes: int, edges_per_node: float, iterations: int, runner: str) -> tuple[int, float]:
    """(edges, seconds per iteration) of run_pagerank on a ``nodes``-page graph."""
    sources, targets = power_law_graph(nodes, edges_per_node, seed=7)
    bounds = np.searchsorted(sources, np.arange(nodes + 1))
    with tempfile.TemporaryDirectory() as tmp:
        links = Path(tmp) / "links.jsonl"
        write_rows(
            links, ((page, targets[bounds[page] : bounds[page + 1]].tolist()) for page in range(nodes))
        )
        settings = Settings.of(
            mr_runner=runner, var_dir=Path(tmp), pagerank_tolerance=0.0, pagerank_max_iterations=iterations
        )
        start = time.perf_counter()
        result = run_pagerank(links, nodes, settings, Path(tmp) / "pr")
        seconds = time.perf_counter() - start
    reference = pagerank_edges(sources, targets, nodes, DAMPING, 0.0, iterations)
    if np.abs(result.ranks - reference.ranks).max() > 1e-12:
        raise AssertionError("the mrjob engine and the memory engine disagree")
    return sources.size, seconds / result.iterations


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="PageRank benchmark")
    p.add_argument("--nodes", type=int, default=1_000_000, help="pages in the big graph")
    p.add_argument(
        "--edges-per-node",
        type=float,
        default=10.0,
        help="edges drawn per page before dedup (~10 %% of pages are dangling)",
    )
    p.add_argument("--repeat", type=int, default=3, help="runs per engine; the best counts")
    p.add_argument("--mr-nodes", type=int, default=20_000, help="pages for the mrjob engine")
    p.add_argument("--mr-iterations", type=int, default=2)
    p.add_argument("--mr-runner", choices=["inline", "local"], default="local")
    p.add_argument("--skip-mrjob", action="store_true")
    args = p.parse_args(argv)

    start = time.perf_counter()
    sources, targets = power_law_graph(args.nodes, args.edges_per_node)
    n = args.nodes
    in_degree = np.bincount(targets, minlength=n)
    dangling = int((np.bincount(sources, minlength=n) == 0).sum())
    print(
        f"graph: {n:,} pages, {sources.size:,} edges, {dangling:,} dangling, max in-degree "
        f"{in_degree.max():,} (generated in {time.perf_counter() - start:.1f} s)",
        flush=True,
    )

    rows = []
    results = {}
    for name, engine in [("scipy-csr", scipy_csr), ("nimbus", nimbus), ("numpy-bincount", numpy_bincount)]:
        result, per_iteration, setup = measure(engine, sources, targets, n, args.repeat)
        results[name] = result
        rows.append((name, result.iterations, result.delta, per_iteration, setup))
        print(
            f"  {name:<15} {result.iterations:3d} iterations (L1 change {result.delta:.2g}), "
            f"{per_iteration * 1e3:6.1f} ms/iteration, setup {setup:.2f} s",
            flush=True,
        )
    for name in ("nimbus", "numpy-bincount"):
        diff = np.abs(results[name].ranks - results["scipy-csr"].ranks).max()
        if diff > 1e-12:
            raise AssertionError(f"{name} and scipy-csr disagree by {diff:.3g}")

    peer = rows[0][3]
    print("\nengine           ms/iteration   vs scipy-csr")
    for name, _iterations, _delta, per_iteration, _setup in rows:
        print(f"{name:<16} {per_iteration * 1e3:12.1f}   {per_iteration / peer:8.2f}x")
    print("(goal, issue 5: nimbus <= 2x scipy-csr; all vectors agree within 1e-12)")

    # What build.py hands the memory engine: a list of Python lists per page.
    bounds = np.searchsorted(sources, np.arange(n + 1))
    adjacency = [targets[bounds[i] : bounds[i + 1]].tolist() for i in range(n)]
    start = time.perf_counter()
    edge_arrays(adjacency)
    print(
        f"\nedge_arrays (adjacency lists -> edge arrays, pagerank_sparse's extra step): "
        f"{time.perf_counter() - start:.2f} s"
    )
    del adjacency

    if not args.skip_mrjob:
        edges, per_iteration = measure_mrjob(
            args.mr_nodes, args.edges_per_node, args.mr_iterations, args.mr_runner
        )
        nimbus_per_edge = rows[1][3] / sources.size
        print(
            f"\nmrjob engine ({args.mr_runner} runner): {args.mr_nodes:,} pages, {edges:,} edges, "
            f"{per_iteration:.2f} s/iteration = {per_iteration / edges * 1e6:.2f} us/edge "
            f"(nimbus memory engine: {nimbus_per_edge * 1e9:.1f} ns/edge, "
            f"{per_iteration / edges / nimbus_per_edge:,.0f}x less)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
