"""The entry-page factor of one query, read from the segment (``services.ranking.entry_pages``).

A query's entry pages are the roots and subroots that hold every one of its words and that
it names (URL words, in-link anchor text, or most of the title). Each gets its factor
folded into the per-query prior, ``(1 + prior') = (1 + prior) * factor``, so every path
of ``retrieve`` (AND, OR with MaxScore, phrases, feedback) ranks by the same final score
and MaxScore's bound stays exact (the largest prior' is the bound). A query naming no
entry page (every informational query over pages without roots, such as Cranfield's)
gets the shared prior array back, untouched and uncopied.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from services.ranking.entry_pages import UrlKind, entry_factor, names_page
from services.search.retrieval.segment import SegmentIndex


def _field_tfs(index: SegmentIndex, term_ids: Sequence[int], docs: np.ndarray) -> dict[str, np.ndarray]:
    """The url, anchor and title frequencies of one query word in ``docs`` (ascending): its
    best form's, per field (a word's forms are its analyses in several languages)."""
    out = {name: np.zeros(docs.shape[0], dtype=np.uint32) for name in ("url", "anchor", "title")}
    for term_id in term_ids:
        start, end = index.posting_range(term_id)
        held = index.arrays["post_docs"][start:end]
        if held.shape[0] == 0:
            continue
        at = np.minimum(np.searchsorted(held, docs), held.shape[0] - 1)
        hit = held[at] == docs
        for name in out:
            tf = index.arrays[f"tf_{name}"][start + at]
            out[name] = np.maximum(out[name], np.where(hit, tf, 0))
    return out


def _in_site_name(index: SegmentIndex, term_ids: Sequence[int], docs: np.ndarray) -> np.ndarray:
    """Whether one query word (any of its forms) is in the site name of each of ``docs``."""
    offsets, names = index.arrays["site_name_offsets"], index.arrays["site_name_terms"]
    out = np.zeros(docs.shape[0], dtype=bool)
    starts, ends = offsets[docs].astype(np.int64), offsets[docs.astype(np.int64) + 1].astype(np.int64)
    for i in np.flatnonzero(ends > starts).tolist():  # the roots with a site name only
        out[i] = bool(np.isin(term_ids, names[starts[i] : ends[i]]).any())
    return out


def named_entry_pages(
    index: SegmentIndex, words: Sequence[Sequence[int]], weight: float
) -> tuple[np.ndarray, np.ndarray]:
    """(entry pages the query names, ascending; their factors, all above 1).

    ``words`` holds each query word's term ids (its forms in the index); a word the index
    lacks (no ids) means no page holds every word, so none is named.
    """
    none = np.zeros(0, np.uint32), np.zeros(0, np.float64)
    if weight <= 0 or not words or any(not ids for ids in words) or "url_kind" not in index.arrays:
        return none
    kinds = index.arrays["url_kind"]
    # A named page holds every word, so the rarest word's postings hold every candidate.
    rarest = min(words, key=lambda ids: sum(int(index.arrays["df"][i]) for i in ids))
    candidates = np.unique(np.concatenate([index.postings(i)[0] for i in rarest]))
    candidates = candidates[kinds[candidates] <= UrlKind.SUBROOT]
    if candidates.shape[0] == 0:
        return none
    tfs = [_field_tfs(index, ids, candidates) for ids in words]
    named = names_page(
        np.stack([t["url"] > 0 for t in tfs], axis=1),
        np.stack([t["anchor"] > 0 for t in tfs], axis=1),
        np.stack([t["title"] for t in tfs], axis=1),
        index.arrays["len_title"][candidates],
        np.stack([_in_site_name(index, ids, candidates) for ids in words], axis=1),
    )
    factor = entry_factor(kinds[candidates], named, weight)
    lifted = factor > 1.0
    return candidates[lifted].astype(np.uint32), factor[lifted]


def with_entry_pages(
    index: SegmentIndex, words: Sequence[Sequence[int]], prior: np.ndarray, top: float, weight: float
) -> tuple[np.ndarray, float]:
    """(the query's prior with its entry pages' factors folded in, its largest value)."""
    pages, factor = named_entry_pages(index, words, weight)
    if pages.shape[0] == 0:
        return prior, top
    lifted = prior.copy()  # the segment's cached prior is shared by every query
    lifted[pages] = (1.0 + prior[pages]) * factor - 1.0
    return lifted, max(top, float(lifted[pages].max()))
