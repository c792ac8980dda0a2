"""Which word forms a document holds as written: a Bloom filter per document.

The index holds stems, so "organization" and "organ" are one term (``organ``) and a page
holding only "organ" matches the query "organization" as well as one holding the word the
user typed. Elasticsearch answers this by indexing every token twice, stemmed and as is
(``keyword_repeat``), which doubles the postings; here each document carries a Bloom filter
of its title and body word forms (before stemming, ``analyze.surface_form``), about one byte
per distinct form, and search gives a small bonus to the top results that hold the query's
words as typed (``services.search.retrieval.exact_forms``).

Filters are ``BITS_PER_FORM`` bits per form with ``HASHES`` probes (Kirsch and
Mitzenmacher's double hashing): about 3 % false positives, and a false positive only
withholds a tie-break.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from services.compiled import as_mapped, compiled_for_jobs, compiled_on_first_use

BITS_PER_FORM = 8
HASHES = 3


def form_pairs(forms: Sequence[str]) -> np.ndarray:
    """Two 32-bit hashes of each form (blake2b: the same in every process and version), one
    form's after the other's (uint64): what the probe reads (``held_shares``)."""
    digests = b"".join(hashlib.blake2b(f.encode("utf-8"), digest_size=8).digest() for f in forms)
    return np.frombuffer(digests, dtype="<u4").astype(np.uint64)


def form_hashes(forms: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """``form_pairs`` as (first hashes, second hashes made odd): the filters' double hashing."""
    pairs = form_pairs(forms)
    return np.ascontiguousarray(pairs[0::2]), pairs[1::2] | np.uint64(1)


def build_filters(
    pair_docs: np.ndarray, h1: np.ndarray, h2: np.ndarray
) -> tuple[np.ndarray, np.ndarray, bytes]:
    """Filters for (document, form) pairs (unique, sorted by document; ``h1``/``h2`` per pair):
    (the documents, their byte offsets into the filters (len + 1), the filters)."""
    if not pair_docs.shape[0]:
        return np.zeros(0, np.int64), np.zeros(1, np.int64), b""
    starts = np.flatnonzero(np.concatenate([[True], pair_docs[1:] != pair_docs[:-1]]))
    docs = pair_docs[starts]  # sorted input: runs, no (hash-based, slow) np.unique
    counts = np.diff(np.append(starts, pair_docs.shape[0]))
    sizes = counts * BITS_PER_FORM // 8
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    where = np.repeat(np.arange(docs.shape[0]), counts)
    bits = (sizes[where] * 8).astype(np.uint64)
    start = (offsets[:-1][where] * 8).astype(np.uint64)
    filled = np.zeros(int(offsets[-1]) * 8, dtype=bool)
    for i in range(HASHES):
        filled[(start + (h1 + np.uint64(i) * h2) % bits).astype(np.int64)] = True
    return docs, offsets, np.packbits(filled, bitorder="little").tobytes()


def filters_in_document_order(
    doc: np.ndarray, form: np.ndarray, h1: np.ndarray, h2: np.ndarray
) -> tuple[np.ndarray, np.ndarray, bytes, np.ndarray] | None:
    """``build_filters`` straight from a buffer's words (``doc`` and ``form`` per word, the
    documents' words together and ascending, as a block's pages come; ``h1``/``h2`` per form),
    plus how many documents hold each form; None where the documents are not in order.

    The index job built its pairs by sorting every word's (document, form) number and
    dropping repeats: 0.3-0.5 s for 4 M words, and with the probes after it ~18 % of a map
    task (py-spy, stop 48); this takes 0.06 s. In document order, a form's last document tells a repeat in one
    pass (compiled: the job's kernels, where numba's cache outlives a build). Same bytes as
    ``build_filters`` (tested)."""
    if doc.shape[0] > 1 and not bool((doc[1:] >= doc[:-1]).all()):
        return None
    last = np.full(h1.shape[0], -1, dtype=np.int64)
    docs, offsets, blob, held = _filters_in_order(
        np.ascontiguousarray(doc, dtype=np.uint32),
        np.ascontiguousarray(form, dtype=np.int32),
        np.ascontiguousarray(h1, dtype=np.uint64),
        np.ascontiguousarray(h2, dtype=np.uint64),
        last,
        BITS_PER_FORM,
        HASHES,
    )
    return docs, offsets, blob.tobytes(), held


@compiled_for_jobs
def _filters_in_order(doc, form, h1, h2, last, bits_per_form, hashes):  # type: ignore[no-untyped-def]
    """The kernel of ``filters_in_document_order``: (each document, its filter's byte
    offsets (len + 1), the filters, documents per form). ``last`` holds each form's last document
    (-1 for none yet)."""
    n = doc.shape[0]
    pair_form = np.empty(n, dtype=np.int32)
    run_doc = np.empty(n, dtype=np.int64)
    run_end = np.empty(n, dtype=np.int64)
    held = np.zeros(h1.shape[0], dtype=np.int64)
    m = 0
    runs = 0
    for i in range(n):
        d = np.int64(doc[i])
        if runs == 0 or run_doc[runs - 1] != d:
            run_doc[runs] = d
            runs += 1
        f = form[i]
        if last[f] != d:
            last[f] = d
            pair_form[m] = f
            held[f] += 1
            m += 1
        run_end[runs - 1] = m
    offsets = np.zeros(runs + 1, dtype=np.int64)  # bytes: each document's filter
    begin = 0
    for r in range(runs):
        offsets[r + 1] = offsets[r] + (run_end[r] - begin) * bits_per_form // 8
        begin = run_end[r]
    blob = np.zeros(offsets[runs], dtype=np.uint8)
    begin = 0
    for r in range(runs):
        start = offsets[r]
        bits = np.uint64((offsets[r + 1] - start) * 8)
        for j in range(begin, run_end[r]):
            f = pair_form[j]
            for i in range(hashes):
                bit = np.int64((h1[f] + np.uint64(i) * h2[f]) % bits)
                blob[start + bit // 8] |= np.uint8(1 << (bit % 8))
        begin = run_end[r]
    return run_doc[:runs].copy(), offsets, blob, held


def holds(
    filters: np.ndarray, offsets: np.ndarray, docs: np.ndarray, h1: int | np.ndarray, h2: int | np.ndarray
) -> np.ndarray:
    """Whether each of ``docs`` (probably) holds the form hashed to (``h1``, ``h2``); a
    document without a filter holds nothing. ``offsets`` has one entry per document + 1.

    With arrays of hashes (several forms), one row per form: all forms in one compiled pass,
    which reads each document's filter where ``offsets`` says (gathering the starts and sizes
    in numpy first cost five calls on every results page). Search asks only the share of a
    query's forms each page holds (``held_shares``, the same probe); this is the answer per
    form, which the filters' tests read."""
    docs = np.asarray(docs, dtype=np.int64)
    return holds_in(filters, offsets[:-1], offsets[1:], docs, h1, h2)


def holds_in(
    filters: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    docs: np.ndarray,
    h1: int | np.ndarray,
    h2: int | np.ndarray,
    then: np.ndarray | None = None,
) -> np.ndarray:
    """``holds`` where document d's filter is bytes ``starts[d]`` to ``ends[d]`` (none when
    empty) of ``filters`` followed by ``then``, wherever each lies: a version of several
    segments reads its base's filters where they are mapped and its deltas' joined after them,
    in one pass, without copying the base's.

    Compiled (numba, on first use: the index build, which only writes filters, never loads
    it): a results page asks a few forms of ten documents, where numpy's thirty calls cost
    about 0.1 ms, a fifth of a query. ``holds_at_reference`` is the same in numpy (tested)."""
    f1 = np.asarray(h1, dtype=np.uint64)
    f2 = np.asarray(h2, dtype=np.uint64)
    more = then if then is not None and then.shape[0] else _NO_MORE
    if not filters.shape[0] and not more.shape[0]:
        return np.zeros((*f1.shape, docs.shape[0]), dtype=bool)
    pairs = np.empty(2 * f1.size, dtype=np.uint64)
    pairs[0::2], pairs[1::2] = f1.reshape(-1), f2.reshape(-1)
    filters = np.asarray(filters, dtype=np.uint8)
    found: np.ndarray = _probe(filters, starts, ends, docs, pairs, more, HASHES)[0]
    return found.reshape((*f1.shape, docs.shape[0]))


def held_shares(
    filters: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    docs: np.ndarray,
    pairs: np.ndarray,
    then: np.ndarray | None = None,
) -> np.ndarray:
    """The share of the forms hashed to ``pairs`` (``form_pairs``) each of ``docs``
    (probably) holds, the filters read as ``holds_in`` reads them: the words-as-typed rescore
    asks this of every query's best, where the hashes split in numpy, the probe and the rows
    summed cost about 13 µs against 3 (services.search.retrieval.exact_forms)."""
    more = then if then is not None and then.shape[0] else _NO_MORE
    if not pairs.shape[0] or (not filters.shape[0] and not more.shape[0]):
        return np.zeros(docs.shape[0], dtype=np.float64)
    docs = np.asarray(docs, dtype=np.int64)
    shares: np.ndarray = _probe(filters, starts, ends, docs, pairs, more, HASHES)[1]
    return shares


_NO_MORE = np.zeros(0, np.uint8)  # no filters after the mapped ones


def warm_up() -> None:
    """Compile the probe (or load it from numba's disk cache) now, not in a query's time, for
    the types queries pass: the segment's filters read-only (a memory map)."""
    filters = as_mapped(np.zeros(1, np.uint8))
    offsets = as_mapped(np.array([0, 1], np.uint64))
    held_shares(filters, offsets[:-1], offsets[1:], np.zeros(1, np.uint32), form_pairs(["a"]))  # a segment's
    starts, ends = np.zeros(1, np.int64), np.ones(1, np.int64)  # a version's
    held_shares(filters, starts, ends, np.zeros(1, np.uint32), form_pairs(["a"]))


@compiled_on_first_use
def _probe(filters, starts, ends, docs, pairs, more, hashes):  # type: ignore[no-untyped-def]
    """Each form (rows) in each document's filter (columns): Kirsch-Mitzenmacher probes; and
    the share of the forms each document holds. Form a's hashes are ``pairs[2a]`` and
    ``pairs[2a + 1]`` (made odd here, as ``form_hashes`` makes them)."""
    first = filters.shape[0]
    forms = pairs.shape[0] // 2
    out = np.zeros((forms, docs.shape[0]), dtype=np.bool_)
    shares = np.zeros(docs.shape[0], dtype=np.float64)
    for x in range(docs.shape[0]):
        start = np.int64(starts[docs[x]])
        bits = (np.int64(ends[docs[x]]) - start) * 8
        if bits <= 0:
            continue  # no filter: it holds nothing
        count = 0
        for a in range(forms):
            f1 = pairs[2 * a]
            f2 = pairs[2 * a + 1] | np.uint64(1)
            held = True
            for i in range(hashes):
                bit = (f1 + np.uint64(i) * f2) % np.uint64(bits)
                index = start * 8 + np.int64(bit)
                at = index // 8
                byte = filters[at] if at < first else more[at - first]
                if (byte >> (index % 8)) & 1 == 0:
                    held = False
                    break
            out[a, x] = held
            count += 1 if held else 0
        shares[x] = count / forms
    return out, shares


def holds_at_reference(
    filters: np.ndarray,
    start: np.ndarray,
    size: np.ndarray,
    h1: int | np.ndarray,
    h2: int | np.ndarray,
    then: np.ndarray | None = None,
) -> np.ndarray:
    """The probe in numpy, of the filters at bytes ``start`` (``size`` bytes each) of ``filters``
    followed by ``then``, one per document asked: the reference ``holds_in`` is tested against."""
    f1 = np.asarray(h1, dtype=np.uint64)
    f2 = np.asarray(h2, dtype=np.uint64)
    shape = (*f1.shape, start.shape[0])
    more = then if then is not None and then.shape[0] else None
    if not filters.shape[0] and more is None:
        return np.zeros(shape, dtype=bool)
    size_bits = size * 8
    safe_bits = np.maximum(size_bits, 1).astype(np.uint64)
    f1, f2 = f1[..., None], f2[..., None]  # forms down, documents across
    found: np.ndarray = np.broadcast_to(size_bits > 0, shape).copy()
    first = filters.shape[0]
    for i in range(HASHES):
        bit = (f1 + np.uint64(i) * f2) % safe_bits
        index = start * 8 + bit.astype(np.int64)
        at = index // 8
        # A document without a filter reads any byte: found is False for it already.
        if more is None:
            byte = filters[np.minimum(at, first - 1)]
        else:
            byte = more[np.clip(at - first, 0, more.shape[0] - 1)]
            if first:
                byte = np.where(at < first, filters[np.minimum(at, first - 1)], byte)
        found &= (byte >> (index % 8)) & 1 == 1
    return found
