"""Kernels compiled on first use, for one signature whatever the arrays' writability."""

from __future__ import annotations

import numpy as np

from services.compiled import compiled_on_first_use, read_only


def _total(values):  # type: ignore[no-untyped-def]
    out = 0.0
    for v in values:
        out += v
    return out


def test_a_kernel_compiles_once_for_writable_and_read_only_arrays() -> None:
    kernel = compiled_on_first_use(_total)
    assert kernel.signatures == []  # nothing compiled at import
    writable = np.arange(4.0)
    mapped = np.arange(4.0)
    mapped.flags.writeable = False  # as a memory-mapped segment's arrays are
    assert kernel(writable) == 6.0 and kernel(mapped) == 6.0
    assert len(kernel.signatures) == 1
    assert writable.flags.writeable  # the caller's array keeps its flag


def test_read_only_leaves_everything_else_alone() -> None:
    view = read_only(np.zeros(3))
    assert not view.flags.writeable
    assert read_only(3) == 3 and read_only("x") == "x"


def test_the_search_kernels_have_one_signature_after_real_queries() -> None:
    """The warm-ups compile what queries use: after a query over read-only (mapped) lists
    and one over lists it built, each kernel still has one signature."""
    from services.search.retrieval import blockmax, conjunction
    from services.search.retrieval.posting_layout import PostingSource, block_maxima
    from services.search.retrieval.rank import QueryTerm, top_k_or

    blockmax.warm_up()
    conjunction.warm_up()
    docs = np.arange(0, 9000, 3, dtype=np.uint32)
    impacts = np.linspace(0.5, 3.0, docs.shape[0]).astype(np.float32)
    offsets = np.array([0, docs.shape[0]], np.int64)
    first, maxima = block_maxima(offsets, impacts)
    for array in (docs, impacts, first, maxima):
        array.flags.writeable = False
    source = PostingSource(docs, impacts, offsets, first, maxima)
    mapped = QueryTerm(1.0, docs, impacts, 3.0, 0)
    built = QueryTerm(0.5, docs[::2].copy(), impacts[::2].copy(), 3.0)
    top_k_or([mapped, built], np.zeros(9000), 5, source=source)
    conjunction.top_k_and(
        source, [(1.0, 0, docs, impacts), (0.5, None, built.docs, built.impacts)], np.zeros(9000), 5
    )
    assert len(blockmax._top_k.signatures) == 1 and len(blockmax._count.signatures) == 1
    assert len(conjunction._top_k_and.signatures) == 1
