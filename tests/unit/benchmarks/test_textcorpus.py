"""The benchmark corpus's ``--distinct`` documents (benchmarks/textcorpus.py): no two alike."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import numpy as np
import pytest

from benchmarks.textcorpus import DATA, build, scattered_indices
from services.text.analysis.minhash import near_duplicate_groups, signatures, term_rows


def test_scattered_indices_stay_in_a_neighbourhood_in_order() -> None:
    rng = random.Random(7)
    for _ in range(2000):
        picked = scattered_indices(rng, 16_000)
        n = len(picked)
        assert 3 <= n <= 40
        assert picked == sorted(set(picked))  # distinct, in the text's order
        assert picked[0] >= 0 and picked[-1] < 16_000
        assert picked[-1] - picked[0] < 3 * n + 10  # within the neighbourhood
    assert scattered_indices(random.Random(1), 5) == list(range(5))  # fewer sentences than asked


@pytest.fixture(scope="module")
def distinct_corpus(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, str]]:
    out = tmp_path_factory.mktemp("corpus")
    build(DATA, 20_000, 50, out, distinct=True)
    with (out / "docs.jsonl").open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def test_distinct_documents_are_never_identical(distinct_corpus: list[dict[str, str]]) -> None:
    assert len(distinct_corpus) == 20_000
    assert len({d["text"] for d in distinct_corpus}) == 20_000


def test_distinct_documents_are_almost_never_near_duplicates(distinct_corpus: list[dict[str, str]]) -> None:
    # The index's own near-duplicate check (MinHash candidates, then the exact term sets at a
    # resemblance of 0.9) over each document's set of words.
    ids: dict[str, int] = {}
    rows = [
        sorted({ids.setdefault(w, len(ids)) for w in re.findall(r"\w+", d["text"].lower())})
        for d in distinct_corpus
    ]
    offsets = np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype(np.uint64)
    terms = np.concatenate([np.array(r, dtype=np.uint32) for r in rows])
    vocabulary = sorted(ids, key=ids.__getitem__)
    sigs = signatures(offsets, terms, term_rows([w.encode() for w in vocabulary]))
    groups = near_duplicate_groups(offsets, terms, sigs)
    folded = int((groups != np.arange(len(rows))).sum())
    assert folded <= len(rows) // 1000  # (almost) none: the window corpus folds most at 1M


def test_the_default_corpus_is_the_contiguous_window(tmp_path: Path) -> None:
    build(DATA, 50, 5, tmp_path)
    with (tmp_path / "docs.jsonl").open(encoding="utf-8") as fh:
        first = json.loads(fh.readline())
    assert first["title"] == " ".join(first["text"].split()[:8])  # a window starts at its title
