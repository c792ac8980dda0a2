"""Document numbers in blocks (services.storage.formats.doc_blocks): every term's list comes
back exactly, from any term range, whatever its length and spread."""

from __future__ import annotations

import numpy as np
import pytest

from services.storage.formats.bitpack import BLOCK
from services.storage.formats.doc_blocks import DocBlocks, check_doc_blocks, list_blocks, pack_docs


def lists_of(lengths: list[int], seed: int, top: int = 2**32 - 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    docs = [np.sort(rng.choice(top, n, replace=False)) for n in lengths]
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.uint64)
    return np.concatenate([np.zeros(0, np.int64), *docs]).astype(np.uint32), offsets


def stored(docs: np.ndarray, offsets: np.ndarray) -> DocBlocks:
    return DocBlocks.of({"post_offsets": offsets, **pack_docs(docs, offsets)})


@pytest.mark.parametrize(
    "lengths",
    [[], [0], [1], [0, 1, 0], [BLOCK - 1, BLOCK, BLOCK + 1], [2 * BLOCK, 1, 3 * BLOCK + 7, 0, 2], [5000]],
)
@pytest.mark.parametrize("top", [2**32 - 1, 300_000, 6000])
def test_every_list_comes_back(lengths: list[int], top: int) -> None:
    if sum(lengths) > top:
        pytest.skip("more postings than documents")
    docs, offsets = lists_of(lengths, len(lengths) + top, top)
    blocks = stored(docs, offsets)
    bounds = offsets.astype(np.int64)
    for t in range(len(lengths)):
        assert blocks.term_docs(t).tolist() == docs[bounds[t] : bounds[t + 1]].tolist()
    if lengths:
        assert blocks.range_docs(0, len(lengths)).tolist() == docs.tolist()
        assert (
            blocks.range_docs(len(lengths) // 2, len(lengths)).tolist()
            == docs[bounds[len(lengths) // 2] :].tolist()
        )


def test_the_widest_blocks_and_the_narrowest() -> None:
    """Documents 0 and 2 ** 32 - 1 in one block (32 bits an offset); a block of one document
    and a block of consecutive documents (no bits, one bit) take no words or a few."""
    offsets = np.array([0, 2, 3, 5, 6], np.uint64)
    docs = np.array([0, 2**32 - 1, 7, 8, 9, 12], np.uint32)
    packed = pack_docs(docs, offsets)
    assert packed["doc_block_bits"].tolist() == [32, 0, 1, 0]
    assert packed["doc_block_base"].tolist() == [0, 7, 8, 12]
    assert packed["doc_words"].shape[0] == 2 + 0 + 1 + 0 + 2  # 64 bits, none, 2 bits, none; 2 spare
    assert stored(docs, offsets).range_docs(0, 4).tolist() == docs.tolist()


def test_blocks_are_counted_from_each_list_start() -> None:
    offsets = np.array([0, 1, 1 + BLOCK, 2 + 2 * BLOCK], np.uint64)
    assert list_blocks(offsets).tolist() == [0, 1, 2, 4]


def test_a_list_out_of_order_is_refused() -> None:
    with pytest.raises(ValueError, match="ascending"):
        pack_docs(np.array([5, 3], np.uint32), np.array([0, 2], np.uint64))
    with pytest.raises(ValueError, match="ascending"):
        pack_docs(np.array([1, 9, 3], np.uint32), np.array([0, 3], np.uint64))
    with pytest.raises(ValueError, match="ascending"):  # a fall from one block to the next
        pack_docs(
            np.arange(BLOCK + 1).astype(np.uint32) // np.array([1] * BLOCK + [2]),
            np.array([0, BLOCK + 1], np.uint64),
        )
    pack_docs(np.array([4, 9, 3], np.uint32), np.array([0, 2, 3], np.uint64))  # two lists: no error


def test_many_blocks_packed_in_several_passes_are_one_stream() -> None:
    """More blocks than one numpy pass packs (``_PACK_BLOCKS``): the passes' words join."""
    lengths = [1, 3] * 5000 + [BLOCK + 1] * 40
    docs, offsets = lists_of(lengths, 9, 100_000)
    blocks = stored(docs, offsets)
    assert blocks.range_docs(0, len(lengths)).tolist() == docs.tolist()


def test_a_segment_whose_blocks_do_not_match_its_postings_is_refused() -> None:
    """Blocks for other offsets, a width past 32, words cut short: refused when the segment
    is written or opened, naming the array, not read wrong in a query."""
    docs, offsets = lists_of([3, BLOCK + 2], 4, 5000)
    good = {"post_offsets": offsets, **pack_docs(docs, offsets)}
    check_doc_blocks(good)
    bad_cases = [
        ({"post_offsets": np.array([0, BLOCK + 5], np.uint64)}, "blocks"),  # one term: 2 blocks, not 3
        ({"doc_block_bits": np.array([40, 1, 1], np.uint8)}, "above 32"),
        ({"doc_words": good["doc_words"][:-1]}, "doc_words holds"),
    ]
    for change, why in bad_cases:
        with pytest.raises(ValueError, match=why):
            check_doc_blocks({**good, **change})


def test_several_terms_are_located_at_once_as_each_alone() -> None:
    """``locate_terms``: one row per term (empty lists, one block, many), as ``locate`` gives;
    with values per posting, the value at each posting found and 0 elsewhere."""
    lengths = [0, 1, BLOCK, 3 * BLOCK + 7, 5000, 2]
    docs, offsets = lists_of(lengths, 9, 20_000)
    blocks = stored(docs, offsets)
    targets = np.unique(np.random.default_rng(3).integers(0, 20_000, 300)).astype(np.int64)
    targets = np.union1d(targets, docs[:: BLOCK // 2].astype(np.int64))
    terms = np.array([4, 0, 2, 5, 3, 1, 4], np.int64)  # any order, one twice
    held, at, none = blocks.locate_terms(terms, targets)
    assert held.shape == at.shape == (terms.shape[0], targets.shape[0]) and none.shape == (0, 0)
    assert held.any()
    values = (np.arange(docs.shape[0]) % 250 + 1).astype(np.uint8)  # none 0: a 0 below means "not held"
    again, _, found = blocks.locate_terms(terms, targets, values)
    assert again.tolist() == held.tolist()
    for row, t in enumerate(terms.tolist()):
        alone = blocks.locate(t, targets)
        assert held[row].tolist() == alone[0].tolist()
        assert at[row][held[row]].tolist() == alone[1][alone[0]].tolist()
        want = np.zeros(targets.shape[0], np.uint8)
        want[held[row]] = values[int(offsets[t]) + at[row][held[row]]]
        assert found[row].tolist() == want.tolist()


@pytest.mark.parametrize("lengths", [[0, 1], [BLOCK - 1, BLOCK, BLOCK + 1], [3 * BLOCK + 7, 2], [5000]])
def test_locate_finds_what_each_list_holds_and_only_that(lengths: list[int]) -> None:
    """Documents held, below the first, above the last, between two blocks, the first and
    last of a block, repeated and out of order: the block-by-block lookup agrees with a
    search of the decoded list."""
    docs, offsets = lists_of(lengths, 3, 20_000)
    blocks = stored(docs, offsets)
    rng = np.random.default_rng(5)
    bounds = offsets.astype(np.int64)
    for t in range(len(lengths)):
        held = docs[bounds[t] : bounds[t + 1]].astype(np.int64)
        edges = held[::BLOCK].tolist() + held[BLOCK - 1 :: BLOCK].tolist() + (held + 1).tolist()[:50]
        targets = np.array([0, 19_999, *edges, *rng.integers(0, 20_000, 200)], np.int64)
        targets = np.concatenate([targets, targets[::-1]])
        found, at = blocks.locate(t, targets)
        want = np.isin(targets, held)
        assert found.tolist() == want.tolist()
        assert (held[at[found]] == targets[found]).all()
