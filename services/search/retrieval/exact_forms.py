"""The word as typed: among the top results, pages holding the query's words in the form the
user wrote them get a small bonus (a second-phase rescore, as Elasticsearch's ``rescore``
runs over a window of the first phase's hits).

The index is stemmed, so "organization" also finds pages that hold only "organ"; with the
text scores otherwise equal, the page holding "organization" is the better answer. Each
document's Bloom filter of its title and body word forms (``services.text.analysis.forms``) says
which pages hold which forms. The bonus multiplies the score by at most
``1 + EXACT_FORM_BONUS``: it orders near-equals and cannot lift a weak match over a strong one.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from services.compiled import compiled_on_first_use
from services.search.retrieval.rank import Ranked
from services.text.analysis.forms import form_pairs


class FormFilters(Protocol):
    """What the rescore asks of an index (a segment or a set of them, which warm this
    module's kernel when they open: they cannot be imported here)."""

    def form_shares(self, docs: np.ndarray, pairs: np.ndarray) -> np.ndarray: ...


EXACT_FORM_BONUS = 0.05  # the score of a page holding every query word as typed, times 1.05
RESCORE_WINDOW = 10  # first-phase hits rescored at least (Elasticsearch's rescore window default)


def exact_form_share(index: FormFilters, forms: list[str], docs: np.ndarray) -> np.ndarray:
    """The share of ``forms`` (the query's words as typed) each of ``docs`` holds."""
    if not forms or not docs.shape[0]:
        return np.zeros(docs.shape[0], dtype=np.float64)
    return index.form_shares(docs, form_pairs(forms))


def rescore_exact_forms(index: FormFilters, forms: list[str], ranked: Ranked, k: int) -> Ranked:
    """``ranked`` reordered by ``final * (1 + EXACT_FORM_BONUS * share)``, cut to ``k``
    (ties keep their first-phase order)."""
    if not ranked.docs.shape[0]:
        return ranked
    order, final = _rescored(ranked.final, exact_form_share(index, forms, ranked.docs), EXACT_FORM_BONUS, k)
    return ranked.taken(order, final)


def warm_up() -> None:
    """Compile ``_rescored`` (or load it from numba's cache) for the types queries pass."""
    _rescored(np.ones(2), np.zeros(2), EXACT_FORM_BONUS, 1)


@compiled_on_first_use
def _rescored(final, share, bonus, k):
    """(the first ``k`` positions by the new score, best first, ties in their old order; the
    new scores ``final * (1 + bonus * share)``, numpy's operations in numpy's order): one
    compiled call where numpy's five cost about 10 µs a query with its code out of the caches."""
    rescored = np.empty(final.shape[0], dtype=np.float64)
    for i in range(final.shape[0]):
        rescored[i] = final[i] * (1.0 + bonus * share[i])
    return np.argsort(-rescored, kind="mergesort")[:k], rescored
