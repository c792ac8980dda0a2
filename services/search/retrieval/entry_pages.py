"""The entry pages one query names, read from the segment (``services.ranking.entry_pages``).

A query's named entry pages are the roots and subroots that hold every one of its words and
that it names (URL words, a root's site name, most of the title or of the in-link anchor
text). Their factors are folded into the query's prior, ``(1 + prior') = (1 + prior) *
factor``, so every path of ``retrieve`` (AND, OR with MaxScore, phrases, feedback) ranks by
the same final score and MaxScore's bound stays exact (the largest prior' is the bound);
``retrieve_ranked`` then lists the named roots first. A query naming no entry page (every
informational query over pages without roots, such as Cranfield's) gets the shared prior
array back, untouched and uncopied.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from services.ranking.entry_pages import UrlKind, entry_factor, names_by_url, names_page
from services.search.retrieval.segment import SegmentIndex

FIELDS = ("url", "anchor", "title")


_ROOT = int(UrlKind.ROOT)  # numpy compares with an int at once, with an enum member slowly


@dataclass(frozen=True)
class NamedPages:
    """The entry pages a query names: doc numbers ascending, their URL forms and factors."""

    docs: np.ndarray  # uint32
    kinds: np.ndarray  # uint8, UrlKind values
    factors: np.ndarray  # float64, above 1

    @property
    def roots(self) -> np.ndarray:
        if not self.docs.shape[0]:  # most queries name no page: no comparison with an enum
            return self.docs
        return self.docs[self.kinds == _ROOT]


NONE = NamedPages(np.zeros(0, np.uint32), np.zeros(0, np.uint8), np.zeros(0, np.float64))


def _field_tfs(index: SegmentIndex, term_ids: Sequence[int], docs: np.ndarray) -> dict[str, np.ndarray]:
    """One query word in ``docs`` (ascending): whether each holds it (``held``) and its url,
    anchor and title frequencies, its best form's per field (a word's forms are its
    analyses in several languages)."""
    out = {name: np.zeros(docs.shape[0], dtype=np.uint32) for name in FIELDS}
    out["held"] = np.zeros(docs.shape[0], dtype=np.uint32)
    for term_id in term_ids:
        hit, postings = index.locate(term_id, docs)
        out["held"] |= hit
        if not hit.any():
            continue
        for name, tfs in zip(FIELDS, index.field_tfs_many(FIELDS, postings[hit]), strict=True):
            found = np.zeros(docs.shape[0], dtype=np.uint32)
            found[hit] = tfs
            out[name] = np.maximum(out[name], found)
    return out


def _can_name(index: SegmentIndex, term_ids: Sequence[int]) -> bool:
    """Whether a query word found in a URL can name a site: not "www", "org" or a number."""
    return any(names_by_url(index.term(i)) for i in term_ids)


def named_entry_pages(index: SegmentIndex, words: Sequence[Sequence[int]], weight: float) -> NamedPages:
    """The entry pages the query names, with their factors.

    ``words`` holds each query word's term ids (its forms in the index); a word the index
    lacks (no ids) means no page holds every word, so none is named.
    """
    entries = index.entry_docs
    if weight <= 0 or not words or any(not ids for ids in words) or entries.shape[0] == 0:
        return NONE
    kinds = index.arrays["url_kind"]
    # A named page holds every word, so the rarest word's postings hold every candidate.
    rarest = min(words, key=lambda ids: sum(int(index.arrays["df"][i]) for i in ids))
    candidates = _entries_holding(index, entries, rarest, kinds)
    if candidates.shape[0] == 0:
        return NONE
    tfs = [_field_tfs(index, ids, candidates) for ids in words]
    holds_all = np.stack([t["held"] > 0 for t in tfs], axis=1).all(axis=1)
    named = holds_all & names_page(
        np.stack([(t["url"] > 0) & _can_name(index, ids) for t, ids in zip(tfs, words, strict=True)], axis=1),
        np.stack([index.site_name_holds(ids, candidates) for ids in words], axis=1),
        np.stack([t["title"] for t in tfs], axis=1),
        index.arrays["len_title"][candidates],
        np.stack([t["anchor"] for t in tfs], axis=1),
        index.arrays["len_anchor"][candidates],
    )
    factors = entry_factor(kinds[candidates], named, weight)
    lifted = factors > 1.0
    return NamedPages(
        candidates[lifted].astype(np.uint32), kinds[candidates][lifted].astype(np.uint8), factors[lifted]
    )


def _entries_holding(
    index: SegmentIndex, entries: np.ndarray, term_ids: Sequence[int], kinds: np.ndarray
) -> np.ndarray:
    """The entry pages (``entries``, ascending) holding any of ``term_ids``, ascending: the
    entries looked up in the lists (``locate``) when they are the fewer (a site has one root
    and a few section roots), else the lists' documents filtered by their URL kind."""
    parts = [index.posting_docs(i) for i in term_ids]
    if entries.shape[0] < sum(p.shape[0] for p in parts):
        held = np.zeros(entries.shape[0], dtype=bool)
        for term_id in term_ids:
            held |= index.locate(term_id, entries)[0]
        return entries[held]
    candidates = parts[0] if len(parts) == 1 else np.unique(np.concatenate(parts))
    return candidates[kinds[candidates] <= UrlKind.SUBROOT].astype(np.uint32)


def with_entry_pages(
    index: SegmentIndex, named: NamedPages, prior: np.ndarray, top: float
) -> tuple[np.ndarray, float]:
    """(the query's prior with its named entry pages' factors folded in, its largest value)."""
    if named.docs.shape[0] == 0:
        return prior, top
    lifted = prior.copy()  # the segment's cached prior is shared by every query
    lifted[named.docs] = (1.0 + prior[named.docs]) * named.factors - 1.0
    return lifted, max(top, float(lifted[named.docs].max()))
