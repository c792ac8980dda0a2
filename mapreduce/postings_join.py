"""A term's pieces from several map tasks joined into one posting list: ``join_pieces`` is
the reducer's work and ``merge_chunks`` its fallback when two pieces hold the same document
(a page's postings and its anchors'); ``join_decoded`` is the same join done by the
publisher of a map-only job, on many terms' pieces decoded at once. Pure functions over
the wire format of ``mapreduce.postings_wire``, no mrjob, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import pairwise

import numpy as np

from mapreduce.postings_wire import NUM_FIELDS, TF_MAX, Chunk, piece_span


def join_pieces(pieces: list[bytes]) -> bytes:
    """One term's pieces from the map tasks -> its posting list on the wire.

    Pieces over disjoint document ranges (each map task reads whole blocks) are joined
    as text in document order, unread; otherwise (a page's postings and its anchors'
    postings from another task) they are decoded and merged (``merge_chunks``).
    """
    if len(pieces) == 1:
        return pieces[0]
    spans = [piece_span(piece) for piece in pieces]
    known = [span for span in spans if span is not None]
    if len(known) == len(spans):
        order = sorted(range(len(pieces)), key=lambda i: known[i])
        ranges = [known[i] for i in order]
        if all(a[1] < b[0] for a, b in pairwise(ranges)):
            return b"".join(pieces[i] for i in order)
    return merge_chunks(Chunk.decode(piece) for piece in pieces).encode()


def merge_chunks(chunks: Iterable[Chunk]) -> Chunk:
    """One term's chunks -> one chunk with ascending docs, one posting per document.

    Chunks over disjoint ranges of documents are concatenated in order.
    Otherwise (a page's chunk and its anchors' chunk, say), postings of the
    same document are summed field by field and their positions merged.
    """
    chunks = sorted((c for c in chunks if c.docs.shape[0]), key=lambda c: int(c.docs[0]))
    if not chunks:
        return Chunk(
            np.zeros(0, np.uint32),
            np.zeros((0, NUM_FIELDS), np.uint16),
            np.zeros(0, np.uint32),
            np.zeros(0, np.uint32),
        )
    if len(chunks) == 1:
        return chunks[0]
    docs = np.concatenate([c.docs for c in chunks])
    tfs = np.concatenate([c.tfs for c in chunks])
    counts = np.concatenate([c.counts for c in chunks])
    positions = np.concatenate([c.positions for c in chunks])
    # Each chunk ascends (the class's invariant): they are disjoint when each ends
    # before the next begins, checked at the joins instead of over every posting.
    if all(int(a.docs[-1]) < int(b.docs[0]) for a, b in pairwise(chunks)):
        return Chunk(docs, tfs, counts, positions)
    return merge_same_documents(docs, tfs, counts, positions)


def merge_same_documents(
    docs: np.ndarray, tfs: np.ndarray, counts: np.ndarray, positions: np.ndarray
) -> Chunk:
    """One term's postings, in any order, some of the same document (a page's and its
    anchors', from two tasks) -> one posting per document, ascending: field frequencies
    summed (clipped), each document's positions sorted."""
    order = np.argsort(docs, kind="stable")
    sorted_docs = docs[order]
    starts = np.flatnonzero(np.concatenate([[True], sorted_docs[1:] != sorted_docs[:-1]]))
    merged_tfs = np.add.reduceat(tfs[order].astype(np.uint32), starts, axis=0)
    owner = np.repeat(docs, counts.astype(np.int64))
    by_doc = np.lexsort((positions, owner))
    unique_docs = sorted_docs[starts]
    merged_counts = np.bincount(np.searchsorted(unique_docs, owner), minlength=unique_docs.shape[0]).astype(
        np.uint32
    )
    return Chunk(
        unique_docs, np.minimum(merged_tfs, TF_MAX).astype(np.uint16), merged_counts, positions[by_doc]
    )


def _gather_runs(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The indices ``starts[i] .. starts[i] + lengths[i] - 1`` of every run, one after another."""
    lengths = lengths.astype(np.int64, copy=False)
    before = np.cumsum(lengths) - lengths
    out: np.ndarray = np.repeat(starts.astype(np.int64) - before, lengths)
    out += np.arange(out.shape[0], dtype=np.int64)
    return out


def join_decoded(
    pieces_per_term: np.ndarray,
    per_piece: np.ndarray,
    docs: np.ndarray,
    tfs: np.ndarray,
    counts: np.ndarray,
    positions: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Many terms' pieces, decoded -> (postings per term, docs, tfs, counts, positions), each
    term's postings one list ascending by document: what ``join_pieces`` then decoding gives.

    The pieces come term by term (``pieces_per_term`` each, in any order within a term;
    ``per_piece`` postings each, their columns concatenated as ``decode_terms`` gives them).
    A term's pieces over disjoint document ranges are put in document order (for most terms
    they are already: nothing is copied then); a term whose pieces share a document (a page's
    and its anchors', from two tasks) is merged as ``merge_chunks`` merges it.
    """
    pieces_per_term = np.asarray(pieces_per_term, dtype=np.int64)
    per_piece = np.asarray(per_piece, dtype=np.int64)
    num_pieces = per_piece.shape[0]
    piece_term = np.repeat(np.arange(pieces_per_term.shape[0], dtype=np.int64), pieces_per_term)
    post_bounds = np.concatenate([[0], np.cumsum(per_piece)])
    filled = per_piece > 0
    first = np.zeros(num_pieces, dtype=np.int64)
    last = np.zeros(num_pieces, dtype=np.int64)
    first[filled] = docs[post_bounds[:-1][filled]]
    last[filled] = docs[post_bounds[1:][filled] - 1]
    # By term, a term's empty pieces first (they hold nothing), then by first document.
    order = np.lexsort((first, filled, piece_term))
    held = order[filled[order]]
    same_term = piece_term[held[1:]] == piece_term[held[:-1]]
    overlapping = np.unique(piece_term[held[1:]][same_term & (last[held[:-1]] >= first[held[1:]])])
    if not bool((order == np.arange(num_pieces)).all()):
        pos_bounds = np.concatenate([[0], np.cumsum(counts, dtype=np.int64)])[post_bounds]
        post_index = _gather_runs(post_bounds[:-1][order], per_piece[order])
        pos_index = _gather_runs(pos_bounds[:-1][order], np.diff(pos_bounds)[order])
        docs, tfs, counts, positions = (
            docs[post_index],
            tfs[post_index],
            counts[post_index],
            positions[pos_index],
        )
    term_bounds = post_bounds[np.concatenate([[0], np.cumsum(pieces_per_term)])]
    if not overlapping.shape[0]:
        return np.diff(term_bounds), docs, tfs, counts, positions
    return _merge_overlapping(overlapping.tolist(), term_bounds, docs, tfs, counts, positions)


def _merge_overlapping(
    terms: list[int],
    term_bounds: np.ndarray,
    docs: np.ndarray,
    tfs: np.ndarray,
    counts: np.ndarray,
    positions: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``join_decoded``'s columns with each of ``terms`` (ascending; their postings between
    ``term_bounds``) merged by ``merge_same_documents``; the other terms' postings as they are."""
    pos_bounds = np.concatenate([[0], np.cumsum(counts, dtype=np.int64)])
    per_term = np.diff(term_bounds)
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
    at = 0  # the first posting not yet in ``parts``
    for term in terms:
        a, b = int(term_bounds[term]), int(term_bounds[term + 1])
        p, q = int(pos_bounds[a]), int(pos_bounds[b])
        parts.append((docs[at:a], tfs[at:a], counts[at:a], positions[pos_bounds[at] : p]))
        merged = merge_same_documents(docs[a:b], tfs[a:b], counts[a:b], positions[p:q])
        parts.append((merged.docs, merged.tfs, merged.counts, merged.positions))
        per_term[term] = merged.docs.shape[0]
        at = b
    parts.append((docs[at:], tfs[at:], counts[at:], positions[pos_bounds[at] :]))
    return (
        per_term,
        np.concatenate([part[0] for part in parts]).astype(np.uint32, copy=False),
        np.concatenate([part[1] for part in parts]).astype(np.uint16, copy=False),
        np.concatenate([part[2] for part in parts]).astype(np.uint32, copy=False),
        np.concatenate([part[3] for part in parts]).astype(np.uint32, copy=False),
    )
