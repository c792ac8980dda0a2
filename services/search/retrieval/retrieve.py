"""A parsed query against one index segment: which documents, in which order.

The rules (README, "Query language"):

1. Excluded words remove documents. A quoted phrase is required when at least
   ``and_min_results`` documents hold it; otherwise its holders come first and
   the documents holding its words follow (a soft constraint, "phrase+words").
2. Without ``OR``: the documents holding every word (AND), ranked by score,
   when there are at least ``and_min_results`` of them; documents matching
   only some words follow, ranked by score, for whoever reads that far. When
   every word is ``+``-required, the AND is the whole answer, however short;
   ``+`` on some words only restricts the documents (``filters``) and the rest
   of these rules apply within them.
3. Otherwise (explicit ``OR``, or AND found too few): every document holding
   any word, ranked by score (exact top-k with MaxScore pruning). With RM3
   pseudo-relevance feedback switched on (and no phrase in the query: an
   expanded query is no longer the user's phrase; no explicit ``OR`` unless
   ``feedback_explicit_or``: the user chose the alternatives), the expanded query
   re-ranks the first pass's best ``feedback_pool`` documents (at least the
   ``k`` asked for; 0: all of those documents): feedback reorders, it never
   adds a result that holds none of the user's words.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from services.config.search import SearchSettings
from services.search.query.language import ParsedQuery
from services.search.retrieval.conjunction import top_k_and, top_k_and_in_place
from services.search.retrieval.entry_pages import NamedPages, named_entry_pages, with_entry_pages
from services.search.retrieval.exact_forms import RESCORE_WINDOW, rescore_exact_forms
from services.search.retrieval.feedback import rm3_expansion
from services.search.retrieval.phrase import phrase_matches
from services.search.retrieval.pool_rescore import rescore
from services.search.retrieval.query_terms import looked_up_words, query_term, query_term_group
from services.search.retrieval.rank import (
    QueryTerm,
    Ranked,
    best_of,
    count_or,
    intersect_docs,
    score_candidates,
    top_k,
    top_k_or,
    top_k_or_in_place,
    union_docs,
)
from services.search.retrieval.segment import SegmentIndex

DEFAULT_SETTINGS = SearchSettings()  # the embedded defaults, for callers without a Settings


@dataclass(frozen=True)
class Retrieval:
    ranked: Ranked
    mode: str  # "and", "and+or", "or", "or+feedback", "phrase", "phrase+words", "browse", "none"
    found: list[str]  # query terms present in the index
    # Documents holding every word, when the AND was tried and too few held them for an AND
    # result (the OR that follows ranks them among partial matches); None when not tried.
    all_words: int | None = None
    # False: an "and+or" list whose partial matches were ranked only as deep as ``upto`` asked
    # (``retrieve``); what it holds that far, its mode and its total are the whole list's.
    complete: bool = True

    def phrase_relaxed(self) -> bool:
        """Too few documents held the quoted phrase: documents with its words follow them."""
        return self.mode == "phrase+words"

    def some_words_only(self, query: ParsedQuery) -> bool:
        """The user asked for several words (not with OR), and no document held them all."""
        return (
            self.mode in {"or", "or+feedback"}
            and len(query.terms) > 1
            and not query.any_word
            and not self.all_words
        )


def retrieve(
    index: SegmentIndex,
    query: ParsedQuery,
    k: int,
    settings: SearchSettings = DEFAULT_SETTINGS,
    allowed: np.ndarray | None = None,
    upto: int | None = None,
    named: NamedPages | None = None,
    looked_up: dict[str, list[int]] | None = None,
) -> Retrieval:
    """The ``k`` best documents for ``query``; only documents True in ``allowed`` (the query
    operators' mask, ``services.search.retrieval.filters``) when it is given. ``named``: the
    query's ``named_entry_pages``, ``looked_up``: each of its words' term ids
    (``looked_up_words``), when the caller has them already.

    ``upto``: the first ``upto`` of them are enough for now (a results page). The list is still
    the ``k``-deep one (its mode, order and total are decided at ``k``), but when every
    document holding all the words comes first ("and+or"), the partial matches after them are
    ranked only as far as ``upto`` reaches, and counted, not ranked, when it stops before them:
    ranking a thousand partial matches to show ten AND matches was most of a cold search's
    ranking (docs/benchmarks.md, issue 31's stop). The result says it is not ``complete``."""
    prior = index.prior(settings.pagerank_weight)
    top = index.max_prior(settings.pagerank_weight)
    if looked_up is None:
        looked_up = looked_up_words(index, query)
    # Pages the query names as a site's or section's entry (services.ranking.entry_pages).
    if named is None:
        named = named_entry_pages(index, list(looked_up.values()), settings.entry_page_weight)
    prior, top = with_entry_pages(index, named, prior, top)
    ids = {term: i[0] for term, i in looked_up.items() if i}  # terms in the index (a form of)
    found = list(ids)
    weights = {ids[t]: float(query.terms[t]) for t in found}
    excluded = _excluded(index, query)
    visible = _visible(index, allowed)
    if not query.terms and visible is not None and allowed is not None and k > 0:
        return Retrieval(_browse(visible, excluded, prior, k), "browse", found)
    if not found or k <= 0 or query.all_required and len(found) < len(query.terms):
        # (a required word no page holds: no result)
        return Retrieval(Ranked(np.zeros(0, np.uint32), np.zeros(0), np.zeros(0), 0), "none", found)
    strict = query.all_required  # +every +word: the AND is the answer, however short
    and_tried = (strict or not query.any_word) and len(found) == len(query.terms) and len(found) > 1
    # Each word one list of the segment's, read where it lies: the AND and the OR's first pass
    # need no list built by the query (``QueryTerm``s cost a tenth of a short query), so they
    # are built only for the steps that read them (``query_terms``).
    in_place = index.LISTS_IN_PLACE and all(len(looked_up[t]) == 1 for t in found)
    term_ids = [ids[t] for t in found]
    built: list[QueryTerm] = []

    def query_terms() -> list[QueryTerm]:
        if not built:
            built.extend(query_term_group(index, looked_up[t], weights[ids[t]]) for t in found)
        return built

    and_result = None
    if and_tried and not query.phrases and in_place:
        and_result = top_k_and_in_place(
            index.posting_source, term_ids, [weights[i] for i in term_ids], prior, k, excluded, visible
        )
        if and_result[3] >= settings.and_min_results and and_result[0].shape[0] >= k or strict:
            return Retrieval(Ranked(*and_result), "and", found)

    if query.phrases:
        terms = query_terms()
        if any(t not in ids for phrase in query.phrases for t in phrase):
            candidates = np.zeros(0, np.uint32)
        else:
            required = [query_term(index, ids[t], 1.0) for phrase in query.phrases for t in phrase]
            candidates = _without(intersect_docs(required, index.num_docs), excluded)
            if visible is not None:
                candidates = candidates[visible[candidates]]
            for phrase in query.phrases:
                candidates = _holding_phrase(index, candidates, [ids[t] for t in phrase])
        if candidates.shape[0] < settings.and_min_results:
            return _phrase_then_words(
                index, query, terms, candidates, prior, k, settings, found, allowed, looked_up
            )
        if not query.any_word and len(found) == len(query.terms):
            # The candidates hold the phrases' words already: intersect with the others only.
            in_phrases = {ids[t] for phrase in query.phrases for t in phrase}
            others = [t for i, t in zip(weights, terms, strict=True) if i not in in_phrases]
            narrowed = (
                np.intersect1d(candidates, intersect_docs(others, index.num_docs), assume_unique=True)
                if others
                else candidates
            )
            if narrowed.shape[0] >= settings.and_min_results or query.all_required:
                candidates = narrowed
        return Retrieval(score_candidates(terms, candidates, prior, k), "phrase", found)

    if and_tried:
        if and_result is None:
            lists = [(t.weight, t.base_term, t.read_docs, t.read_impacts) for t in query_terms()]
            and_result = top_k_and(index.posting_source, lists, prior, k, excluded, visible)
        docs, final, text, matches = and_result
        if matches >= settings.and_min_results or strict:
            ranked = Ranked(docs, final, text, matches)
            if ranked.docs.shape[0] >= k or strict:
                return Retrieval(ranked, "and", found)
            # Fewer AND matches than asked for (``docs`` are all of them): partial matches follow.
            outside = np.union1d(excluded, docs)
            wanted = k if upto is None else min(k, upto) - int(ranked.docs.shape[0])
            if wanted <= 0:
                count, exact = count_or(query_terms(), index.num_docs, outside, visible, index.posting_source)
                rest = Ranked(np.zeros(0, np.uint32), np.zeros(0), np.zeros(0), count, exact)
                return Retrieval(_concat(ranked, rest, k), "and+or", found, complete=count == 0)
            rest = top_k_or(
                query_terms(),
                prior,
                wanted,
                excluded=outside,
                max_prior=top,
                allowed=visible,
                source=index.posting_source,
            )
            complete = upto is None or upto >= k or rest.docs.shape[0] < wanted
            return Retrieval(_concat(ranked, rest, k), "and+or", found, complete=complete)

    all_words = matches if and_tried else None
    feedback = (
        settings.feedback_docs > 0
        and settings.feedback_terms > 0
        and len(query.terms) >= settings.feedback_min_terms
        and (settings.feedback_explicit_or or not query.any_word)
    )
    # With feedback, the first pass ranks the condensed list the expanded query rescores.
    condensed = feedback and settings.feedback_pool > 0
    depth = max(k, min(settings.feedback_pool, index.num_docs)) if condensed else k
    if in_place:
        max_impacts = [index.max_impact(i) for i in term_ids]
        ranked = top_k_or_in_place(
            index.posting_source,
            term_ids,
            [weights[i] for i in term_ids],
            max_impacts,
            prior,
            depth,
            excluded,
            top,
            visible,
        )
    else:
        ranked = top_k_or(
            query_terms(),
            prior,
            depth,
            excluded=excluded,
            max_prior=top,
            allowed=visible,
            source=index.posting_source,
        )
    if feedback and ranked.docs.shape[0]:
        fb = min(settings.feedback_docs, ranked.docs.shape[0])
        expanded, expanded_weights = rm3_expansion(
            weights,
            ranked.docs[:fb],
            ranked.text[:fb],
            index.forward(ranked.docs[:fb]),
            index.doc_lengths,
            settings.feedback_terms,
            settings.feedback_weight,
            df=index.arrays["df"],
            max_df=settings.feedback_max_df,
            cap_to_query=settings.feedback_cap,
        )
        # The expanded query reorders documents holding a word of the user's query; it does
        # not bring in documents that hold none of them, and their count is the first pass's.
        if condensed:  # the first pass's best (Diaz's condensed list), looked up in place
            pool = np.sort(ranked.docs)  # (the top k: no document twice)
            held, impacts = index.term_impacts(expanded, pool)
            reranked = rescore(pool, expanded_weights, held, impacts, prior, k, ranked.total)
        else:  # ``feedback_pool`` 0: every document holding a word of the user's (``within``)
            reranked = top_k_or(
                [
                    query_term(index, i, w)
                    for i, w in zip(expanded.tolist(), expanded_weights.tolist(), strict=True)
                ],
                prior,
                k,
                excluded=excluded,
                allowed=visible,
                max_prior=top,
                source=index.posting_source,
                count=False,
                seed=ranked.docs[:k],  # the first pass's best: they hold the expansion terms too
                within=query_terms(),
            )
        # (built directly: ``dataclasses.replace`` cost 12 µs of a feedback query)
        ranked = Ranked(reranked.docs, reranked.final, reranked.text, ranked.total, ranked.exact)
        return Retrieval(ranked, "or+feedback", found, all_words)
    return Retrieval(ranked, "or", found, all_words)


def _excluded(index: SegmentIndex, query: ParsedQuery) -> np.ndarray:
    """The documents the query's ``-word`` and ``-"phrase"`` exclude (ascending)."""
    excluded = union_docs(
        [query_term(index, i, 1.0) for t in query.excluded if (i := index.term_id(t)) is not None]
    )
    for phrase in query.excluded_phrases:
        excluded = np.union1d(excluded, _phrase_docs(index, phrase)).astype(np.uint32)
    return excluded


def _visible(index: SegmentIndex, allowed: np.ndarray | None) -> np.ndarray | None:
    """The documents that may be results: not folded (near-duplicates show under their
    group's first document) and ``allowed`` by the query's operators; None when all may."""
    visible = index.visible
    if allowed is not None:
        visible = allowed if visible is None else allowed & visible
    return visible


def _phrase_then_words(
    index: SegmentIndex,
    query: ParsedQuery,
    terms: list[QueryTerm],
    holding: np.ndarray,
    prior: np.ndarray,
    k: int,
    settings: SearchSettings,
    found: list[str],
    allowed: np.ndarray | None,
    looked_up: dict[str, list[int]],
) -> Retrieval:
    """A quoted phrase as a soft constraint: the few documents holding it first, then the
    documents holding its words (AND, else OR), as for an unquoted query.

    People paste quoted titles and expressions that no page holds word for word;
    an empty page of results helps nobody. The phrase still decides the order:
    every holder ranks above every document that only has the words.
    """
    first = score_candidates(terms, holding, prior, k) if holding.shape[0] else None
    # The operators' mask goes along: the words' results are the query's results too.
    words = retrieve(
        index, replace(query, phrases=[]), k + int(holding.shape[0]), settings, allowed, looked_up=looked_up
    )
    rest = words.ranked
    if first is None:
        return Retrieval(rest, "phrase+words", found)
    keep = ~np.isin(rest.docs, first.docs)
    rest = Ranked(
        rest.docs[keep], rest.final[keep], rest.text[keep], max(0, rest.total - int(first.total)), rest.exact
    )
    return Retrieval(_concat(first, rest, k), "phrase+words", found)


def _browse(allowed: np.ndarray, excluded: np.ndarray, prior: np.ndarray, k: int) -> Ranked:
    """Operators without words ("site:nasa.gov"): every allowed document, best prior first."""
    docs = _without(np.flatnonzero(allowed).astype(np.uint32), excluded)
    scores = prior[docs]
    return best_of(docs, scores, np.zeros(docs.shape[0]), k, int(docs.shape[0]))


def _phrase_docs(index: SegmentIndex, phrase: list[str]) -> np.ndarray:
    """Every document holding ``phrase`` (analyzed terms)."""
    looked_up = [index.term_id(t) for t in phrase]
    ids = [i for i in looked_up if i is not None]
    if len(ids) < len(looked_up):
        return np.zeros(0, np.uint32)
    holding = intersect_docs([query_term(index, i, 1.0) for i in ids], index.num_docs)
    return _holding_phrase(index, holding, ids)


def _holding_phrase(index: SegmentIndex, candidates: np.ndarray, ids: list[int]) -> np.ndarray:
    """The ``candidates`` (each holding every term of the phrase) where the phrase occurs."""
    return phrase_matches(candidates, ids, index.locate, index.positions)


def _without(docs: np.ndarray, excluded: np.ndarray) -> np.ndarray:
    return docs[~np.isin(docs, excluded)] if excluded.shape[0] else docs


def _concat(first: Ranked, rest: Ranked, k: int) -> Ranked:
    return Ranked(
        np.concatenate([first.docs, rest.docs])[:k],
        np.concatenate([first.final, rest.final])[:k],
        np.concatenate([first.text, rest.text])[:k],
        first.total + rest.total,
        first.exact and rest.exact,
    )


# Modes whose ranking is one list by score; "and+or" and "phrase+words" put whole groups
# first, and their order is not the scores' (services.search.service).
_BY_SCORE = frozenset({"or", "or+feedback", "and", "phrase"})


def retrieve_ranked(
    index: SegmentIndex,
    query: ParsedQuery,
    k: int,
    settings: SearchSettings = DEFAULT_SETTINGS,
    allowed: np.ndarray | None = None,
    upto: int | None = None,
) -> Retrieval:
    """``retrieve`` (``upto`` as it reads it), then the words-as-typed rescore
    (``services.search.retrieval.exact_forms``) over at least ``RESCORE_WINDOW`` first-phase
    hits, then the home pages the query names first (``services.ranking.entry_pages``): what
    search and evaluation rank by."""
    if k <= 0:
        return retrieve(index, query, k, settings, allowed)
    looked_up = looked_up_words(index, query)  # once, for every step
    named = named_entry_pages(index, list(looked_up.values()), settings.entry_page_weight)
    roots = named_roots(index, query, settings, allowed, named)
    depth = k + int(roots.shape[0])  # enough results besides the roots, wherever they ranked
    reach = None if upto is None else upto + int(roots.shape[0])
    result = retrieve(index, query, max(depth, RESCORE_WINDOW), settings, allowed, reach, named, looked_up)
    ranked = result.ranked
    forms = [query.forms[t] for t in result.found if t in query.forms]
    if result.mode in _BY_SCORE and forms:
        ranked = rescore_exact_forms(index, forms, ranked, depth)
    if roots.shape[0]:
        ranked = _roots_first(index, query, ranked, roots, settings)
    if ranked.docs.shape[0] > k:
        ranked = ranked.taken(slice(0, k))
    return Retrieval(ranked, result.mode, result.found, result.all_words, result.complete)


def named_roots(
    index: SegmentIndex,
    query: ParsedQuery,
    settings: SearchSettings,
    allowed: np.ndarray | None,
    named: NamedPages | None = None,
) -> np.ndarray:
    """The home pages the query names that are results of it (not excluded, folded or
    filtered out by an operator; holding its quoted phrases), ascending. ``named``: the
    query's ``named_entry_pages``, when the caller has them already."""
    if not query.terms:
        return np.zeros(0, np.uint32)
    if named is None:
        named = named_entry_pages(
            index, list(looked_up_words(index, query).values()), settings.entry_page_weight
        )
    roots = named.roots
    if not roots.shape[0]:
        return roots
    visible = _visible(index, allowed)
    if visible is not None:
        roots = roots[visible[roots]]
    roots = _without(roots, _excluded(index, query))
    for phrase in query.phrases:
        ids = [index.term_id(t) for t in phrase]
        if any(i is None for i in ids):
            return np.zeros(0, np.uint32)
        roots = _holding_phrase(index, roots, [i for i in ids if i is not None])
    return roots


def _roots_first(
    index: SegmentIndex, query: ParsedQuery, ranked: Ranked, roots: np.ndarray, settings: SearchSettings
) -> Ranked:
    """``ranked`` with the named ``roots`` first (best score first), scored as ``retrieve``
    scores them where it did not list them. The count is unchanged: each root holds every
    word of the query and passed its filters, so it was counted among the matches."""
    listed = np.isin(ranked.docs, roots)
    missing = roots[~np.isin(roots, ranked.docs)]
    docs = np.concatenate([ranked.docs[listed], missing])
    final = np.concatenate([ranked.final[listed], np.zeros(missing.shape[0])])
    text = np.concatenate([ranked.text[listed], np.zeros(missing.shape[0])])
    if missing.shape[0]:
        looked_up = looked_up_words(index, query)
        terms = [query_term_group(index, ids, float(query.terms[t])) for t, ids in looked_up.items() if ids]
        prior = index.prior(settings.pagerank_weight)
        named = named_entry_pages(index, list(looked_up.values()), settings.entry_page_weight)
        prior, _top = with_entry_pages(index, named, prior, 0.0)
        scored = score_candidates(terms, missing, prior, int(missing.shape[0]))
        order = np.searchsorted(missing, scored.docs)  # missing is ascending
        final[listed.sum() + order] = scored.final
        text[listed.sum() + order] = scored.text
    first = top_k(docs, final, int(docs.shape[0]))
    rest = ~listed
    return Ranked(
        np.concatenate([docs[first], ranked.docs[rest]]).astype(np.uint32),
        np.concatenate([final[first], ranked.final[rest]]),
        np.concatenate([text[first], ranked.text[rest]]),
        ranked.total,
        ranked.exact,
    )
