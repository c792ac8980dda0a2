"""Scoring: BM25 text relevance plus a bounded PageRank prior. Pure numpy over postings.

The formula (also in docs/ranking.md)::

    text(q, d)  = sum over distinct query terms t in d of
                  qtf_t * idf_t * tf_td * (k1 + 1) / (tf_td + k1 * (1 - b + b * len_d / avglen))
    prior(d)    = s_d / (s_d + 1)   with   s_d = N * pagerank_d
    final(q, d) = text(q, d) + w * prior(d)

``idf_t = ln(1 + N / df_t)`` comes precomputed in the segment; ``qtf_t``
counts how often ``t`` occurs in the analyzed query, because repeated words
carry weight in long queries (NOTES.md). BM25 is a TF-IDF weighting whose
term frequency saturates (the 200th "anarchism" adds little) and whose
length normalisation is pivoted on the average length, so neither a long
article nor a short list page wins by length alone (cosine normalisation
favours short pages too strongly; see docs/ranking.md for the case that
showed it).

PageRank is query-independent evidence, added as a saturating prior
(Craswell et al., "Relevance weighting for query independent evidence",
SIGIR 2005): ``N * pagerank_d`` is 1 for an average page, whose prior is
w/2; no page, however linked, gains more than ``w`` over an unlinked one. It
reorders documents of similar relevance but cannot lift a page that barely
matches above one that matches well. ``w`` is ``Settings.pagerank_weight``;
0 ranks by text alone.

A query is a disjunction: every document holding at least one query term
is a candidate; documents holding no query term are never results.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class TermPostings:
    """One distinct query term as the scorer needs it."""

    qtf: int  # occurrences of the term in the analyzed query
    idf: float
    docs: np.ndarray  # doc numbers, ascending
    tfs: np.ndarray  # term frequency of the term in each of those docs


@dataclass(frozen=True)
class Scored:
    """Candidate documents with their scores, aligned arrays (doc numbers ascending)."""

    docs: np.ndarray  # int64
    text: np.ndarray  # float64 text(q, d)
    pagerank: np.ndarray  # float64 pagerank_d
    final: np.ndarray  # float64 final(q, d)

    def __len__(self) -> int:
        return int(self.docs.shape[0])


K1 = 1.2  # BM25's usual defaults (Robertson & Zaragoza 2009), not fitted to any collection
B = 0.75


def text_scores(terms: Sequence[TermPostings], doc_lengths: np.ndarray, avg_length: float,
                k1: float = K1, b: float = B) -> tuple[np.ndarray, np.ndarray]:
    """(candidate docs ascending, BM25 score of each): the first line of the formula."""
    if not terms or all(t.docs.shape[0] == 0 for t in terms):
        return np.zeros(0, np.int64), np.zeros(0, np.float64)
    avg = avg_length if avg_length > 0 else 1.0
    parts_docs, parts_weights = [], []
    for t in terms:
        docs = t.docs.astype(np.int64, copy=False)
        tf = t.tfs.astype(np.float64)
        norm = k1 * (1.0 - b + b * doc_lengths[docs].astype(np.float64) / avg)
        parts_docs.append(docs)
        parts_weights.append(t.qtf * float(t.idf) * tf * (k1 + 1.0) / (tf + norm))
    docs = np.concatenate(parts_docs)
    weights = np.concatenate(parts_weights)
    # Accumulate per document in time proportional to the postings touched,
    # not to N: a rare-word query in a big index stays cheap.
    unique, inverse = np.unique(docs, return_inverse=True)
    return unique, np.bincount(inverse, weights=weights, minlength=unique.shape[0])


def pagerank_prior(pagerank: np.ndarray, num_docs: int) -> np.ndarray:
    """``s / (s + 1)`` with ``s = N * pagerank``: 0.5 for an average page, below 1 always."""
    s = np.maximum(num_docs * pagerank.astype(np.float64), 0.0)
    return s / (s + 1.0)


def merge_pagerank(text: np.ndarray, pagerank: np.ndarray, num_docs: int,
                   weight: float) -> np.ndarray:
    """The last line of the formula: ``text + weight * prior``."""
    if weight == 0:
        return text.astype(np.float64, copy=True)
    return text + weight * pagerank_prior(pagerank, num_docs)


def score(terms: Sequence[TermPostings], doc_lengths: np.ndarray, avg_length: float,
          pagerank: np.ndarray, weight: float) -> Scored:
    """Every candidate's text score, PageRank and final score."""
    docs, text = text_scores(terms, doc_lengths, avg_length)
    pr = pagerank[docs].astype(np.float64)
    final = merge_pagerank(text, pr, int(doc_lengths.shape[0]), weight)
    return Scored(docs, text, pr, final)


def top_k(docs: np.ndarray, scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` best candidates: score descending, then doc number ascending.

    ``argpartition`` finds the k-th best score in linear time; every candidate
    tied with it is kept before the exact sort, so the doc-number tie-break is
    the same as a full sort's.
    """
    n = int(scores.shape[0])
    if k <= 0 or n == 0:
        return np.zeros(0, np.int64)
    if k < n:
        kth = np.argpartition(-scores, k - 1)[k - 1]
        pool = np.flatnonzero(scores >= scores[kth])
    else:
        pool = np.arange(n)
    order = np.lexsort((docs[pool], -scores[pool]))
    return pool[order[:k]]
