"""networkx.pagerank as the reference the PageRank tests (unit and integration) compare against."""

from __future__ import annotations

import networkx as nx
import numpy as np


def networkx_pagerank(adjacency: list[list[int]], damping: float, tol: float = 1e-13) -> np.ndarray:
    """PageRank of the graph ``adjacency[source] = [targets]``, every index a node."""
    graph = nx.DiGraph()
    graph.add_nodes_from(range(len(adjacency)))
    graph.add_edges_from((s, t) for s, ts in enumerate(adjacency) for t in ts)
    ranks = nx.pagerank(graph, alpha=damping, tol=tol, max_iter=10_000)
    return np.array([ranks[i] for i in range(len(adjacency))])
