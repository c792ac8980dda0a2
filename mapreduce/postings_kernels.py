"""The index job's buffer drain, compiled where numba's cache outlives a build (the job's
kernels, ``services.compiled.compiled_for_jobs``; ``rough_ids.kernels_usable`` decides).

``PostingBuffer.drain`` does these steps in numpy everywhere else (EMR's tasks, a cache that
cannot be written); each kernel here gives the same arrays (tests compare them).
"""

from __future__ import annotations

import numpy as np

from services.compiled import compiled_for_jobs


def kept_terms(
    rough_ids: np.ndarray,
    seg_len: np.ndarray,
    rough_term_ids: np.ndarray,
    rough_kept: np.ndarray,
    rough_form_ids: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(the term id of every kept word, in order; kept words per segment; each kept word's
    written form id): ``postings._kept_terms`` with the forms gathered in the same pass.

    numpy's ``np.repeat`` and the gathers around it walk a flush's ten million tokens five
    times, each pass into fresh memory: 0.18-0.65 s a flush of two blocks of the 100k
    benchmark (the first flushes of a process slowest, its pages faulted in), where this loop
    writes each kept word's term and form once: 0.11 s (stop 48)."""
    n = int(rough_kept[rough_ids].sum(dtype=np.int64))
    index_type = np.int32 if n < 1 << 28 else np.int64  # as postings._kept_terms
    term = np.empty(n, dtype=index_type)
    form = np.empty(n, dtype=np.int32)
    kept_per_seg = np.empty(seg_len.shape[0], dtype=np.int64)
    rough_start = np.zeros(rough_kept.shape[0] + 1, dtype=np.int64)
    np.cumsum(rough_kept, out=rough_start[1:])
    _expand(
        np.ascontiguousarray(rough_ids, dtype=np.int32),
        np.ascontiguousarray(seg_len, dtype=np.int64),
        rough_start,
        np.ascontiguousarray(rough_kept, dtype=np.int32),
        np.ascontiguousarray(rough_term_ids, dtype=np.int32),
        np.ascontiguousarray(rough_form_ids, dtype=np.int32),
        term,
        form,
        kept_per_seg,
    )
    return term, kept_per_seg, form


@compiled_for_jobs
def _expand(ids, seg_len, starts, kept, term_ids, form_ids, term, form, per_seg):
    """Each rough token's (``ids``) kept terms and forms (``kept[r]`` of them from
    ``starts[r]`` of ``term_ids`` and ``form_ids``), in order, into ``term`` and ``form``; each
    segment's count into ``per_seg``."""
    i = 0
    m = 0
    for s in range(seg_len.shape[0]):
        before = m
        for _ in range(seg_len[s]):
            r = ids[i]
            i += 1
            start = starts[r]
            for x in range(kept[r]):
                term[m] = term_ids[start + x]
                form[m] = form_ids[start + x]
                m += 1
        per_seg[s] = m - before
