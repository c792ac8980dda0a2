"""The index job's buffer drain, compiled where numba's cache outlives a build (the job's
kernels, ``services.compiled.compiled_for_jobs``; ``rough_ids.kernels_usable`` decides).

``PostingBuffer.drain`` does these steps in numpy everywhere else (EMR's tasks, a cache that
cannot be written); each kernel here gives the same arrays (tests compare them).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pybase64

from mapreduce.postings_wire import HEAD_WORDS, NARROW, NUM_FIELDS, REGION_ALIGN, TF_MAX
from services.compiled import compiled_for_jobs


def index_dtype(words: int) -> np.dtype[Any]:
    """int32 for a flush's word and posting numbers where they fit times ``NUM_FIELDS``
    (half the memory traffic), int64 for a huge flush: numpy's steps and the kernels alike."""
    return np.dtype(np.int32 if words < 1 << 28 else np.int64)


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
    term = np.empty(n, dtype=index_dtype(n))
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


def encoded_runs(
    docs: np.ndarray, tfs: np.ndarray, counts: np.ndarray, positions: np.ndarray, run_starts: np.ndarray
) -> list[bytes]:
    """``postings_wire.encode_runs``, the words written by one compiled pass: numpy's version
    labels every word of the flush and fills each kind through boolean masks, ~10 % of a map
    task (stop 48). The same bytes (tested)."""
    bounds = np.append(np.asarray(run_starts, dtype=np.int64), docs.shape[0])
    pos_offsets = np.zeros(docs.shape[0] + 1, dtype=np.int64)
    np.cumsum(counts, out=pos_offsets[1:])
    words, region_words = _encode(
        np.ascontiguousarray(docs, dtype=np.uint32),
        np.ascontiguousarray(tfs, dtype=np.uint16),
        np.ascontiguousarray(counts, dtype=np.uint32),
        np.ascontiguousarray(positions, dtype=np.uint32),
        bounds,
        pos_offsets,
        NUM_FIELDS,
        HEAD_WORDS,
        REGION_ALIGN // 4,
        NARROW,
    )
    text = pybase64.b64encode(words.tobytes())
    ends = (np.concatenate([[0], np.cumsum(region_words)]) * 16 // 3).tolist()
    return [text[a:b] for a, b in zip(ends[:-1], ends[1:], strict=True)]


@compiled_for_jobs
def _encode(docs, tfs, counts, positions, bounds, pos_offsets, fields, head, align, narrow_flag):
    """The kernel of ``encoded_runs``: (every region's words, each region's word count)."""
    regions = bounds.shape[0] - 1
    narrow = np.zeros(regions, dtype=np.bool_)
    sizes = np.zeros(regions, dtype=np.int64)
    total = 0
    for r in range(regions):
        a, b = bounds[r], bounds[r + 1]
        n = b - a
        q = pos_offsets[b] - pos_offsets[a]
        largest = np.uint32(0)  # field frequency or position count: narrow below 256
        for i in range(a, b):
            if counts[i] > largest:
                largest = counts[i]
            for f in range(fields):
                if tfs[i, f] > largest:
                    largest = tfs[i, f]
        furthest = np.uint32(0)  # position: narrow below 65,536
        for j in range(pos_offsets[a], pos_offsets[b]):
            if positions[j] > furthest:
                furthest = positions[j]
        small = largest < 256 and furthest < 65536
        narrow[r] = small
        if small:
            used = head + n + (fields * n + 3) // 4 + (n + 3) // 4 + (q + 1) // 2
        else:
            used = head + n + (fields * n + 1) // 2 + n + q
        sizes[r] = (used + align - 1) // align * align
        total += sizes[r]
    words = np.zeros(total, dtype=np.uint32)
    as_bytes = words.view(np.uint8)
    as_shorts = words.view(np.uint16)
    at = 0
    for r in range(regions):
        a, b = bounds[r], bounds[r + 1]
        n = b - a
        pa, pb = pos_offsets[a], pos_offsets[b]
        q = pb - pa
        words[at] = np.uint32(n)
        words[at + 1] = np.uint32(q | narrow_flag) if narrow[r] else np.uint32(q)
        w = at + head
        for i in range(n):
            words[w + i] = docs[a + i]
        w += n
        if narrow[r]:
            for i in range(n):
                for f in range(fields):
                    as_bytes[4 * w + i * fields + f] = np.uint8(tfs[a + i, f])
            w += (fields * n + 3) // 4
            for i in range(n):
                as_bytes[4 * w + i] = np.uint8(counts[a + i])
            w += (n + 3) // 4
            for j in range(q):
                as_shorts[2 * w + j] = np.uint16(positions[pa + j])
        else:
            for i in range(n):
                for f in range(fields):
                    as_shorts[2 * w + i * fields + f] = tfs[a + i, f]
            w += (fields * n + 1) // 2
            for i in range(n):
                words[w + i] = counts[a + i]
            w += n
            for j in range(q):
                words[w + j] = positions[pa + j]
        at += sizes[r]
    return words, sizes
