"""Phrase matching over the positions stored with each posting. Pure numpy.

A document matches the phrase t0 t1 ... tn when some position p has t0 at p,
t1 at p + 1, ... tn at p + n. For all candidate documents at once: for term
i, the keys ``doc << 32 | (p - i)`` of its positions; a document matches when
one key is in every term's set. Only the candidates' positions are decoded
(``SegmentIndex.positions``): the segment keeps them packed apart from the
postings (segment format 9).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

# Global posting numbers -> (positions per posting, the positions concatenated).
PositionReader = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]
# (term id, documents ascending) -> (whether each holds it, its posting numbers): SegmentIndex.locate.
Locator = Callable[[int, np.ndarray], tuple[np.ndarray, np.ndarray]]


def _keys(docs: np.ndarray, counts: np.ndarray, positions: np.ndarray, shift: int) -> np.ndarray:
    """Keys of one term's positions in ``docs`` (``counts[i]`` of them in ``docs[i]``)."""
    pos = positions.astype(np.int64) - shift
    owner = np.repeat(docs.astype(np.int64), counts)
    keep = pos >= 0
    return np.unique((owner[keep] << 32) | pos[keep])


def phrase_matches(
    candidates: np.ndarray,
    term_ids: Sequence[int],
    locate: Locator,
    read_positions: PositionReader,
) -> np.ndarray:
    """The candidates (ascending; each holds every phrase term) where the phrase occurs.

    ``term_ids`` are the phrase's terms in order. Every term's positions are read in one
    call: decoding them costs mostly per call, not per position.
    """
    if candidates.shape[0] == 0 or not term_ids:
        return candidates
    postings = np.concatenate([locate(term_id, candidates)[1] for term_id in term_ids])
    counts, positions = read_positions(postings)
    per_term = counts.reshape(len(term_ids), candidates.shape[0])
    bounds = np.cumsum(per_term.sum(axis=1))[:-1]
    common: np.ndarray | None = None
    for shift, (term_counts, term_positions) in enumerate(
        zip(per_term, np.split(positions, bounds), strict=True)
    ):
        keys = _keys(candidates, term_counts, term_positions, shift)
        common = keys if common is None else np.intersect1d(common, keys, assume_unique=True)
        if common.shape[0] == 0:
            return candidates[:0]
    if common is None:  # no terms: nothing to match
        return candidates[:0]
    return np.unique(common >> 32).astype(candidates.dtype)
