"""The OR kernel against a bound: every posting of the query's lists scored, term at a time,
from lists decoded beforehand (decoding free, as a SIMD block format would nearly make it).

    .venv/bin/python -m benchmarks.or_bound [--passes 7] [--distinct]

On the ``benchmarks.index`` corpus's published Nimbus state (``var/bench``: run it first, with
``--distinct`` for that corpus: the state is the last one ``benchmarks.index`` built),
each query with ``OR`` between its words, top 10, no feedback: the block-max kernel as search
calls it (``rank.top_k_or``) and ``exhaustive_top_k`` over the same lists, each call's figure
the fastest of ``--passes``, their top 10s compared. If the bound's tail is no faster than the
kernel's, no posting format that only makes decoding cheaper closes a gap to tantivy on
these queries: the pruning already skips more than decoding would save (docs/benchmarks.md,
stop 48). On the ``--distinct`` corpus it is the other way (stop 49).
"""

from __future__ import annotations

import argparse
import time
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from numba import njit

from benchmarks.index import load_queries

STATE = Path("var/bench/nimbus-state")
CORPUS = Path("var/bench/corpus-100000")
DISTINCT = Path("var/bench/corpus-100000-distinct")  # benchmarks.index --distinct


@njit(cache=True, nogil=True)
def exhaustive_top_k(docs, impacts, starts, weights, prior, visible, acc, seen, touched, k):  # type: ignore[no-untyped-def]
    """(the ``k`` best documents, their scores, the visible documents matched): every posting
    of list l (``starts[l]`` to ``starts[l + 1]`` of ``docs``/``impacts``) added at
    ``weights[l]`` into ``acc``, then the touched documents' scores plus ``prior`` ranked.
    ``acc``, ``seen`` (one per document) are left as they were given: zero."""
    n_touched = 0
    for lst in range(weights.shape[0]):
        w = weights[lst]
        for i in range(starts[lst], starts[lst + 1]):
            d = docs[i]
            if not seen[d]:
                seen[d] = True
                touched[n_touched] = d
                n_touched += 1
            acc[d] += w * impacts[i]
    best = np.full(k, -np.inf)
    best_docs = np.full(k, -1, dtype=np.int64)
    count = 0
    for j in range(n_touched):
        d = touched[j]
        score = acc[d] + prior[d]
        acc[d] = 0.0
        seen[d] = False
        if not visible[d]:
            continue
        count += 1
        if score > best[k - 1]:
            p = k - 1
            while p > 0 and score > best[p - 1]:
                best[p] = best[p - 1]
                best_docs[p] = best_docs[p - 1]
                p -= 1
            best[p] = score
            best_docs[p] = d
    return best_docs, best, count


def _kernel_top10(terms: list[Any], prior: np.ndarray, top: float, index: Any) -> set[int]:
    from services.search.retrieval.rank import top_k_or

    ranked = top_k_or(terms, prior, 10, max_prior=top, allowed=index.visible, source=index.posting_source)
    return set(ranked.docs.tolist())


def _bound_top10(*arrays: np.ndarray) -> set[int]:
    found, _, _ = exhaustive_top_k(*arrays, 10)
    return {int(d) for d in found if d >= 0}


def main(argv: list[str] | None = None) -> int:
    from services.config import Settings
    from services.eval.run import state_settings
    from services.search.query.language import analyses_for, parse_query
    from services.search.retrieval.query_terms import looked_up_words, query_term_group
    from services.search.service import SearchService

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passes", type=int, default=7)
    parser.add_argument("--distinct", action="store_true", help="the corpus of benchmarks.index --distinct")
    args = parser.parse_args(argv)
    corpus = DISTINCT if args.distinct else CORPUS
    service = SearchService(state_settings(Settings.from_env({}), STATE))
    index = service.holder.current()
    if index is None:
        raise SystemExit(f"no published index under {STATE}: run python -m benchmarks.index first")
    weight = service.retrieval.pagerank_weight
    prior = np.asarray(index.prior(weight), dtype=np.float64)
    top = index.max_prior(weight)
    visible = index.visible if index.visible is not None else np.ones(index.num_docs, dtype=bool)
    acc = np.zeros(index.num_docs)
    seen = np.zeros(index.num_docs, dtype=np.bool_)
    touched = np.zeros(index.num_docs, dtype=np.int64)
    rows = []
    for q in load_queries(corpus):
        query = parse_query(" OR ".join(q.split()), analyses_for(q, index.languages))
        ids = [(float(query.terms[t]), found) for t, found in looked_up_words(index, query).items() if found]
        if not ids:
            continue
        terms = [query_term_group(index, found, w) for w, found in ids]
        lists = [index.postings(found[0]) for _, found in ids]  # one form a word (the benchmark's)
        docs = np.concatenate([d for d, _ in lists]).astype(np.int64)
        impacts = np.concatenate([m for _, m in lists]).astype(np.float64)
        starts = np.concatenate([[0], np.cumsum([d.shape[0] for d, _ in lists])]).astype(np.int64)
        weights = np.array([w for w, _ in ids])

        kernel = partial(_kernel_top10, terms, prior, top, index)
        tables = (prior, visible, acc, seen, touched)
        bound = partial(_bound_top10, docs, impacts, starts, weights, *tables)
        same = kernel() == bound()
        best = [np.inf, np.inf]
        for _ in range(args.passes):
            for side, fn in enumerate((kernel, bound)):
                started = time.perf_counter()
                fn()
                best[side] = min(best[side], time.perf_counter() - started)
        rows.append((q, int(starts[-1]), best[0] * 1e6, best[1] * 1e6, same))
    service.close()
    figures = np.array([(n, a, b) for _, n, a, b, _ in rows])
    print(f"{len(rows)} OR queries, top 10 the same in {sum(r[4] for r in rows)}")
    for name, col in (("block-max kernel", 1), ("every posting, decoded beforehand", 2)):
        p50, p95 = np.percentile(figures[:, col], [50, 95])
        print(f"{name:34s} p50 {p50:5.0f} µs  p95 {p95:5.0f} µs  mean {figures[:, col].mean():5.0f} µs")
    per = figures[:, 2] * 1000 / np.maximum(figures[:, 0], 1)
    print(
        f"postings a query: p50 {np.median(figures[:, 0]):.0f}, p95 {np.percentile(figures[:, 0], 95):.0f}; "
        f"the bound {np.median(per):.1f} ns a posting (median)"
    )
    p95 = np.percentile(figures[:, 1], 95) / np.percentile(figures[:, 2], 95)
    print(f"kernel/bound p95: {p95:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
