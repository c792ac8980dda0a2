"""Term lookups: the in-memory sample of every 64th term, then one block of the map."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from services.search.retrieval.segment import SegmentIndex
from services.search.retrieval.term_dictionary import TERM_SAMPLE


def dictionary(terms: list[str]) -> SegmentIndex:
    encoded = sorted({t.encode("utf-8") for t in terms})  # the segment's UTF-8 byte order
    offsets = np.zeros(len(encoded) + 1, dtype=np.uint64)
    np.cumsum([len(t) for t in encoded], out=offsets[1:])
    arrays = {
        "term_bytes": np.frombuffer(b"".join(encoded), dtype=np.uint8),
        "term_offsets": offsets,
        "df": np.ones(len(encoded), dtype=np.uint32),
    }
    return SegmentIndex(0, "test", Path("test.nseg"), {}, arrays)


@pytest.mark.parametrize("size", [1, TERM_SAMPLE - 1, TERM_SAMPLE, TERM_SAMPLE + 1, 1_000])
def test_every_term_is_found_at_its_rank_and_nothing_else_is(size):
    rng = random.Random(size)
    alphabet = "abcdeéßж中_0"
    words = {"".join(rng.choices(alphabet, k=rng.randint(1, 9))) for _ in range(size * 2)}
    terms = sorted(words, key=lambda t: t.encode("utf-8"))[:size]
    index = dictionary(terms)
    assert index.num_terms == len(terms)
    for rank, term in enumerate(terms):
        assert index.term_id(term) == rank
        assert index.term(rank) == term
    present = set(terms)
    absent = ["", "\x00", "zzzzzz", "\U0010ffff", *(t + "a" for t in terms), *(t[:-1] for t in terms)]
    for word in absent:
        if word not in present:
            assert index.term_id(word) is None, word


def test_an_empty_dictionary_finds_nothing():
    assert dictionary([]).term_id("wing") is None
