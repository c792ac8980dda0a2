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

import numpy as np

from services.search.retrieval.rank import Ranked
from services.search.retrieval.segment import SegmentIndex
from services.text.analysis.forms import form_pairs

EXACT_FORM_BONUS = 0.05  # the score of a page holding every query word as typed, times 1.05
RESCORE_WINDOW = 10  # first-phase hits rescored at least (Elasticsearch's rescore window default)


def exact_form_share(index: SegmentIndex, forms: list[str], docs: np.ndarray) -> np.ndarray:
    """The share of ``forms`` (the query's words as typed) each of ``docs`` holds."""
    if not forms or not docs.shape[0]:
        return np.zeros(docs.shape[0], dtype=np.float64)
    return index.form_shares(docs, form_pairs(forms))


def rescore_exact_forms(index: SegmentIndex, forms: list[str], ranked: Ranked, k: int) -> Ranked:
    """``ranked`` reordered by ``final * (1 + EXACT_FORM_BONUS * share)``, cut to ``k``
    (ties keep their first-phase order)."""
    if not ranked.docs.shape[0]:
        return ranked
    final = ranked.final * (1.0 + EXACT_FORM_BONUS * exact_form_share(index, forms, ranked.docs))
    return ranked.taken(np.argsort(-final, kind="stable")[:k], final)
