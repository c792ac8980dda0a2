"""Kernels compiled on first use, for one signature whatever the arrays' writability."""

from __future__ import annotations

from functools import partial

import numpy as np

from services import compiled
from services.compiled import as_mapped, compiled_on_first_use


def _total(values):  # type: ignore[no-untyped-def]
    out = 0.0
    for v in values:
        out += v
    return out


def test_a_kernel_compiles_on_first_call_and_a_mapped_array_is_another_signature() -> None:
    """Why the warm-ups pass ``as_mapped`` arrays where queries pass a segment's."""
    kernel = compiled_on_first_use(_total)
    try:
        assert kernel.signatures == []  # nothing compiled at import
        writable = np.arange(4.0)
        assert kernel(writable) == 6.0 and len(kernel.signatures) == 1
        mapped = as_mapped(writable)
        assert not mapped.flags.writeable and writable.flags.writeable
        assert kernel(mapped) == 6.0 and len(kernel.signatures) == 2
    finally:
        # Not a search kernel: `nimbus warm-kernels` later in this process reports every
        # registered kernel (it counted 10 when this test ran first).
        compiled.KERNELS.remove(kernel)


def test_the_search_kernels_have_one_signature_after_queries_over_a_mapped_segment() -> None:
    """The warm-ups compile what queries use: an OR and an AND query over read-only (mapped)
    lists with derived block maxima and lists the query built compile nothing new (other
    tests in the same process may have compiled other signatures before)."""
    from services.search.retrieval import (
        blockmax,
        blockmax_kernels,
        conjunction,
        conjunction_kernel,
        match_count,
    )
    from services.search.retrieval.posting_layout import source_of
    from services.search.retrieval.rank import QueryTerm, top_k_or

    blockmax.warm_up()
    conjunction.warm_up()
    kernels = (blockmax_kernels.window_top_k, match_count.lead_count, conjunction_kernel.and_top_k)
    warmed = [set(map(str, kernel.signatures)) for kernel in kernels]
    docs = np.arange(0, 9000, 3, dtype=np.uint32)
    levels = np.linspace(20, 255, docs.shape[0]).astype(np.uint8)
    scale = np.full(1, 0.01, np.float32)
    source = source_of(docs, levels, scale, np.array([0, docs.shape[0]], np.int64))
    mapped = QueryTerm(1.0, partial(source.docs_of, 0), source.levels, 2.55, 0, 0.01, docs.shape[0])
    built = QueryTerm(0.5, docs[::2].copy(), mapped.impacts[::2].copy(), 2.55)
    top_k_or([mapped, built], np.zeros(9000), 1, source=source)
    lists = [(1.0, 0, mapped.read_docs, mapped.read_impacts), (0.5, None, built.docs, built.impacts)]
    conjunction.top_k_and(source, lists, np.zeros(9000), 5)
    assert [set(map(str, kernel.signatures)) for kernel in kernels] == warmed
