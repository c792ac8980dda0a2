"""Index segment container: named, typed, 64-byte-aligned arrays in one blob.

The publish step writes a segment; the search service downloads it once and
memory-maps it, so start-up costs no parsing and the OS page cache shares
the arrays between worker processes. Layout::

    magic        8 bytes  b"NMBSEG01"
    header_len   uint32   little-endian
    header       JSON: {"meta": {...}, "arrays": {name: {"dtype", "offset", "length"}}}
    arrays       each at a 64-byte-aligned absolute offset

The arrays an index segment holds, their dtypes, lengths and meaning, are
the segment contract (``SEGMENT_ARRAYS``), written once here: the publish
step (``services.indexing.publish``) checks what it writes against it and
the search service (``services.search.retrieval.segment``) what it maps.
"""

from __future__ import annotations

import io
import json
import mmap
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from services.storage.errors import BlockFormatError, SegmentContractError
from services.storage.formats.bitpack import BLOCK
from services.storage.formats.delta import held_row_count
from services.storage.formats.doc_blocks import check_doc_blocks

MAGIC = b"NMBSEG01"
_PRE = struct.Struct("<8sI")
ALIGN = 64


def pack_segment(arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> bytes:
    """Serialise arrays (any 1-D numeric dtype) and a JSON-able meta dict, in memory."""
    out = io.BytesIO()
    write_segment(out, arrays, meta)
    return out.getvalue()


def write_segment(fh: BinaryIO, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> int:
    """Write a segment to ``fh`` (positioned at its start) array by array; returns its size.

    Nothing is assembled in memory: each array's own buffer is written where
    it belongs, so publishing needs no memory beyond the arrays themselves.
    """
    specs: dict[str, dict[str, Any]] = {}
    contiguous: dict[str, np.ndarray] = {}
    # Offsets depend on the header length, which depends on the offsets:
    # reserve room by formatting with a generous fixed width first.
    for name, value in arrays.items():
        arr = np.ascontiguousarray(value)
        if arr.ndim != 1:
            raise ValueError(f"segment array {name!r} must be one-dimensional")
        contiguous[name] = arr
    header_room = 256 + 128 * len(contiguous) + len(json.dumps(meta))
    offset = _align(_PRE.size + header_room)
    for name, arr in contiguous.items():
        specs[name] = {"dtype": arr.dtype.str, "offset": offset, "length": int(arr.shape[0])}
        offset = _align(offset + arr.nbytes)
    header = json.dumps({"meta": meta, "arrays": specs}).encode("utf-8")
    if len(header) > header_room:
        raise ValueError("segment header larger than reserved room")  # cannot happen: see sizing
    written = fh.write(_PRE.pack(MAGIC, len(header)) + header)
    for name, arr in contiguous.items():
        written += fh.write(b"\0" * (specs[name]["offset"] - written))
        if arr.nbytes:
            written += fh.write(arr.view(np.uint8).data)
    written += fh.write(b"\0" * (offset - written))  # the last array's padding, as each one's above
    return written


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def read_meta(read: Callable[[int, int], bytes], name: str = "segment") -> dict[str, Any]:
    """A segment's meta from two ranged reads (``read(start, end)``: bytes start..end-1), so a
    stored segment's meta is known without fetching its arrays."""
    pre = read(0, _PRE.size)
    if len(pre) < _PRE.size:
        raise BlockFormatError(f"{name}: truncated index segment")
    magic, header_len = _PRE.unpack(pre)
    if magic != MAGIC:
        raise BlockFormatError(f"{name}: not a Nimbus index segment (magic {magic!r})")
    try:
        meta: dict[str, Any] = json.loads(read(_PRE.size, _PRE.size + header_len))["meta"]
    except (ValueError, KeyError) as exc:
        raise BlockFormatError(f"{name}: corrupt segment header ({exc})") from exc
    return meta


def open_segment(path: Path) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Memory-map a segment file; returns (arrays, meta)."""
    path = Path(path)
    with path.open("rb") as fh:
        pre = fh.read(_PRE.size)
        if len(pre) < _PRE.size:
            raise BlockFormatError(f"{path}: truncated index segment")
        magic, header_len = _PRE.unpack(pre)
        if magic != MAGIC:
            raise BlockFormatError(f"{path}: not a Nimbus index segment (magic {magic!r})")
        try:
            header = json.loads(fh.read(header_len))
        except ValueError as exc:
            raise BlockFormatError(f"{path}: corrupt segment header ({exc})") from exc
    size = path.stat().st_size
    raw = np.memmap(path, dtype=np.uint8, mode="r") if size else np.zeros(0, np.uint8)
    arrays: dict[str, np.ndarray] = {}
    for name, spec in header["arrays"].items():
        dtype = np.dtype(spec["dtype"])
        start, count = spec["offset"], spec["length"]
        end = start + count * dtype.itemsize
        if end > size:
            raise BlockFormatError(f"{path}: array {name!r} runs past the end; segment truncated")
        arrays[name] = raw[start:end].view(dtype)
    return arrays, header["meta"]


def release_pages(arrays: Mapping[str, np.ndarray]) -> None:
    """Drop the pages of ``open_segment``'s mapped arrays from this process's resident set:
    they stay in the page cache and are mapped again when read. A merge reads its base once,
    a term range at a time (``services.indexing.merge_ranges``); without this, each page it
    read would stay resident, and count in its memory, to the end: the whole base."""
    seen: set[int] = set()
    for array in arrays.values():
        mapped = getattr(array, "_mmap", None)  # np.memmap's; a plain array has none
        if isinstance(mapped, mmap.mmap) and id(mapped) not in seen:
            seen.add(id(mapped))
            mapped.madvise(mmap.MADV_DONTNEED)


# The segment contract, format 11. N documents, T terms, P postings, Q positions, F forward
# entries (a document's distinct title, body and meta terms), E links. What each format
# changed: 3: near_dup_of, form_offsets, form_filters; 4: in_offsets, in_docs, out_counts;
# 5: vocab_*; 6: tf_meta, len_meta; 7: tf_nav, len_nav; 8: url_kind, site_name_*;
# 9: the field frequencies and positions bit-packed in blocks of 128
# (``services.storage.formats.bitpack``), the forward index byte-aligned, the per-posting
# position offsets gone (``services.storage.formats.segment_codec`` packs and unpacks).
# 10: the impacts one byte each, in steps of the new impact_scale (services.ranking.impact_levels).
# 11: the forward index as a bit stream of prefix-coded entries (fwd_starts, fwd_bits,
# fwd_code_*; services.storage.formats.forward_index) instead of fwd_gaps, fwd_tfs8, fwd_wide_*.
# 12: post_packed without its pos_start column: a posting's positions are as many as its title +
# body frequency, so where they start is the sum of those before it in its block.
# 13: each term's documents in blocks of 128, a block's first and the others' offsets from it
# bit-packed (doc_block_base, doc_block_bits, doc_words; services.storage.formats.doc_blocks)
# instead of post_docs.
# Only the current format is read: the arrays changed shape, not just grew.
SEGMENT_FORMAT = 13
READABLE_FORMATS = frozenset({SEGMENT_FORMAT})

TF_FIELDS = ("title", "body", "anchor", "url", "meta", "nav")  # the BM25F fields (tf_* of a build)
# post_packed's columns, in this order: what is read a few rows at a time first (a column's
# place is found by summing the widths before it): the title and body frequencies (entry
# pages and intitle: read the title; phrases both, whose sum is a posting's number of
# positions), then the rest (explain, the merge).
POSTING_COLUMNS = ("title", "body", "anchor", "url", "meta", "nav")
# The forward index's entries are prefix codes of at most this many bits, read with a table of
# 2 ** FORWARD_CODE_BITS rows (services.storage.formats.forward_index).
FORWARD_CODE_BITS = 12


@dataclass(frozen=True)
class ArraySpec:
    """One array of the contract: its dtype, its length (``per``) and what it means."""

    dtype: np.dtype
    per: str  # term | term+1 | posting | doc | doc+1 | free (checked by a rule)
    meaning: str


_PACKED = "(services.storage.formats.bitpack: words, block starts, block widths)"

SEGMENT_ARRAYS: dict[str, ArraySpec] = {
    "term_bytes": ArraySpec(
        np.dtype(np.uint8), "free", "the terms' UTF-8 bytes concatenated, sorted by those bytes"
    ),
    "term_offsets": ArraySpec(np.dtype(np.uint64), "term+1", "term t is term_bytes[off[t]:off[t+1]]"),
    "df": ArraySpec(np.dtype(np.uint32), "term", "documents holding the term"),
    "idf": ArraySpec(np.dtype(np.float32), "term", "BM25 idf, ln(1 + (N - df + 0.5) / (df + 0.5))"),
    "max_impact": ArraySpec(
        np.dtype(np.float32),
        "term",
        "the largest impact in the term's postings, as stored (the pruning bound)",
    ),
    "impact_scale": ArraySpec(
        np.dtype(np.float32),
        "term",
        "the step of the term's impact levels: an impact is float32(level) * step "
        "(services.ranking.impact_levels)",
    ),
    "post_offsets": ArraySpec(np.dtype(np.uint64), "term+1", "term t's postings are post_*[off[t]:off[t+1]]"),
    "doc_block_base": ArraySpec(
        np.dtype(np.uint32),
        "free",
        "the first document of each block of 128 postings of each term, counted from the term's first "
        "(services.storage.formats.doc_blocks)",
    ),
    "doc_block_bits": ArraySpec(
        np.dtype(np.uint8), "free", "each block's bits per document offset from its first"
    ),
    "doc_words": ArraySpec(
        np.dtype(np.uint32),
        "free",
        "each block's postings' document offsets from its first, at its width, least significant bit "
        "first, each block from a new word; two spare words at the end",
    ),
    "post_impacts": ArraySpec(
        np.dtype(np.uint8),
        "posting",
        "BM25F weight of the term in the document (services.ranking.bm25f), in steps of impact_scale",
    ),
    "post_packed": ArraySpec(
        np.dtype(np.uint32),
        "free",
        "per posting, in blocks of 128: its title, body, anchor, URL, meta and nav frequencies "
        f"(clipped; POSTING_COLUMNS) {_PACKED}",
    ),
    "post_packed_starts": ArraySpec(np.dtype(np.uint64), "free", "post_packed's block starts"),
    "post_packed_widths": ArraySpec(np.dtype(np.uint8), "free", "post_packed's block widths"),
    "pos_block_offsets": ArraySpec(
        np.dtype(np.uint64), "free", "where each block of 128 postings' positions start (blocks + 1 entries)"
    ),
    "pos_packed": ArraySpec(
        np.dtype(np.uint32),
        "free",
        f"each posting's ascending title + body positions as its first, then gaps {_PACKED}",
    ),
    "pos_packed_starts": ArraySpec(np.dtype(np.uint64), "free", "pos_packed's block starts"),
    "pos_packed_widths": ArraySpec(np.dtype(np.uint8), "free", "pos_packed's block widths"),
    "len_title": ArraySpec(np.dtype(np.uint32), "doc", "title length in terms"),
    "len_body": ArraySpec(np.dtype(np.uint32), "doc", "body length in terms"),
    "len_anchor": ArraySpec(np.dtype(np.uint32), "doc", "in-link anchor text length in terms"),
    "len_url": ArraySpec(np.dtype(np.uint32), "doc", "URL words"),
    "len_meta": ArraySpec(np.dtype(np.uint32), "doc", "meta description + keywords length in terms"),
    "len_nav": ArraySpec(np.dtype(np.uint32), "doc", "navigation, link list and form word length in terms"),
    "doc_lengths": ArraySpec(
        np.dtype(np.uint32), "doc", "title + body + meta terms (the document's language model, for feedback)"
    ),
    "fwd_offsets": ArraySpec(
        np.dtype(np.uint64),
        "doc+1",
        "forward index: document d has off[d+1] - off[d] entries (its distinct title, body and meta terms)",
    ),
    "fwd_starts": ArraySpec(
        np.dtype(np.uint64),
        "doc+1",
        "the bit of fwd_bits where document d's entries start (the last: where the entries end)",
    ),
    "fwd_bits": ArraySpec(
        np.dtype(np.uint32),
        "free",
        "per entry, least significant bit first: the code of (bits of its term id's gap from the one "
        "before, bits of its title + body + meta frequency), then both numbers below their top bit "
        "(services.storage.formats.forward_index); two spare words at the end",
    ),
    "fwd_code_lengths": ArraySpec(
        np.dtype(np.uint8), "free", "for each value of the next FORWARD_CODE_BITS bits: its code's length"
    ),
    "fwd_code_gap_bits": ArraySpec(np.dtype(np.uint8), "free", "... and the bits of the entry's gap"),
    "fwd_code_tf_bits": ArraySpec(np.dtype(np.uint8), "free", "... and the bits of the entry's frequency"),
    "near_dup_of": ArraySpec(
        np.dtype(np.uint32),
        "doc",
        "the document's near-duplicate group representative (itself if none; services.text.analysis.minhash)",
    ),
    "form_offsets": ArraySpec(
        np.dtype(np.uint64), "doc+1", "document d's word-form filter is form_filters[off[d]:off[d+1]]"
    ),
    "form_filters": ArraySpec(
        np.dtype(np.uint8), "free", "Bloom filters of the documents' title and body word forms (text.forms)"
    ),
    "pagerank": ArraySpec(np.dtype(np.float64), "doc", "PageRank by document number; sums to 1"),
    "in_offsets": ArraySpec(
        np.dtype(np.uint64), "doc+1", "document d's in-links are in_docs[off[d]:off[d+1]]"
    ),
    "in_docs": ArraySpec(
        np.dtype(np.uint32), "free", "the documents linking to each document, ascending per document"
    ),
    "out_counts": ArraySpec(np.dtype(np.uint32), "doc", "links from the document to crawled pages"),
    "url_kind": ArraySpec(
        np.dtype(np.uint8),
        "doc",
        "the URL's form: 0 root, 1 subroot, 2 path, 3 file (services.ranking.entry_pages.UrlKind)",
    ),
    "site_name_offsets": ArraySpec(
        np.dtype(np.uint64), "doc+1", "document d's site name is site_name_terms[off[d]:off[d+1]]"
    ),
    "site_name_terms": ArraySpec(
        np.dtype(np.uint32),
        "free",
        "term ids in the titles of most of a host's pages, ascending, for its roots (entry_pages.site_names)",
    ),
    "vocab_bytes": ArraySpec(
        np.dtype(np.uint8), "free", "written word forms in 2+ documents, UTF-8, sorted by bytes"
    ),
    "vocab_offsets": ArraySpec(
        np.dtype(np.uint64), "free", "form i is vocab_bytes[off[i]:off[i+1]] (forms + 1 entries)"
    ),
    "vocab_df": ArraySpec(np.dtype(np.uint32), "free", "documents holding each form"),
}


def check_segment(arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any], where: str) -> None:
    """Cheap O(1) checks of ``arrays`` and ``meta`` against the contract (format, names,
    dtypes, lengths, offsets' ends): a bad segment fails when it is written or opened,
    not in the middle of a query. ``where`` names the segment in the message."""

    def bad(why: str) -> SegmentContractError:
        return SegmentContractError(
            f"index segment {where} breaks the segment contract: {why}; re-publish it with `nimbus index`"
        )

    found = meta.get("format", SEGMENT_FORMAT)
    if found not in READABLE_FORMATS:
        raise SegmentContractError(
            f"index segment {where} is format {found}, and this version reads format {SEGMENT_FORMAT} "
            "only (its postings are packed differently): rebuild the index with `nimbus index`"
        )
    for name, spec in SEGMENT_ARRAYS.items():
        if name not in arrays:
            raise bad(f"array {name!r} is missing")
        if arrays[name].dtype != spec.dtype:
            raise bad(f"array {name!r} has dtype {arrays[name].dtype}, expected {spec.dtype}")
    extra = sorted(set(arrays) - set(SEGMENT_ARRAYS))
    if extra:
        raise bad(f"array {extra[0]!r} is not in the contract")
    sizes = {
        "doc": arrays["doc_lengths"].shape[0],
        "term": arrays["df"].shape[0],
        "posting": arrays["post_impacts"].shape[0],
    }
    for name, spec in SEGMENT_ARRAYS.items():
        if spec.per == "free":
            continue
        unit, _, plus = spec.per.partition("+")
        length = sizes[unit] + (1 if plus else 0)
        if arrays[name].shape[0] != length:
            raise bad(f"array {name!r} has {arrays[name].shape[0]} entries, expected {length}")
    ends = (
        ("term_offsets", "term_bytes", "the end of term_bytes"),
        ("form_offsets", "form_filters", "the end of form_filters"),
        ("in_offsets", "in_docs", "the number of in-links"),
        ("site_name_offsets", "site_name_terms", "the number of site name terms"),
    )
    for offsets, values, what in ends:
        if int(arrays[offsets][-1]) != arrays[values].shape[0]:
            raise bad(f"{offsets} does not end at {what}")
    if int(arrays["post_offsets"][-1]) != sizes["posting"]:
        raise bad("post_offsets does not end at the number of postings")
    if (
        arrays["vocab_offsets"].shape[0] != arrays["vocab_df"].shape[0] + 1
        or int(arrays["vocab_offsets"][-1]) != arrays["vocab_bytes"].shape[0]
    ):
        raise bad("vocab_offsets does not match vocab_df and vocab_bytes")
    try:
        check_doc_blocks(arrays)
    except ValueError as exc:
        raise bad(str(exc)) from exc
    posting_blocks = _blocks(sizes["posting"])
    if arrays["pos_block_offsets"].shape[0] != posting_blocks + 1:
        raise bad(f"pos_block_offsets does not have the {posting_blocks} blocks of the postings")
    packed = (
        ("post_packed", sizes["posting"], len(POSTING_COLUMNS)),
        ("pos_packed", int(arrays["pos_block_offsets"][-1]), 1),
    )
    for name, rows, columns in packed:
        blocks = _blocks(rows)
        starts, widths = arrays[f"{name}_starts"], arrays[f"{name}_widths"]
        if starts.shape[0] != blocks + 1 or widths.shape[0] != blocks * columns:
            raise bad(f"{name} does not have the blocks of its {rows} rows")
        if int(starts[-1]) + 2 != arrays[name].shape[0]:
            raise bad(f"{name}_starts does not end at the end of {name}")
    coded_bits = int(arrays["fwd_starts"][-1])
    if int(arrays["fwd_starts"][0]) != 0 or arrays["fwd_bits"].shape[0] != -(-coded_bits // 32) + 2:
        raise bad("fwd_starts does not start at 0 and end at the end of fwd_bits")
    for name in ("fwd_code_lengths", "fwd_code_gap_bits", "fwd_code_tf_bits"):
        if arrays[name].shape[0] != 1 << FORWARD_CODE_BITS:
            raise bad(f"{name} does not have the 2 ** {FORWARD_CODE_BITS} rows of the code's table")
    held = held_row_count(meta)
    if held is not None and held != sizes["doc"]:
        raise bad(f"meta says the delta holds {held} documents but the arrays hold {sizes['doc']} rows")
    if held is None and "num_docs" in meta and int(meta["num_docs"]) != sizes["doc"]:
        raise bad(f"meta says {meta['num_docs']} documents but the arrays hold {sizes['doc']}")


def _blocks(rows: int) -> int:
    return -(-rows // BLOCK)


def segment_dtypes() -> dict[str, np.dtype]:
    """The contract's array names and dtypes (what a published segment holds, exactly)."""
    return {name: spec.dtype for name, spec in SEGMENT_ARRAYS.items()}
