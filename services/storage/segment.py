"""Index segment container: named, typed, 64-byte-aligned arrays in one blob.

The publish step writes a segment; the search service downloads it once and
memory-maps it, so start-up costs no parsing and the OS page cache shares
the arrays between worker processes. Layout::

    magic        8 bytes  b"NMBSEG01"
    header_len   uint32   little-endian
    header       JSON: {"meta": {...}, "arrays": {name: {"dtype", "offset", "length"}}}
    arrays       each at a 64-byte-aligned absolute offset

Which arrays a segment holds is the business of the writer (mapreduce.publish)
and the reader (services.search.index); this module only packs and unpacks.
"""

from __future__ import annotations

import io
import json
import struct
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from services.storage.errors import BlockFormatError

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
            written += fh.write(memoryview(arr).cast("B"))
    written += fh.write(b"\0" * (offset - written))  # the last array's padding, as before
    return written


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


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
