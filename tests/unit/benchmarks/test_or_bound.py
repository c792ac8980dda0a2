"""The OR bound's exhaustive pass ranks and counts as numpy does, and leaves its tables zero."""

from __future__ import annotations

import numpy as np

from benchmarks.or_bound import exhaustive_top_k


def test_every_posting_scored_gives_numpys_top_k_and_count() -> None:
    rng = np.random.default_rng(31)
    num_docs = 400
    acc, seen = np.zeros(num_docs), np.zeros(num_docs, dtype=np.bool_)
    touched = np.zeros(num_docs, dtype=np.int64)
    for _ in range(20):
        lists = [np.sort(rng.choice(num_docs, int(rng.integers(1, 120)), replace=False)) for _ in range(3)]
        impacts = [rng.random(d.shape[0]) for d in lists]
        weights = rng.random(3) + 0.5
        prior = rng.random(num_docs) * 0.1
        visible = rng.random(num_docs) < 0.7
        starts = np.concatenate([[0], np.cumsum([d.shape[0] for d in lists])]).astype(np.int64)
        docs, scores, count = exhaustive_top_k(
            np.concatenate(lists).astype(np.int64), np.concatenate(impacts), starts, weights,
            prior, visible, acc, seen, touched, 10,
        )  # fmt: skip
        want = np.zeros(num_docs)
        for w, d, m in zip(weights, lists, impacts, strict=True):
            want[d] += w * m
        matched = np.flatnonzero(np.isin(np.arange(num_docs), np.concatenate(lists)) & visible)
        total = want[matched] + prior[matched]
        order = np.argsort(-total, kind="stable")[:10]
        assert count == matched.shape[0]
        assert set(docs[docs >= 0].tolist()) == set(matched[order].tolist())
        assert np.allclose(np.sort(scores[docs >= 0]), np.sort(total[order]))
        assert not acc.any() and not seen.any()
