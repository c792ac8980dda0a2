"""An AND and an OR over a segment's own lists, read by term id without the query's lists
built (``retrieve``'s in-place path), find what the general path finds: the same documents,
scores, counts and modes, when the AND is the answer, when it falls short, with and without
RM3 feedback."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest

from services.config.search import SearchSettings
from services.search.query.language import parse_query
from services.search.retrieval import retrieve as retrieval
from services.search.retrieval.segment import SegmentIndex
from tests.unit.search.retrieval.web_pages import index_of

WORDS = ["glacier", "moraine", "fjord", "river", "valley", "ice", "meltwater", "lake", "peak", "snow"]


def _pages(rng: np.random.Generator) -> list[tuple[str, str, str, str]]:
    pages = []
    for n in range(400):
        held = rng.choice(WORDS, size=int(rng.integers(1, 6)), replace=False)
        body = " ".join(rng.choice(held, size=int(rng.integers(3, 20))))
        pages.append((f"http://site{n % 9}.test/p{n}", f"Page {n} {held[0]}", body, ""))
    return pages


@dataclass(frozen=True, eq=False)
class _General(SegmentIndex):
    """The same segment, its lists taken through the general path (``QueryTerm``s built)."""

    LISTS_IN_PLACE: ClassVar[bool] = False


QUERIES = [
    "glacier moraine",
    "glacier glacier moraine",  # a word twice: its weight 2
    "+glacier +moraine",
    "glacier moraine fjord river",  # few hold all four: partial matches follow
    "+glacier +moraine +fjord +river +valley",  # strict: however few
    "ice -lake snow",
    "peak snow valley",
    "+peak snow",  # a required word's mask, the rest as usual
    "glacier absentword",
    "+glacier +absentword",
    "glacier OR fjord OR lake",
    "ice OR snow OR peak OR river",
    "glacier moraine fjord river valley",  # AND falls short: the OR with feedback
    '"glacier moraine" fjord',  # a phrase: the lists built
]


@pytest.mark.parametrize("seed", range(3))
def test_the_in_place_lists_rank_as_the_general_path(seed: int) -> None:
    index = index_of(_pages(np.random.default_rng(seed)))
    general = _General(index.version_id, index.segment, index.path, index.meta, index.arrays)
    assert index.LISTS_IN_PLACE and not general.LISTS_IN_PLACE
    modes = set()
    for q in QUERIES:
        for k in (1, 10, 1000):
            query = parse_query(q)
            for min_results, pool, fb_docs in (
                (1, 30, 10),
                (10, 30, 10),
                (50, 30, 10),
                (50, 0, 10),
                (50, 30, 0),
            ):
                settings = SearchSettings(
                    and_min_results=min_results, feedback_pool=pool, feedback_docs=fb_docs
                )
                got = retrieval.retrieve(index, query, k, settings)
                want = retrieval.retrieve(general, query, k, settings)
                assert (got.mode, got.found, got.all_words) == (want.mode, want.found, want.all_words), q
                assert got.ranked.docs.tolist() == want.ranked.docs.tolist(), q
                assert got.ranked.final.tolist() == want.ranked.final.tolist(), q
                assert (got.ranked.total, got.ranked.exact) == (want.ranked.total, want.ranked.exact), q
                modes.add(got.mode)
    assert {"and", "and+or", "or", "or+feedback", "phrase", "none"} <= modes
