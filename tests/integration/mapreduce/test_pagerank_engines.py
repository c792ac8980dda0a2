"""The two PageRank engines on one seeded random graph: the in-memory engine
(``pagerank_sparse`` / ``pagerank_edges``) and the mrjob engine
(``run_pagerank``, one MRPageRankStep job per iteration) give the same vector,
the same convergence report, and networkx's answer; and the build prints the
convergence report whichever engine it ran.

(test_mr_index_job.py checks the mrjob driver on hand-made 4- and 11-node graphs;
this file adds a 200-node graph with hubs and dangling pages, and the engines
side by side.)
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from services.config import Settings
from services.indexing.build import build_index
from services.indexing.pagerank_driver import run_pagerank
from services.indexing.runner import write_rows
from services.ranking.pagerank import edge_arrays, pagerank_edges, pagerank_sparse
from services.storage.blobs.blobstore import open_blobstore
from tests.networkx_reference import networkx_pagerank

N = 200


def random_graph(seed: int = 5) -> list[list[int]]:
    """~15 % dangling pages; the others link to 1-7 distinct pages drawn with odds
    falling as 1/(page+1): a few hubs collect most links, as on the web."""
    rng = np.random.default_rng(seed)
    odds = 1.0 / np.arange(1, N + 1)
    odds /= odds.sum()
    adjacency: list[list[int]] = []
    for page in range(N):
        if rng.random() < 0.15:
            adjacency.append([])
            continue
        targets = rng.choice(N, size=int(rng.integers(1, 8)), replace=False, p=odds)
        adjacency.append(sorted(int(t) for t in targets if t != page))
    return adjacency


GRAPH = random_graph()


def write_link_graph(path: Path, adjacency: list[list[int]]) -> Path:
    """The link graph job's output rows; every third dangling page is left out, as a
    document the job read no record for (the driver must still rank it)."""
    dangling = [page for page, targets in enumerate(adjacency) if not targets]
    missing = set(dangling[::3])
    write_rows(path, ((page, targets) for page, targets in enumerate(adjacency) if page not in missing))
    return path


def test_the_graph_has_hubs_and_dangling_pages() -> None:
    in_degree = np.bincount([t for ts in GRAPH for t in ts], minlength=N)
    assert 20 <= sum(not ts for ts in GRAPH) <= 45
    assert in_degree.max() >= 40 and (in_degree == 0).sum() >= 20


def test_memory_and_mapreduce_engines_agree_with_networkx(settings: Settings, tmp_path: Path) -> None:
    tuned = settings.with_overrides(pagerank_tolerance=1e-10, pagerank_max_iterations=300)
    d, tol, cap = (
        tuned.index.pagerank_damping,
        tuned.index.pagerank_tolerance,
        tuned.index.pagerank_max_iterations,
    )
    memory = pagerank_sparse(GRAPH, d, tol, cap)
    sources, targets = edge_arrays(GRAPH)
    shuffled = np.random.default_rng(2).permutation(sources.size)  # edge order is irrelevant
    from_edges = pagerank_edges(sources[shuffled], targets[shuffled], N, d, tol, cap)
    lines: list[str] = []
    mapreduce = run_pagerank(
        write_link_graph(tmp_path / "links.jsonl", GRAPH), N, tuned, tmp_path / "pr", progress=lines.append
    )

    assert np.abs(mapreduce.ranks - memory.ranks).max() <= 1e-6
    assert np.abs(mapreduce.ranks - memory.ranks).max() <= 1e-14  # in fact: the same sums
    assert np.abs(from_edges.ranks - memory.ranks).max() <= 1e-15
    expected = networkx_pagerank(GRAPH, d, tol=1e-14)
    for result in (memory, mapreduce):
        assert np.abs(result.ranks - expected).max() <= 1e-9
        assert result.ranks.sum() == pytest.approx(1.0, abs=1e-12)
        assert result.delta < tol < result.delta * 10  # stopped at the first change below tol
    # Both engines report convergence the same way: iterations and final L1 change.
    assert mapreduce.iterations == memory.iterations == from_edges.iterations
    assert 20 < memory.iterations < cap
    assert mapreduce.delta == pytest.approx(memory.delta, rel=1e-6)
    assert len(lines) == mapreduce.iterations
    assert lines[-1] == f"pagerank iteration {mapreduce.iterations}: L1 change {mapreduce.delta:.3g}"


def test_mapreduce_engine_on_the_local_runner_equals_memory_iterations(
    settings: Settings, tmp_path: Path
) -> None:
    """Two MRPageRankStep jobs in task subprocesses (``-r local``): a few seconds."""
    local = settings.with_overrides(mr_runner="local", pagerank_tolerance=1e-30, pagerank_max_iterations=2)
    result = run_pagerank(write_link_graph(tmp_path / "links.jsonl", GRAPH), N, local, tmp_path / "pr")
    reference = pagerank_sparse(GRAPH, local.index.pagerank_damping, 1e-30, 2)
    assert result.iterations == reference.iterations == 2
    assert np.abs(result.ranks - reference.ranks).max() <= 1e-15
    assert result.delta == pytest.approx(reference.delta, rel=1e-12)


# Page a links to b and c, b to c, c to a; d has no out-links.
PAGES = [
    [
        {"url": "http://a.test/", "links": ["http://b.test/", "http://c.test/"]},
        {"url": "http://b.test/", "links": ["http://c.test/"]},
        {"url": "http://c.test/", "links": ["http://a.test/"]},
        {"url": "http://d.test/"},
    ]
]


@pytest.mark.parametrize("engine", ["memory", "mapreduce"])
def test_build_prints_the_convergence_report(
    settings: Settings, engine: str, corpus_writer: Callable[..., list], capsys: pytest.CaptureFixture[str]
) -> None:
    corpus_writer(open_blobstore(settings.blob_url), settings.database_url, PAGES)
    tuned = settings.with_overrides(pagerank_engine=engine, pagerank_tolerance=1e-9)
    result = build_index(tuned)
    err = capsys.readouterr().err
    assert f"3/4 pagerank ({engine}," in err
    report = re.search(r"(\d+) iterations, L1 change (\S+)\n", err)
    assert report, err
    assert int(report[1]) == result.pagerank_iterations > 1
    assert float(report[2]) == pytest.approx(result.pagerank_delta, rel=1e-2)
    assert result.pagerank_delta < tuned.index.pagerank_tolerance
