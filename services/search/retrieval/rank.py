"""Scoring: BM25F impacts times a bounded PageRank factor, with exact top-k. Pure numpy.

The formula (docs/ranking.md)::

    text(q, d)  = sum over query terms t of  w_t * impact_td       (impact: services.ranking.bm25f)
    prior(d)    = s_d / (s_d + 1)   with   s_d = N * pagerank_d
    final(q, d) = text(q, d) * (1 + W * prior(d))

``w_t`` is how often ``t`` occurs in the analyzed query (BM25's query-term
frequency with a large k3, as Lucene sums a repeated clause), or the term's
weight in a feedback-expanded query. ``W`` is ``settings.search.pagerank_weight``.

PageRank is query-independent evidence, a saturating prior (Craswell et al.,
"Relevance weighting for query independent evidence", SIGIR 2005): ``N *
pagerank_d`` is 1 for an average page, whose prior is 1/2. It multiplies the
text score instead of adding to it: no page, however linked, scores more than
``1 + W`` times what its text earns, so links reorder documents whose text
scores are within that factor and never lift a weak match above a strong one.
Added in BM25 points instead, the prior would outweigh the whole text score of
words that are on every page of a site (idf near 0): the best-linked pages would
come first for every such query (docs/ranking.md).

Top-k: ``top_k_maxscore`` returns exactly the documents and scores of
``top_k_exhaustive`` (a test compares them on random queries). It is
MaxScore (Turtle & Flood 1995) done a term at a time over numpy arrays:
terms sorted by their bound ``w_t * max_impact_t``; documents that contain
only the weakest terms cannot reach the k-th best score once that score
exceeds the sum of those terms' bounds times the largest factor, so only the
postings of the strong ("essential") terms are enumerated, and the others
are probed for those candidates by binary search. Both paths score a
candidate with the same function, term by term in query order, so equal
documents get bit-identical scores.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np

from services.ranking.impact_levels import dequantize
from services.search.retrieval.blockmax import BlockmaxResult, count_any, top_k_blockmax
from services.search.retrieval.blockmax_kernels import SAFETY
from services.search.retrieval.match_count import COUNT_EXACTLY_UP_TO, EXACT_COUNT_POSTINGS, count_matches
from services.search.retrieval.posting_layout import NO_DOCS, NO_IMPACTS, PostingSource


@dataclass(frozen=True)
class QueryTerm:
    """One distinct query term as the scorer needs it. A segment's list is read in place by
    the compiled kernels (its documents in blocks, its impacts as levels,
    ``services.ranking.impact_levels``); ``docs`` and ``impacts`` decode and convert them only
    for a path that asks."""

    weight: float  # query-term frequency, or the feedback model's weight
    # Doc numbers, ascending, or what decodes them (a segment's list: ``SegmentIndex.posting_docs``).
    stored_docs: np.ndarray | Callable[[], np.ndarray]
    stored_impacts: np.ndarray  # the impacts (float32), or their levels when ``impact_scale`` is set
    max_impact: float
    # The term's id in the segment's arrays when ``docs``/``impacts`` are its list there
    # (read in place, with the segment's block maxima, by ``top_k_or``); None for a list the
    # query built (a word's forms joined, a segment set's merged list).
    base_term: int | None = None
    impact_scale: float | None = None  # the levels' step: an impact is float32(level) * step
    length: int = -1  # postings (-1: those of ``stored_docs``, an array)

    def __post_init__(self) -> None:
        if self.length < 0:
            if callable(self.stored_docs):
                raise ValueError("QueryTerm: a list decoded on demand needs its length")
            object.__setattr__(self, "length", int(self.stored_docs.shape[0]))

    @cached_property
    def docs(self) -> np.ndarray:
        """The documents holding the term, ascending (uint32), decoded on first use."""
        return self.stored_docs() if callable(self.stored_docs) else self.stored_docs

    def read_docs(self) -> np.ndarray:
        """``docs``, asked by ``posting_layout.lay_out`` only of a list not read in place."""
        return self.docs

    @cached_property
    def impacts(self) -> np.ndarray:
        """The impact of the term in each of ``docs`` (float32)."""
        return self.impacts_at(slice(None))

    def impacts_at(self, at: slice | np.ndarray) -> np.ndarray:
        """The impacts at ``at`` (a slice or positions in ``docs``), converting only those."""
        if self.impact_scale is None:
            picked: np.ndarray = self.stored_impacts[at]
            return picked
        return dequantize(self.stored_impacts[at], self.impact_scale)

    def read_impacts(self) -> np.ndarray:
        """``impacts``, asked by ``posting_layout.lay_out`` only of a list not read in place."""
        return self.impacts


@dataclass(frozen=True)
class Ranked:
    """The best documents, best first, with their score parts."""

    docs: np.ndarray  # uint32
    final: np.ndarray  # float64
    text: np.ndarray  # float64
    total: int  # documents that matched (before the cut to k)
    exact: bool = True  # False: ``total`` is an estimate (``count_matches``)

    def taken(self, at: np.ndarray | slice, final: np.ndarray | None = None) -> Ranked:
        """The results at ``at`` (positions, or a slice: the first k), the same count; their
        ``final`` scores replaced by ``final``'s at ``at`` when it is given (a rescore).
        (Built directly: ``dataclasses.replace`` costs a few µs a call, on every query.)"""
        scores = self.final if final is None else final
        return Ranked(self.docs[at], scores[at], self.text[at], self.total, self.exact)


def pagerank_prior(pagerank: np.ndarray, num_docs: int) -> np.ndarray:
    """``s / (s + 1)`` with ``s = N * pagerank``: 0.5 for an average page, below 1 always."""
    s = np.maximum(num_docs * pagerank.astype(np.float64), 0.0)
    return s / (s + 1.0)


def text_scores(terms: Sequence[QueryTerm], docs: np.ndarray) -> np.ndarray:
    """``text(q, d)`` of each doc in ``docs`` (ascending): term by term, in query order.

    A term's impacts are looked up by binary search per candidate, or, when
    that costs more (``_dense_probe_pays``: many candidates, as when feedback
    re-ranks every document holding a user's word), through a table over the
    candidates' document range. Either way a document gets the same float.
    """
    total = np.zeros(docs.shape[0], dtype=np.float64)
    if docs.shape[0] == 0:
        return total
    low, high = int(docs[0]), int(docs[-1]) + 1
    relative: np.ndarray | None = None
    for t in terms:
        if t.length == 0:
            continue
        if _dense_probe_pays(docs.shape[0], t.length, high - low):
            if relative is None:
                relative = docs - np.uint32(low)
            a, b = np.searchsorted(t.docs, [low, high]).tolist()
            table = np.zeros(high - low, dtype=np.float32)
            table[t.docs[a:b] - np.uint32(low)] = t.impacts_at(slice(a, b))
            total += table[relative].astype(np.float64) * t.weight
            continue
        at = np.searchsorted(t.docs, docs)
        at_clipped = np.minimum(at, t.length - 1)
        hit = t.docs[at_clipped] == docs
        total += np.where(hit, t.impacts_at(at_clipped).astype(np.float64) * t.weight, 0.0)
    return total


DOC = np.uint32  # document numbers, as the segment stores them: searchsorted never converts


def union_docs(terms: Sequence[QueryTerm]) -> np.ndarray:
    parts = [t.docs for t in terms if t.length]
    if not parts:
        return np.zeros(0, DOC)
    return np.unique(np.concatenate(parts).astype(DOC, copy=False))


def _dense_probe_pays(candidates: int, list_len: int, num_docs: int) -> bool:
    """Whether probing a list through a per-document table beats binary searches.

    A table costs a fill of ``num_docs`` floats (~0.11 ns each), a scatter of
    the list (~1.9 ns a posting) and a gather per candidate (~1 ns); binary
    searches cost ~2 ns per level per candidate: the weights below, in units of
    a fill (the model against timings: docs/performance-notes.md).
    """
    levels = max(1, list_len.bit_length())
    return candidates * (2 * levels - 1) * 9 > num_docs + 17 * list_len


def conjunctive(terms: Sequence[QueryTerm], num_docs: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(documents holding every term, their text scores) in one pass over the lists.

    The shortest list gives the candidates; each other list is probed, and
    the impacts found on the way are kept, so scoring costs no second search.
    A probe is a binary search per candidate, or, when the candidates are
    many (``_dense_probe_pays``), one scatter of the probed list's impacts
    into a table by document (NaN where absent) and one gather: linear
    instead of n log m. Scores are summed in query order, as ``text_scores``
    sums them (the same float result).
    """
    if not terms:
        return np.zeros(0, DOC), np.zeros(0, np.float64)
    by_length = sorted(range(len(terms)), key=lambda i: terms[i].length)
    docs = terms[by_length[0]].docs.astype(DOC, copy=False)
    probes: list[tuple[int, np.ndarray, np.ndarray]] = []  # (term, impacts, where docs held)
    for i in by_length[1:]:
        t = terms[i]
        if docs.shape[0] == 0 or t.length == 0:
            return np.zeros(0, DOC), np.zeros(0, np.float64)
        if num_docs is not None and _dense_probe_pays(docs.shape[0], t.length, num_docs):
            table = np.full(num_docs, np.nan, dtype=np.float32)
            table[t.docs] = t.impacts
            values = table[docs]
            held = np.flatnonzero(~np.isnan(values))
        else:
            at = np.minimum(np.searchsorted(t.docs, docs), t.length - 1)
            held = np.flatnonzero(t.docs[at] == docs)
            values = t.impacts_at(at)
        probes.append((i, values, held))
        docs = docs.take(held)
    # Each term's impacts for the survivors only, back through the probes (index arrays: a
    # boolean mask per probe over every earlier term's impacts costs far more: docs/benchmarks.md).
    found: dict[int, np.ndarray] = {}
    where = np.arange(docs.shape[0])
    for i, values, held in reversed(probes):
        where = held.take(where)
        found[i] = values.take(where)
    found[by_length[0]] = terms[by_length[0]].impacts_at(where)
    text = np.zeros(docs.shape[0], dtype=np.float64)
    for i, t in enumerate(terms):
        text += found[i].astype(np.float64) * t.weight
    return docs, text


def intersect_docs(terms: Sequence[QueryTerm], num_docs: int | None = None) -> np.ndarray:
    """Documents holding every term (``conjunctive``'s documents)."""
    return conjunctive(terms, num_docs)[0]


def best_of(docs: np.ndarray, final: np.ndarray, text: np.ndarray, k: int, total: int) -> Ranked:
    pos = top_k(docs, final, k)
    return Ranked(docs[pos], final[pos], text[pos], total)


def combine(text: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """Final scores of documents with ``text`` scores and (weighted) priors ``prior``."""
    return text * (1.0 + prior)


def score_candidates(terms: Sequence[QueryTerm], docs: np.ndarray, prior: np.ndarray, k: int) -> Ranked:
    """Exact top-k of a given candidate set (AND results, phrase matches)."""
    text = text_scores(terms, docs)
    return best_of(docs, combine(text, prior[docs]), text, k, int(docs.shape[0]))


def top_k_exhaustive(
    terms: Sequence[QueryTerm],
    prior: np.ndarray,
    k: int,
    excluded: np.ndarray | None = None,
    allowed: np.ndarray | None = None,
) -> Ranked:
    """Every document holding any term, scored; the reference for ``top_k_maxscore``."""
    docs = union_docs(terms)
    if excluded is not None and excluded.shape[0]:
        docs = docs[~np.isin(docs, excluded)]
    if allowed is not None:
        docs = docs[allowed[docs]]
    return score_candidates(terms, docs, prior, k)


def _largest_prior(prior: np.ndarray, given: float | None) -> float:
    """The bound on any document's prior the pruning scales by: ``given``, else the largest."""
    if given is None:
        return float(prior.max()) if prior.shape[0] else 0.0
    return given


def top_k_or(
    terms: Sequence[QueryTerm],
    prior: np.ndarray,
    k: int,
    excluded: np.ndarray | None = None,
    max_prior: float | None = None,
    allowed: np.ndarray | None = None,
    source: PostingSource | None = None,
    count: bool = True,
    within: Sequence[QueryTerm] | None = None,
    seed: np.ndarray | None = None,
) -> Ranked:
    """``top_k_maxscore``'s result (the same documents, scores and count), document at a time
    with block-max MaxScore in compiled code (``services.search.retrieval.blockmax``).
    ``source``: the segment's postings, which terms with a ``base_term`` are read from.
    ``count=False``: the caller knows the count; ``total`` is then a lower bound.

    ``within``: only documents of these lists are candidates (a feedback query reranks the
    documents holding a word of the user's, ``allowed`` restricting them further); a list of
    ``terms`` that is one of them (the same ``base_term``) brings candidates itself, the
    others are added at weight 0, which adds exactly 0.0 to a score. ``seed``: documents
    scored first (``blockmax.top_k_blockmax``); the same result, sooner. (A second phase over
    a few given documents is ``pool_rescore.rescore``.)"""
    live = [t for t in terms if t.length]
    if k <= 0 or not live:
        return _nothing()
    max_prior = _largest_prior(prior, max_prior)
    probe_only = candidates_only = None
    if within is not None:
        count = False  # the caller's count: the documents of ``within`` it already ranked
        named = {t.base_term for t in within if t.base_term is not None}
        probe_only = [t.base_term is None or t.base_term not in named for t in live]
        held = {t.base_term for t in live if t.base_term is not None}
        # After the query's own terms: summed in query order, 0.0 added after them changes nothing.
        extra = [replace(t, weight=0.0) for t in within if t.length and t.base_term not in held]
        live = live + extra
        probe_only += [False] * len(extra)
        candidates_only = [False] * (len(live) - len(extra)) + [True] * len(extra)
    found = top_k_blockmax(
        source,
        [(t.weight, t.max_impact, t.base_term, t.read_docs, t.read_impacts) for t in live],
        prior,
        k,
        max_prior,
        excluded,
        allowed,
        EXACT_COUNT_POSTINGS if count else 0,
        probe_only,
        candidates_only,
        seed,
        COUNT_EXACTLY_UP_TO if count else 0,
    )
    return _best_first(found)


def top_k_or_in_place(
    source: PostingSource,
    terms: Sequence[int],
    weights: Sequence[float],
    max_impacts: Sequence[float],
    prior: np.ndarray,
    k: int,
    excluded: np.ndarray | None = None,
    max_prior: float | None = None,
    allowed: np.ndarray | None = None,
) -> Ranked:
    """``top_k_or`` of the segment's own lists by term id (each with its weight and largest
    impact), counted: the same documents, scores and count as ``top_k_or`` of their
    ``QueryTerm``s, without the query building them (a tenth of a short OR query's Python)."""
    ends = source.offsets
    live = [j for j, t in enumerate(terms) if int(ends[t + 1]) > int(ends[t])]
    if k <= 0 or not live:
        return _nothing()
    found = top_k_blockmax(
        source,
        [(weights[j], max_impacts[j], terms[j], NO_DOCS, NO_IMPACTS) for j in live],  # read in place
        prior,
        k,
        _largest_prior(prior, max_prior),
        excluded,
        allowed,
        EXACT_COUNT_POSTINGS,
        count_up_to=COUNT_EXACTLY_UP_TO,
    )
    return _best_first(found)


def _nothing() -> Ranked:
    return Ranked(np.zeros(0, DOC), np.zeros(0), np.zeros(0), 0)


def _best_first(found: BlockmaxResult) -> Ranked:
    """The block-max top-k's documents best first (ties: the lower document first)."""
    order = np.lexsort((found.docs, -found.final))
    return Ranked(found.docs[order], found.final[order], found.text[order], found.counted, found.exact)


def count_or(
    terms: Sequence[QueryTerm],
    num_docs: int,
    excluded: np.ndarray | None = None,
    allowed: np.ndarray | None = None,
    source: PostingSource | None = None,
) -> tuple[int, bool]:
    """(documents holding any of ``terms``, not ``excluded``, ``allowed``; whether exact),
    without ranking them, as ``top_k_or`` counts where its ranking pruned: exactly up to
    ``COUNT_EXACTLY_UP_TO``, estimated past it (a results page that stops before its partial
    matches; numpy's exact count of every list cost such a page 0.26 ms on average)."""
    live = [t for t in terms if t.length]
    if not live or num_docs <= 0:
        return 0, True
    lists = [(t.base_term, t.read_docs, t.read_impacts) for t in live]
    counted, exact, _ = count_any(
        source, lists, num_docs, excluded, allowed, EXACT_COUNT_POSTINGS, COUNT_EXACTLY_UP_TO
    )
    return counted, exact


def top_k_maxscore(
    terms: Sequence[QueryTerm],
    prior: np.ndarray,
    k: int,
    excluded: np.ndarray | None = None,
    max_prior: float | None = None,
    allowed: np.ndarray | None = None,
) -> Ranked:
    """The same top-k as ``top_k_exhaustive``, enumerating only the essential terms' postings.

    ``allowed`` (a boolean per document) restricts the candidates further, as
    ``excluded`` does; restricting only lowers what outsiders could score, so
    the bound stays valid. ``total`` is the number of matching documents, counted
    apart when the pruning stopped early (``count_matches``).
    """
    live = [t for t in terms if t.length]
    if k <= 0 or not live:
        return _nothing()
    max_prior = _largest_prior(prior, max_prior)
    by_bound = sorted(live, key=lambda t: -t.weight * t.max_impact)
    bounds = np.array([t.weight * t.max_impact for t in by_bound], dtype=np.float64)
    # rest[m]: the best a document can score holding none of the first m terms.
    rest = np.concatenate([np.cumsum(bounds[::-1])[::-1], [0.0]]) * (1.0 + max_prior)
    scored = np.zeros(0, DOC)
    final = text = np.zeros(0, np.float64)
    for m in range(1, len(by_bound) + 1):
        new = by_bound[m - 1].docs.astype(DOC, copy=False)
        new = new[~np.isin(new, scored, assume_unique=True)] if scored.shape[0] else new
        if excluded is not None and excluded.shape[0]:
            new = new[~np.isin(new, excluded)]
        if allowed is not None:
            new = new[allowed[new]]
        if new.shape[0]:
            new_text = text_scores(terms, new)
            scored = np.concatenate([scored, new])
            text = np.concatenate([text, new_text])
            final = np.concatenate([final, combine(new_text, prior[new])])
        if m < len(by_bound) and scored.shape[0] >= k:
            kth = np.partition(final, final.shape[0] - k)[final.shape[0] - k]
            if kth > rest[m] * (1.0 + SAFETY) + SAFETY:
                break  # nobody outside ``scored`` can reach the k-th score
    order = np.argsort(scored, kind="stable")  # ascending docs, as the exhaustive path has them
    scored, final, text = scored[order], final[order], text[order]
    if m < len(by_bound):  # pruned: the documents scored are not all the matches
        total, exact = count_matches(live, prior.shape[0], excluded, allowed)
        return replace(best_of(scored, final, text, k, max(total, int(scored.shape[0]))), exact=exact)
    return best_of(scored, final, text, k, int(scored.shape[0]))


def top_k(docs: np.ndarray, scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` best candidates: score descending, then doc number ascending.

    ``argpartition`` finds the k-th best score in linear time; every candidate
    tied with it is kept before the exact sort, so the doc-number tie-break is
    the same as a full sort's.
    """
    n = int(scores.shape[0])
    if k <= 0 or n == 0:
        return np.zeros(0, np.intp)
    if k < n:
        kth = np.argpartition(-scores, k - 1)[k - 1]
        pool = np.flatnonzero(scores >= scores[kth])
    else:
        pool = np.arange(n)
    order = np.lexsort((docs[pool], -scores[pool]))
    return pool[order[:k]]
