"""MinHash signatures (equal to datasketch's) and near-duplicate groups."""

from __future__ import annotations

import random

import numpy as np
import pytest
from datasketch import MinHash

from services.text.analysis.minhash import (
    NUM_PERM,
    SEED,
    _resembles,
    near_duplicate_groups,
    signatures,
    term_rows,
)

WORDS = [f"w{i}" for i in range(600)] + ["zürich", "straße", "naïve"]


def forward(docs: list[set[str]]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """A forward index (offsets, term ids ascending per document) and its vocabulary."""
    vocab = sorted({t for d in docs for t in d})
    ids = {t: i for i, t in enumerate(vocab)}
    offsets, terms = [0], []
    for d in docs:
        terms += sorted(ids[t] for t in d)
        offsets.append(len(terms))
    return np.array(offsets, np.uint64), np.array(terms, np.uint32), vocab


def groups_of(docs: list[set[str]]) -> np.ndarray:
    offsets, terms, vocab = forward(docs)
    sigs = signatures(offsets, terms, term_rows([t.encode() for t in vocab]))
    return near_duplicate_groups(offsets, terms, sigs)


@pytest.mark.parametrize("seed", range(4))
def test_signatures_equal_datasketch_minhash(seed: int) -> None:
    rng = random.Random(seed)
    docs = [set(rng.sample(WORDS, rng.randint(1, 150))) for _ in range(30)] + [set()]
    offsets, terms, vocab = forward(docs)
    sigs = signatures(offsets, terms, term_rows([t.encode() for t in vocab]))
    for doc, ours in zip(docs[:-1], sigs[:-1], strict=True):
        theirs = MinHash(num_perm=NUM_PERM, seed=SEED, scheme="legacy")
        theirs.update_batch([t.encode() for t in doc])
        assert ours.tolist() == theirs.hashvalues.tolist()
    assert (sigs[-1] == np.iinfo(np.uint32).max).all()  # an empty document


def test_short_pages_a_token_or_two_apart_group_and_different_pages_do_not() -> None:
    rng = random.Random(7)
    error = set(rng.sample(WORDS, 30))  # a short "not found" page
    echoes = [error | {f"path{i}", "html"} for i in range(3)]  # each echoes its own path
    others = [set(rng.sample(WORDS, 40)) for _ in range(30)]
    half = others[0] | set(rng.sample(WORDS, 10))  # shares most words, but not 90 %
    tiny = [{"home"}, {"home"}]
    docs = [*others[:10], echoes[0], *others[10:20], echoes[1], *others[20:], echoes[2], half, *tiny]
    groups = groups_of(docs)
    assert groups[10] == 10 and groups[21] == 10 and groups[32] == 10
    folded = [d for d in range(len(docs)) if int(groups[d]) != d]
    assert folded == [21, 32]  # only the echoes; a page sharing ~80 % of words stays its own
    assert groups[-1] == len(docs) - 1  # too short to judge: never folded


def test_long_pages_with_a_changed_date_group_at_any_collection_order() -> None:
    rng = random.Random(11)
    notice = set(rng.sample(WORDS, 200))
    dated = [notice | {f"2006-05-{d}"} for d in range(10, 16)]
    docs = [set(rng.sample(WORDS, 200)) for _ in range(50)]
    positions = sorted(rng.sample(range(56), 6))
    for pos, page in zip(positions, dated, strict=True):
        docs.insert(pos, page)
    groups = groups_of(docs)
    assert {int(groups[p]) for p in positions} == {positions[0]}
    assert sum(int(groups[d]) != d for d in range(len(docs))) == 5


def test_resemblance_check_is_the_jaccard_of_the_sets_at_and_around_the_bound() -> None:
    rng = random.Random(3)
    for _ in range(300):
        x = set(rng.sample(range(400), rng.randint(1, 120)))
        kept = set(rng.sample(sorted(x), rng.randint(0, len(x))))
        y = kept | set(rng.sample(range(400), rng.randint(0, 12)))
        if not y:
            continue
        jaccard_holds = len(x & y) >= 0.9 * len(x | y)
        xs, ys = (np.array(sorted(s), dtype=np.uint32) for s in (x, y))
        assert _resembles(xs, ys, 0.9) == jaccard_holds
    exact = np.arange(10, dtype=np.uint32)  # 9 common of 10: exactly 0.9
    assert _resembles(exact, exact[:9], 0.9)
    assert not _resembles(exact, np.append(exact[:9], 11).astype(np.uint32), 0.9)  # 9 of 11


def test_pairs_of_too_different_sizes_are_never_alike_and_the_bound_itself_folds() -> None:
    """The length filter before the pair checks: n of m terms (n <= m) share at most n of a
    union of at least m, so n < 0.9 m can never resemble; exactly 0.9 m can, and folds."""
    rng = random.Random(13)
    for _ in range(300):
        x = set(rng.sample(range(300), rng.randint(10, 80)))
        y = set(rng.sample(sorted(x), rng.randint(1, len(x))))
        y |= set(rng.sample(range(300), rng.randint(0, 8)))
        n, m = sorted((len(x), len(y)))
        if n < 0.9 * m:
            xs, ys = (np.array(sorted(s), dtype=np.uint32) for s in (x, y))
            assert not _resembles(xs, ys, 0.9)
    page = set(rng.sample(WORDS, 20))
    kept = sorted(page)
    at_bound = set(kept[2:])  # 18 of 20: resemblance 0.9, sizes exactly 0.9 apart
    below = set(kept[3:])  # 17 of 20: 0.85
    others = [set(rng.sample(WORDS, 20)) for _ in range(20)]
    groups = groups_of([page, *others, at_bound, below])
    assert int(groups[21]) == 0  # folded into the page
    assert int(groups[22]) == 22  # its own


def test_the_kept_permutations_and_hash_are_the_librarys():
    """The default permutations are datasketch's, frozen as constants (its import costs the
    build's start-up half a second), and the 32-bit SHA-1 is the library's function."""
    from datasketch.hashfunc import sha1_hash32 as library_hash

    from services.text.analysis.minhash import permutations, sha1_hash32

    a, b = MinHash(num_perm=NUM_PERM, seed=SEED, scheme="legacy").permutations
    kept_a, kept_b = permutations()
    assert kept_a.dtype == kept_b.dtype == np.uint64
    assert np.array_equal(kept_a, a.astype(np.uint64)) and np.array_equal(kept_b, b.astype(np.uint64))
    other_a, _ = permutations(8, 3)  # other parameters: asked of the library
    assert np.array_equal(other_a, MinHash(num_perm=8, seed=3, scheme="legacy").permutations[0])
    for word in (b"", b"wing", "straße".encode(), bytes(range(256))):
        assert sha1_hash32(word) == library_hash(word)
