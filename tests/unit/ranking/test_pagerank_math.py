"""PageRank math against a hand-computed graph and networkx."""

from __future__ import annotations

from collections.abc import Callable

import networkx as nx
import numpy as np
import pytest

# networkx.pagerank (scipy-backed) is an implementation independent of ours,
# with the same dangling rule (uniform).
from services.ranking.pagerank import (
    PageRankResult,
    adjacency_from_mapping,
    contributions,
    edge_arrays,
    google_matrix,
    host_pagerank,
    host_pagerank_edges,
    pagerank_dense,
    pagerank_edges,
    pagerank_sparse,
    uniform_ranks,
    updated_rank,
)
from tests.networkx_reference import networkx_pagerank

D = 0.85

# 0 -> 1, 0 -> 2, 1 -> 2, 2 -> 0; 3 has no out-links (dangling), nobody links to 3.
FOUR = [[1, 2], [2], [0], []]

# One iteration from x = 1/4 each, by hand:
#   teleport (1-d)/N = 0.15/4 = 0.0375; dangling mass D = x3 = 0.25,
#   spread d*D/N = 0.85*0.25/4 = 0.053125; so every page starts at 0.090625.
#   in(0) = x2/1 = 0.25            -> 0.090625 + 0.85*0.25  = 0.303125
#   in(1) = x0/2 = 0.125           -> 0.090625 + 0.85*0.125 = 0.196875
#   in(2) = x0/2 + x1/1 = 0.375    -> 0.090625 + 0.85*0.375 = 0.409375
#   in(3) = 0                      -> 0.090625
#   (sum = 1.0)
FOUR_ONE_STEP = [0.303125, 0.196875, 0.409375, 0.090625]

# The fixed point, by hand (d = 17/20, N = 4):
#   x3 = 0.0375 + 0.2125*x3  =>  x3 = 0.0375/0.7875 = 1/21 =: b (b is also every
#        page's base: 0.0375 + 0.2125*x3 = x3)
#   x1 = b + (17/40) x0
#   x2 = b + (17/40) x0 + (17/20) x1 = (37/20) b + (629/800) x0
#   x0 = b + (17/20) x2 = (1029/400) b + (10693/16000) x0
#      => x0 = b * (1029/400) / (5307/16000) = b * 41160/5307 = 1960/5307 = 13720/37149
#   x1 = 1/21 + 833/5307 = 1769/37149 + 5831/37149 = 7600/37149
#   x2 = (20/17)(x0 - b) = (20/17)(11951/37149) = 14060/37149
#   x3 = 1769/37149;  13720 + 7600 + 14060 + 1769 = 37149, so the sum is 1.
FOUR_FIXED_POINT = np.array([13720, 7600, 14060, 1769]) / 37149

# Ten pages; 3, 7 and 9 are dangling, 8 is linked to but links only to a dangling page.
TEN = {0: [1, 2, 3], 1: [2], 2: [0, 4], 4: [5, 6], 5: [0, 7], 6: [4, 8], 8: [9]}


def one_step(adjacency: list[list[int]], x: np.ndarray) -> np.ndarray:
    """The MapReduce step's arithmetic, in a loop: shares, then the update."""
    n = len(adjacency)
    dangling = sum(x[i] for i in range(n) if not adjacency[i])
    incoming = np.zeros(n)
    for source, targets in enumerate(adjacency):
        for target, share in contributions(x[source], targets):
            incoming[target] += share
    return np.array([updated_rank(incoming[j], n, D, dangling) for j in range(n)])


def test_one_step_matches_hand_arithmetic() -> None:
    assert one_step(FOUR, uniform_ranks(4)) == pytest.approx(FOUR_ONE_STEP, abs=1e-15)
    assert google_matrix(FOUR, D) @ uniform_ranks(4) == pytest.approx(FOUR_ONE_STEP, abs=1e-15)


@pytest.mark.parametrize("method", [pagerank_dense, pagerank_sparse])
def test_four_node_fixed_point(method: Callable[..., PageRankResult]) -> None:
    result = method(FOUR, D, 1e-14, 1000)
    assert result.ranks == pytest.approx(FOUR_FIXED_POINT, abs=1e-12)
    assert result.delta < 1e-14
    assert 1 < result.iterations < 1000


def test_ten_nodes_with_dangling_pages_match_networkx() -> None:
    adjacency = adjacency_from_mapping(TEN, 10)
    expected = networkx_pagerank(adjacency, D)
    for method in (pagerank_dense, pagerank_sparse):
        result = method(adjacency, D, 1e-12, 1000)
        assert np.abs(result.ranks - expected).max() < 1e-6
        assert result.ranks.sum() == pytest.approx(1.0, abs=1e-12)
    # The step helpers the job uses give the same vector.
    x = uniform_ranks(10)
    for _ in range(200):
        x = one_step(adjacency, x)
    assert np.abs(x - expected).max() < 1e-6


def test_iteration_stops_at_the_limit_and_reports_the_last_change() -> None:
    result = pagerank_sparse(FOUR, D, 0.0, 3)
    assert result.iterations == 3
    second = pagerank_sparse(FOUR, D, 0.0, 2).ranks
    assert result.delta == pytest.approx(np.abs(result.ranks - second).sum())


def test_dangling_page_shares_nothing_and_graph_helpers_validate() -> None:
    assert list(contributions(0.5, [])) == []
    assert list(contributions(0.5, [3, 4])) == [(3, 0.25), (4, 0.25)]
    assert adjacency_from_mapping({1: [2, 2, 0]}, 3) == [[], [0, 2], []]
    with pytest.raises(ValueError, match="at least one document"):
        uniform_ranks(0)


def test_edges_take_the_job_arithmetic_for_repeated_edges_and_self_links() -> None:
    # The link graph never emits these, but if a list held them the job would send one
    # share per listed edge; the edge engine must do the same, not silently dedup.
    adjacency = [[1, 1, 2], [1, 0], [], [0, 2, 3]]
    x = uniform_ranks(4)
    for _ in range(5):
        x = one_step(adjacency, x)
    sources, targets = edge_arrays(adjacency)
    assert sources.tolist() == [0, 0, 0, 1, 1, 3, 3, 3]
    assert targets.tolist() == [1, 1, 2, 1, 0, 0, 2, 3]
    result = pagerank_edges(sources.astype(np.int32), targets.astype(np.int32), 4, D, 0.0, 5)
    assert result.ranks == pytest.approx(x, abs=1e-15)
    assert result.iterations == 5


def test_edges_validate_their_input() -> None:
    with pytest.raises(ValueError, match="outside 0..2"):
        pagerank_edges(np.array([0, 1]), np.array([1, 3]), 3, D, 1e-8, 10)
    with pytest.raises(ValueError, match="one length"):
        pagerank_edges(np.array([0, 1]), np.array([1]), 3, D, 1e-8, 10)
    with pytest.raises(ValueError, match="at least one document"):
        pagerank_edges(np.array([], dtype=int), np.array([], dtype=int), 0, D, 1e-8, 10)
    no_edges = pagerank_edges(np.array([], dtype=int), np.array([], dtype=int), 3, D, 1e-12, 10)
    assert no_edges.ranks == pytest.approx([1 / 3] * 3) and no_edges.iterations == 1


# Nine pages on four hosts. Host 0 (pages 0-2) links around inside itself; its three
# links to host 1 are one host edge. Host 3 (pages 7, 8) links only inside itself: a
# dangling host. Host edges: 0->1, 1->0, 1->2, 2->0, 2->3.
HOST_OF = np.array([0, 0, 0, 1, 1, 2, 2, 3, 3])
HOSTED = {0: [1, 3], 1: [2, 3], 2: [0, 4], 3: [5], 4: [0], 5: [6], 6: [0, 7], 7: [8]}


def test_host_pagerank_is_networkx_on_the_host_graph_shared_over_pages() -> None:
    hosts = nx.DiGraph()
    hosts.add_nodes_from(range(4))
    hosts.add_edges_from(
        (HOST_OF[s], HOST_OF[t]) for s, ts in HOSTED.items() for t in ts if HOST_OF[s] != HOST_OF[t]
    )
    assert sorted(hosts.edges) == [(0, 1), (1, 0), (1, 2), (2, 0), (2, 3)]
    host_ranks = nx.pagerank(hosts, alpha=D, tol=1e-13, max_iter=10_000)
    pages = np.bincount(HOST_OF)
    expected = np.array([host_ranks[h] / pages[h] for h in HOST_OF])

    adjacency = adjacency_from_mapping(HOSTED, 9)
    result = host_pagerank(adjacency, HOST_OF, 4, D, 1e-12, 1000)
    assert np.abs(result.ranks - expected).max() < 1e-9
    assert result.ranks.sum() == pytest.approx(1.0, abs=1e-12)
    assert result.delta < 1e-12 and 1 < result.iterations < 1000
    # The same from edge arrays, in any order, with repeats and same-host links added.
    sources, targets = edge_arrays(adjacency)
    order = np.random.default_rng(1).permutation(sources.size)
    sources = np.concatenate([sources[order], [0, 0, 8]])
    targets = np.concatenate([targets[order], [3, 2, 7]])
    again = host_pagerank_edges(sources, targets, HOST_OF, 4, D, 1e-12, 1000)
    assert again.ranks == pytest.approx(result.ranks, abs=1e-15)
    assert again.iterations == result.iterations


def test_host_pagerank_needs_dense_host_ids() -> None:
    adjacency = adjacency_from_mapping(HOSTED, 9)
    with pytest.raises(ValueError, match="at least one page"):
        host_pagerank(adjacency, HOST_OF, 5, D, 1e-8, 100)
    with pytest.raises(ValueError, match="outside 0..2"):
        host_pagerank(adjacency, HOST_OF, 3, D, 1e-8, 100)
    with pytest.raises(ValueError, match="edges and doc_hosts disagree"):
        host_pagerank(adjacency, HOST_OF[:8], 4, D, 1e-8, 100)
