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
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from services.storage.errors import BlockFormatError, SegmentContractError

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


# The segment contract, format 8. N documents, T terms, P postings, Q positions, E links.
# What each format added (an array's ``since``):
# 3: near_dup_of, form_offsets, form_filters; 4: in_offsets, in_docs, out_counts; 5: vocab_*;
# 6: tf_meta, len_meta (the meta description and keywords as a field of their own);
# 7: tf_nav, len_nav (menus, link lists and form words, cut out of the body, as a field);
# 8: url_kind, site_name_* (entry pages for navigational queries)
SEGMENT_FORMAT = 8
READABLE_FORMATS = frozenset({3, 4, 5, 6, 7, 8})  # older segments serve without the newer arrays


@dataclass(frozen=True)
class ArraySpec:
    """One array of the contract: its dtype, its length (``per``) and what it means."""

    dtype: np.dtype
    per: str  # term | term+1 | posting | posting+1 | doc | doc+1 | free (checked by a rule)
    meaning: str
    since: int = 3  # the format that added it (older segments lack it)


SEGMENT_ARRAYS: dict[str, ArraySpec] = {
    "term_bytes": ArraySpec(
        np.dtype(np.uint8), "free", "the terms' UTF-8 bytes concatenated, sorted by those bytes"
    ),
    "term_offsets": ArraySpec(np.dtype(np.uint64), "term+1", "term t is term_bytes[off[t]:off[t+1]]"),
    "df": ArraySpec(np.dtype(np.uint32), "term", "documents holding the term"),
    "idf": ArraySpec(np.dtype(np.float32), "term", "BM25 idf, ln(1 + (N - df + 0.5) / (df + 0.5))"),
    "max_impact": ArraySpec(
        np.dtype(np.float32), "term", "the largest impact in the term's postings (the pruning bound)"
    ),
    "post_offsets": ArraySpec(np.dtype(np.uint64), "term+1", "term t's postings are post_*[off[t]:off[t+1]]"),
    "post_docs": ArraySpec(np.dtype(np.uint32), "posting", "document numbers, ascending per term"),
    "post_impacts": ArraySpec(
        np.dtype(np.float32), "posting", "BM25F weight of the term in the document (services.ranking.bm25f)"
    ),
    "tf_title": ArraySpec(np.dtype(np.uint16), "posting", "title term frequency (clipped)"),
    "tf_body": ArraySpec(np.dtype(np.uint16), "posting", "body term frequency (clipped)"),
    "tf_anchor": ArraySpec(np.dtype(np.uint16), "posting", "in-link anchor term frequency (clipped)"),
    "tf_url": ArraySpec(np.dtype(np.uint16), "posting", "URL-word term frequency (clipped)"),
    "tf_meta": ArraySpec(
        np.dtype(np.uint16), "posting", "meta description + keywords term frequency (clipped)", since=6
    ),
    "tf_nav": ArraySpec(
        np.dtype(np.uint16), "posting", "navigation, link list and form word tf (clipped)", since=7
    ),
    "pos_offsets": ArraySpec(
        np.dtype(np.uint64), "posting+1", "posting p's positions are positions[off[p]:off[p+1]]"
    ),
    "positions": ArraySpec(np.dtype(np.uint32), "free", "ascending term positions in title + body"),
    "len_title": ArraySpec(np.dtype(np.uint32), "doc", "title length in terms"),
    "len_body": ArraySpec(np.dtype(np.uint32), "doc", "body length in terms"),
    "len_anchor": ArraySpec(np.dtype(np.uint32), "doc", "in-link anchor text length in terms"),
    "len_url": ArraySpec(np.dtype(np.uint32), "doc", "URL words"),
    "len_meta": ArraySpec(np.dtype(np.uint32), "doc", "meta description + keywords length in terms", since=6),
    "len_nav": ArraySpec(
        np.dtype(np.uint32), "doc", "navigation, link list and form word length in terms", since=7
    ),
    "doc_lengths": ArraySpec(
        np.dtype(np.uint32), "doc", "title + body + meta terms (the document's language model, for feedback)"
    ),
    "fwd_offsets": ArraySpec(
        np.dtype(np.uint64), "doc+1", "forward index: document d's terms are fwd_*[off[d]:off[d+1]]"
    ),
    "fwd_terms": ArraySpec(np.dtype(np.uint32), "posting", "term ids, ascending per document"),
    "fwd_tfs": ArraySpec(np.dtype(np.uint16), "posting", "their title + body + meta frequencies"),
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
        np.dtype(np.uint64), "doc+1", "document d's in-links are in_docs[off[d]:off[d+1]]", since=4
    ),
    "in_docs": ArraySpec(
        np.dtype(np.uint32), "free", "the documents linking to each document, ascending per document", since=4
    ),
    "out_counts": ArraySpec(np.dtype(np.uint32), "doc", "links from the document to crawled pages", since=4),
    "url_kind": ArraySpec(
        np.dtype(np.uint8),
        "doc",
        "the URL's form: 0 root, 1 subroot, 2 path, 3 file (services.ranking.entry_pages.UrlKind)",
        since=8,
    ),
    "site_name_offsets": ArraySpec(
        np.dtype(np.uint64), "doc+1", "document d's site name is site_name_terms[off[d]:off[d+1]]", since=8
    ),
    "site_name_terms": ArraySpec(
        np.dtype(np.uint32),
        "free",
        "term ids in the titles of most of a host's pages, ascending, for its roots (entry_pages.site_names)",
        since=8,
    ),
    "vocab_bytes": ArraySpec(
        np.dtype(np.uint8), "free", "written word forms in 2+ documents, UTF-8, sorted by bytes", since=5
    ),
    "vocab_offsets": ArraySpec(
        np.dtype(np.uint64), "free", "form i is vocab_bytes[off[i]:off[i+1]] (forms + 1 entries)", since=5
    ),
    "vocab_df": ArraySpec(np.dtype(np.uint32), "free", "documents holding each form", since=5),
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
        raise bad(f"it is format {found}, this version reads formats {sorted(READABLE_FORMATS)}")
    expected = {name: spec for name, spec in SEGMENT_ARRAYS.items() if spec.since <= found}
    for name, spec in expected.items():
        if name not in arrays:
            raise bad(f"array {name!r} is missing")
        if arrays[name].dtype != spec.dtype:
            raise bad(f"array {name!r} has dtype {arrays[name].dtype}, expected {spec.dtype}")
    sizes = {
        "doc": arrays["doc_lengths"].shape[0],
        "term": arrays["df"].shape[0],
        "posting": arrays["post_docs"].shape[0],
    }
    for name, spec in expected.items():
        if spec.per == "free":
            continue
        unit, _, plus = spec.per.partition("+")
        length = sizes[unit] + (1 if plus else 0)
        if arrays[name].shape[0] != length:
            raise bad(f"array {name!r} has {arrays[name].shape[0]} entries, expected {length}")
    if int(arrays["term_offsets"][-1]) != arrays["term_bytes"].shape[0]:
        raise bad("term_offsets does not end at the end of term_bytes")
    if int(arrays["post_offsets"][-1]) != sizes["posting"]:
        raise bad("post_offsets does not end at the number of postings")
    if int(arrays["pos_offsets"][-1]) != arrays["positions"].shape[0]:
        raise bad("pos_offsets does not end at the number of positions")
    if int(arrays["form_offsets"][-1]) != arrays["form_filters"].shape[0]:
        raise bad("form_offsets does not end at the end of form_filters")
    if "in_offsets" in expected and int(arrays["in_offsets"][-1]) != arrays["in_docs"].shape[0]:
        raise bad("in_offsets does not end at the number of in-links")
    if (
        "site_name_offsets" in expected
        and int(arrays["site_name_offsets"][-1]) != arrays["site_name_terms"].shape[0]
    ):
        raise bad("site_name_offsets does not end at the number of site name terms")
    if "vocab_df" in expected and (
        arrays["vocab_offsets"].shape[0] != arrays["vocab_df"].shape[0] + 1
        or int(arrays["vocab_offsets"][-1]) != arrays["vocab_bytes"].shape[0]
    ):
        raise bad("vocab_offsets does not match vocab_df and vocab_bytes")
    if "num_docs" in meta and int(meta["num_docs"]) != sizes["doc"]:
        raise bad(f"meta says {meta['num_docs']} documents but the arrays hold {sizes['doc']}")


def segment_dtypes() -> dict[str, np.dtype]:
    """The contract's array names and dtypes (what a published segment holds, exactly)."""
    return {name: spec.dtype for name, spec in SEGMENT_ARRAYS.items()}
