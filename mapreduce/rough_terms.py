"""A flush's rough tokens turned into index terms and written forms: the word regex, the stop
list and the stemmer once per distinct rough token (``rough_terms``), and what a map task
keeps of those analyses from one flush to the next (``RoughAnalyses``). Pure; the buffer
(``mapreduce.postings.PostingBuffer``) numbers the rough tokens and calls it at each drain."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from services.text.analysis.analyze import rough_surfaces, surface_form, terms_of

ROUGH_ANALYSES_KEPT = 300_000  # entries a table of RoughAnalyses keeps into the next flush (tens of MB)


class RoughAnalyses:
    """What each rough token analyzes to, kept from one flush of a task's buffer to the next:
    its surface tokens (the word regex), each surface's term in each analysis (the stop list
    and the stemmer) and its written form. A task's flushes share most of their vocabulary
    (a second flush of the benchmark's pages held 38,400 of its 61,039 distinct rough tokens
    in the first), and these steps are the drain's Python, once per distinct token and flush.
    A table past ``limit`` entries is emptied before a flush fills it again: the tokens that
    recur come back at once, the rare ones (most of a large task's vocabulary) are let go."""

    def __init__(self, limit: int = ROUGH_ANALYSES_KEPT) -> None:
        self.limit = limit
        self._surfaces: dict[bytes, list[str]] = {}
        self._terms: dict[str, dict[str, str]] = {}  # analysis -> surface -> term ("": dropped)
        self._forms: dict[str, str] = {}  # surface -> its written form (``surface_form``)

    def surfaces_of(self, roughs: list[bytes]) -> list[list[str]]:
        """The surface tokens of each rough token (``rough_surfaces``)."""
        known = self._surfaces
        out = []
        for rough in roughs:
            surfaces = known.get(rough)
            if surfaces is None:
                surfaces = known[rough] = rough_surfaces(rough)
            out.append(surfaces)
        return out

    def terms_of(self, surfaces: list[str], key: str) -> dict[str, str]:
        """Each of the distinct ``surfaces``' term in analysis ``key`` (``terms_of``), in
        their order."""
        known = self._terms.setdefault(key, {})
        new = [s for s in surfaces if s not in known]
        if new:
            known.update(zip(new, terms_of(new, key), strict=True))
        return {s: known[s] for s in surfaces}

    def form_of(self, surface: str) -> str:
        """``surface_form(surface)``."""
        form = self._forms.get(surface)
        if form is None:
            form = self._forms[surface] = surface_form(surface)
        return form

    def start_flush(self) -> None:
        """Empty the tables that have outgrown ``limit``, before a flush looks tokens up."""
        tables: list[dict[Any, Any]] = [self._surfaces, self._forms, *self._terms.values()]
        for table in tables:
            if len(table) > self.limit:
                table.clear()


def rough_terms(
    roughs: list[bytes], keys: list[str] | str, analyses: RoughAnalyses | None = None
) -> tuple[list[str], np.ndarray, np.ndarray, list[str], np.ndarray]:
    """(the terms, ascending; the kept term ids of all rough tokens, one after another; how
    many each one holds; the distinct written forms; the form id of each kept word, parallel
    to the term ids), with the word regex run once per distinct rough token and the stop
    list and the stemmer once per distinct surface token of each analysis, or not at all
    for those ``analyses`` kept from an earlier flush. ``keys`` is each rough token's
    analysis, or the one analysis of them all (the usual block)."""
    if analyses is None:
        analyses = RoughAnalyses()
    analyses.start_flush()
    surfaces_of = analyses.surfaces_of(roughs)
    if isinstance(keys, str):
        surfaces = list(dict.fromkeys(itertools.chain.from_iterable(surfaces_of)))
        by_key = {keys: analyses.terms_of(surfaces, keys)}
    else:
        distinct: dict[str, dict[str, None]] = {}
        for key, ss in zip(keys, surfaces_of, strict=True):
            distinct.setdefault(key, {}).update(dict.fromkeys(ss))
        by_key = {key: analyses.terms_of(list(surfaces), key) for key, surfaces in distinct.items()}
    vocab = sorted({t for terms in by_key.values() for t in terms.values()} - {""})
    ids = dict(zip(vocab, range(len(vocab)), strict=True))
    # Per analysis: surface -> (term id, written form) of each kept surface.
    forms: list[str] = []
    form_ids: dict[str, int] = {}
    kept_by_key: dict[str, dict[str, tuple[int, int]]] = {}
    for key, terms in by_key.items():
        kept: dict[str, tuple[int, int]] = {}
        for surface, term in terms.items():
            if term:
                form = analyses.form_of(surface)
                form_id = form_ids.get(form)
                if form_id is None:
                    form_id = form_ids[form] = len(forms)
                    forms.append(form)
                kept[surface] = (ids[term], form_id)
        kept_by_key[key] = kept
    if isinstance(keys, str):
        kept = kept_by_key[keys]
        pairs_of = [[kept[s] for s in ss if s in kept] for ss in surfaces_of]
    else:
        pairs_of = [
            [kept[s] for s in ss if s in kept]
            for kept, ss in zip(map(kept_by_key.__getitem__, keys), surfaces_of, strict=True)
        ]
    count = np.fromiter(map(len, pairs_of), dtype=np.int32, count=len(pairs_of))
    total = int(count.sum(dtype=np.int64))
    both = np.fromiter(
        itertools.chain.from_iterable(itertools.chain.from_iterable(pairs_of)),
        dtype=np.int32,
        count=2 * total,
    ).reshape(-1, 2)
    # The written form of each kept word, as ids into ``forms`` (services.text.analysis.forms).
    return vocab, np.ascontiguousarray(both[:, 0]), count, forms, np.ascontiguousarray(both[:, 1])
