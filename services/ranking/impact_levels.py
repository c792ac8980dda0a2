"""Impacts stored as one byte each: a term's BM25F impacts quantized linearly to
``LEVELS`` steps of its own bound, ``idf_t * (k1 + 1)``.

A posting's impact is ``idf_t * s * (k1 + 1) / (s + k1)`` (``bm25f.impacts``), below
``idf_t * (k1 + 1)`` whatever its frequencies, so a term's impacts all fit ``LEVELS`` steps
of that bound. Stored as float32 they were a quarter of a segment; one byte each they are
a sixteenth of it. Score-at-a-time and impact-ordered engines store 8-bit impacts the same
way (Anh, de Kretser & Moffat, SIGIR 2001; PISA's ``--quantize``; Crane et al., WSDM 2017,
find 8 bits lose no effectiveness), and Lucene's norms are one byte per document.

The step depends only on the term's idf and ``k1``, not on which documents a segment holds:
a delta segment and the full build, scoring the same posting against the same collection,
store the same byte (PISA scales by the largest score of the index, which a delta cannot
know). Measured on Cranfield against float32 impacts: MAP 0.3491 -> 0.3492, nDCG@10 0.4023
-> 0.4024 (a step per term's own largest impact gave MAP 0.3490; docs/benchmarks.md).

Every reader dequantizes the same way, ``float32(level) * scale`` in float32, so the
compiled kernels and numpy give the same scores to the bit."""

from __future__ import annotations

import numpy as np

LEVELS = 255  # steps of a term's bound: one byte a posting
LEVEL_DTYPE = np.dtype(np.uint8)


def impact_scales(idf: np.ndarray, k1: float) -> np.ndarray:
    """Each term's step (float32): its impacts' bound ``idf * (k1 + 1)`` over ``LEVELS``."""
    bound = np.asarray(idf, dtype=np.float32) * np.float32(k1 + 1.0)
    out: np.ndarray = (bound / np.float32(LEVELS)).astype(np.float32)
    return out


def quantize(impacts: np.ndarray, scales: np.ndarray, per_term: np.ndarray) -> np.ndarray:
    """The level (uint8) of each posting's impact; ``per_term``: each term's number of
    postings (its ``scales`` entry applies to that many impacts in a row). Rounded to the
    nearest step; an impact above 0 keeps at least one step, so a posting never scores 0
    where it scored something."""
    impacts = np.asarray(impacts, dtype=np.float32)
    step = np.repeat(np.asarray(scales, dtype=np.float32), np.asarray(per_term, dtype=np.int64))
    if step.shape[0] != impacts.shape[0]:
        raise ValueError(f"quantize: {impacts.shape[0]} impacts but the terms hold {step.shape[0]} postings")
    if impacts.shape[0] and not np.all(np.isfinite(impacts)):
        raise ValueError("quantize: an impact is not finite (NaN or infinite): the BM25F inputs are corrupt")
    safe = np.where(step > 0, step, np.float32(1.0))
    levels = np.rint(impacts / safe)
    levels = np.where((impacts > 0) & (levels < 1), 1.0, levels)
    out: np.ndarray = np.clip(levels, 0, LEVELS).astype(LEVEL_DTYPE)
    return out


def dequantize(levels: np.ndarray, scale: np.ndarray | np.float32 | float) -> np.ndarray:
    """The impacts (float32) of ``levels``: ``float32(level) * scale`` in float32, the product
    the compiled kernels compute; ``scale`` one term's step, or each level's own."""
    out: np.ndarray = np.asarray(levels).astype(np.float32) * np.asarray(scale, dtype=np.float32)
    return out


def dequantize_terms(levels: np.ndarray, scales: np.ndarray, per_term: np.ndarray) -> np.ndarray:
    """``dequantize`` of several terms' levels in a row (``per_term`` postings each)."""
    return dequantize(
        levels, np.repeat(np.asarray(scales, dtype=np.float32), np.asarray(per_term, dtype=np.int64))
    )


def term_maxima(levels: np.ndarray, scales: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Each term's largest dequantized impact (float32; 0 for a term without postings):
    the largest level times the step (the float32 product is monotone in the level)."""
    offsets = np.asarray(offsets, dtype=np.int64)
    out = np.zeros(offsets.shape[0] - 1, dtype=np.float32)
    nonempty = np.flatnonzero(offsets[1:] > offsets[:-1])
    if nonempty.shape[0]:
        top = np.maximum.reduceat(np.asarray(levels), offsets[:-1][nonempty])
        out[nonempty] = top.astype(np.float32) * np.asarray(scales, dtype=np.float32)[nonempty]
    return out
