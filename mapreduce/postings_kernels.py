"""The index job's buffer drain, compiled where numba's cache outlives a build (the job's
kernels, ``services.compiled.compiled_for_jobs``; ``rough_ids.kernels_usable`` decides).

``PostingBuffer.drain`` does these steps in numpy everywhere else (EMR's tasks, a cache that
cannot be written); each kernel here gives the same arrays (tests compare them).
"""

from __future__ import annotations

import numpy as np

from mapreduce.postings_wire import TF_MAX
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


def grouped_postings(
    term: np.ndarray, doc: np.ndarray, field_of: np.ndarray, pos: np.ndarray, num_terms: int, num_fields: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """``postings._grouped`` for words whose documents come in order (a block's pages; None
    otherwise): (the terms present, ascending; where each one's postings start; each posting's
    document; its field frequencies, clipped at ``TF_MAX``; its positions' count; the
    positions, posting after posting).

    numpy sorts the words by term (a stable radix sort), gathers four arrays in that order and
    counts fields and positions with two ``bincount``s: seven passes over a flush's words, ~40 %
    of a drain (py-spy, stop 48). In document order, a term's next posting is its next new
    document, so two passes over the words in their own order suffice: one counts each term's
    postings and positions, the other writes them where the counts put them."""
    if doc.shape[0] > 1 and not bool((doc[1:] >= doc[:-1]).all()):
        return None
    present, *rest = _group(
        np.ascontiguousarray(term, dtype=np.int32),
        np.ascontiguousarray(doc, dtype=np.uint32),
        np.ascontiguousarray(field_of, dtype=np.int8),
        np.ascontiguousarray(pos, dtype=np.int32),
        num_terms,
        num_fields,
        TF_MAX,
    )
    return (present.astype(term.dtype), *rest)


@compiled_for_jobs
def _group(term, doc, field_of, pos, num_terms, num_fields, tf_max):
    """The kernel of ``grouped_postings``."""
    n = term.shape[0]
    last = np.full(num_terms, -1, dtype=np.int64)  # each term's last document so far
    postings = np.zeros(num_terms + 1, dtype=np.int64)  # per term, then where its postings start
    positions = np.zeros(num_terms + 1, dtype=np.int64)  # the same for its positions
    for i in range(n):
        t = term[i]
        d = np.int64(doc[i])
        if last[t] != d:
            last[t] = d
            postings[t + 1] += 1
        if pos[i] >= 0:
            positions[t + 1] += 1
    present = 0
    for t in range(num_terms):
        if postings[t + 1] > 0:
            present += 1
        postings[t + 1] += postings[t]
        positions[t + 1] += positions[t]
    total = postings[num_terms]
    post_doc = np.empty(total, dtype=np.uint32)
    tf = np.zeros((total, num_fields), dtype=np.uint16)
    pos_counts = np.zeros(total, dtype=np.uint32)
    pos_values = np.empty(positions[num_terms], dtype=np.uint32)
    present_terms = np.empty(present, dtype=np.int64)
    term_starts = np.empty(present, dtype=np.int64)
    k = 0
    for t in range(num_terms):
        if postings[t + 1] > postings[t]:
            present_terms[k] = t
            term_starts[k] = postings[t]
            k += 1
    last[:] = -1
    current = postings[:num_terms].copy() - 1  # each term's posting being filled
    at = positions[:num_terms].copy()  # where each term's next position goes
    for i in range(n):
        t = term[i]
        d = np.int64(doc[i])
        if last[t] != d:
            last[t] = d
            current[t] += 1
            post_doc[current[t]] = doc[i]
        p = current[t]
        f = field_of[i]
        if tf[p, f] < tf_max:
            tf[p, f] += 1
        if pos[i] >= 0:
            pos_counts[p] += 1
            pos_values[at[t]] = pos[i]
            at[t] += 1
    return present_terms, term_starts, post_doc, tf, pos_counts, pos_values
