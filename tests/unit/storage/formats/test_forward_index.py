"""The forward index's coded form (services.storage.formats.forward_index): the compiled reader
and the numpy one give the plain entries back, exactly, on hostile documents, and the code
they read is a prefix code no longer than the table."""

from __future__ import annotations

import heapq
from pathlib import Path

import numpy as np
import pytest

from services.compiled import as_mapped
from services.storage.formats.forward_index import (
    FORWARD_ARRAYS,
    _forward_entries,
    canonical_codes,
    code_lengths,
    compact_forward,
    forward_lists,
    forward_lists_reference,
)
from services.storage.formats.segment import FORWARD_CODE_BITS, open_segment, write_segment

TERM_MAX = 2**32 - 1  # term ids are uint32
TF_MAX = 2**16 - 1  # frequencies uint16


def stored(per_doc: list[np.ndarray], tfs: list[np.ndarray]) -> dict[str, np.ndarray]:
    """A segment's forward arrays of these documents (term ids ascending, frequencies),
    mapped read-only as a segment's are."""
    counts = [t.shape[0] for t in per_doc]
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.uint64)
    terms = np.concatenate([np.zeros(0, np.uint32), *per_doc]).astype(np.uint32)
    freqs = np.concatenate([np.zeros(0, np.uint16), *tfs]).astype(np.uint16)
    arrays = {"fwd_offsets": offsets, **compact_forward(offsets, terms, freqs)}
    assert sorted(arrays) == sorted(FORWARD_ARRAYS)
    return {name: as_mapped(array) for name, array in arrays.items()}


def readers_disagreements(
    arrays: dict[str, np.ndarray], per_doc: list[np.ndarray], tfs: list[np.ndarray]
) -> list[str]:
    """Where the compiled reader or the numpy one does not give ``per_doc`` and ``tfs`` back
    (int64), asked every document alone, all of them, the last, a document twice, none."""
    wrong = []
    n = len(per_doc)
    asks = [np.arange(n), np.arange(n)[::-1], np.zeros(0, np.int64)]
    asks += [np.array([d]) for d in range(n)]
    if n:
        asks.append(np.array([n - 1, 0, n - 1]))
    for docs in asks:
        got, reference = forward_lists(arrays, docs), forward_lists_reference(arrays, docs)
        want = (
            [per_doc[d].shape[0] for d in docs.tolist()],
            [t for d in docs.tolist() for t in per_doc[d].tolist()],
            [f for d in docs.tolist() for f in tfs[d].tolist()],
        )
        for name, read in (("compiled", got), ("numpy", reference)):
            if [a.tolist() for a in read] != list(want) or any(a.dtype != np.int64 for a in read):
                wrong.append(f"{name} reader, documents {docs.tolist()}")
    return wrong


def hostile(seed: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Empty documents, one entry, term ids 0 and 2**32 - 1 (the widest gap there is, in one
    document), dense and sparse vocabularies, frequencies 0, 1 and 65,535, and enough
    documents that their starts fall on every bit of a word."""
    rng = np.random.default_rng(seed)
    per_doc = [
        np.zeros(0, np.int64),
        np.array([0]),
        np.array([TERM_MAX]),
        np.array([0, TERM_MAX]),
        np.array([0, 1, 2, 3, 2**31, TERM_MAX - 1, TERM_MAX]),
    ]
    for _ in range(60):
        size = int(rng.choice([0, 1, 2, 31, 33, 200]))
        vocabulary = int(rng.choice([300, 200_000, TERM_MAX]))
        per_doc.append(np.sort(rng.choice(vocabulary, min(size, vocabulary), replace=False)))
    per_doc.append(np.zeros(0, np.int64))  # the last document empty
    per_doc.append(np.array([5, 6, TERM_MAX]))  # ... and one after it
    tfs = [rng.choice([0, 1, 1, 1, 2, 3, 7, 255, 256, TF_MAX], t.shape[0]) for t in per_doc]
    tfs[2] = np.array([TF_MAX])
    tfs[3] = np.array([0, TF_MAX])
    return per_doc, tfs


@pytest.mark.parametrize("seed", range(4))
def test_both_readers_give_hostile_documents_back(seed: int) -> None:
    per_doc, tfs = hostile(seed)
    assert readers_disagreements(stored(per_doc, tfs), per_doc, tfs) == []


def test_a_segment_without_entries_and_one_of_a_single_pair() -> None:
    nothing = [np.zeros(0, np.int64)] * 3
    arrays = stored(nothing, nothing)
    assert arrays["fwd_starts"].tolist() == [0, 0, 0, 0] and arrays["fwd_bits"].tolist() == [0, 0]
    assert readers_disagreements(arrays, nothing, nothing) == []
    same = [np.arange(0, 2 * n, 2) + 2 for n in (1, 40, 0, 7)]  # every gap 2, every frequency 1
    ones = [np.ones(t.shape[0], np.int64) for t in same]
    arrays = stored(same, ones)
    assert int(arrays["fwd_starts"][-1]) == 48 * 2  # 1 bit of code, 1 below the gap's top, 0 for 1
    assert readers_disagreements(arrays, same, ones) == []


def test_every_pair_of_widths_at_once_needs_codes_of_the_longest_length() -> None:
    """All 33 x 17 pairs (one-entry documents: the gap is the term id), three far more common
    than the rest: codes of 1, 2 and 3 bits, and the other 558 would take 13 bits, cut to
    FORWARD_CODE_BITS."""
    rng = np.random.default_rng(9)

    def of_bits(bits: int) -> int:  # a random number of exactly ``bits`` bits
        return 0 if bits == 0 else (1 << (bits - 1)) | int(rng.integers(0, 1 << (bits - 1)))

    common = [(7, 1)] * 5000 + [(8, 1)] * 2500 + [(9, 1)] * 1250
    pairs = [(g, t) for g in range(33) for t in range(17)] + common
    per_doc = [np.array([of_bits(g)]) for g, _ in pairs]
    tfs = [np.array([of_bits(t)]) for _, t in pairs]
    arrays = stored(per_doc, tfs)
    assert int(arrays["fwd_code_lengths"].max()) == FORWARD_CODE_BITS
    assert readers_disagreements(arrays, per_doc, tfs) == []


def huffman_cost(counts: np.ndarray) -> int:
    heap = [int(c) for c in counts if c > 0]
    heapq.heapify(heap)
    cost = 0
    while len(heap) > 1:
        merged = heapq.heappop(heap) + heapq.heappop(heap)
        cost += merged
        heapq.heappush(heap, merged)
    return cost


@pytest.mark.parametrize("seed", range(6))
def test_the_code_is_an_optimal_prefix_code_within_its_length_limit(seed: int) -> None:
    rng = np.random.default_rng(seed)
    sparse = rng.integers(0, 1000, 561) * (rng.random(561) < 0.3)
    lengths = code_lengths(sparse, 30)
    assert int((lengths * sparse).sum()) == huffman_cost(sparse)  # unlimited: Huffman's cost
    fibonacci = np.array([1, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377, 610, 987, 1597, 2584])
    for counts in (sparse, fibonacci):
        lengths = code_lengths(counts, FORWARD_CODE_BITS)
        assert lengths.max() <= FORWARD_CODE_BITS and ((lengths > 0) == (counts > 0)).all()
        assert sum(2.0 ** -int(n) for n in lengths if n) <= 1.0  # Kraft: a prefix code
        codes = canonical_codes(lengths)
        words = {format(int(codes[s]), f"0{int(lengths[s])}b") for s in np.flatnonzero(lengths)}
        assert not any(a != b and b.endswith(a) for a in words for b in words)  # read from the low bit
    assert code_lengths(fibonacci, 30).max() == 17  # what the limit cut


def test_terms_out_of_order_are_refused() -> None:
    with pytest.raises(ValueError, match="ascending"):
        compact_forward(np.array([0, 2], np.uint64), np.array([9, 4], np.uint32), np.ones(2, np.uint16))


def test_a_mapped_segment_reads_with_the_signature_the_warm_up_compiled(tmp_path: Path) -> None:
    """The search side's warm-up passes empty read-only arrays of the contract's dtypes; a
    segment opened from its file is read without compiling the reader again."""
    from services.search.retrieval.segment import warm_kernels

    warm_kernels()
    warmed = set(map(str, _forward_entries.signatures))
    per_doc, tfs = hostile(0)
    arrays = stored(per_doc, tfs)
    path = tmp_path / "fwd.nseg"
    with path.open("wb") as fh:
        write_segment(fh, {name: np.asarray(array) for name, array in arrays.items()}, {})
    mapped, _ = open_segment(path)
    assert readers_disagreements(mapped, per_doc, tfs) == []
    assert set(map(str, _forward_entries.signatures)) == warmed
