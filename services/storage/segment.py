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

import json
import struct
from pathlib import Path
from typing import Any

import numpy as np

from services.storage.errors import BlockFormatError

MAGIC = b"NMBSEG01"
_PRE = struct.Struct("<8sI")
ALIGN = 64


def pack_segment(arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> bytes:
    """Serialise arrays (any 1-D numeric dtype) and a JSON-able meta dict."""
    specs: dict[str, dict[str, Any]] = {}
    # Offsets depend on the header length, which depends on the offsets:
    # reserve room by formatting with a generous fixed width first.
    names = list(arrays)
    for name in names:
        arr = np.ascontiguousarray(arrays[name])
        if arr.ndim != 1:
            raise ValueError(f"segment array {name!r} must be one-dimensional")
        arrays[name] = arr
    header_room = 256 + 128 * len(names) + len(json.dumps(meta))
    offset = _align(_PRE.size + header_room)
    for name in names:
        arr = arrays[name]
        specs[name] = {"dtype": arr.dtype.str, "offset": offset, "length": int(arr.shape[0])}
        offset = _align(offset + arr.nbytes)
    header = json.dumps({"meta": meta, "arrays": specs}).encode("utf-8")
    if len(header) > header_room:
        raise ValueError("segment header larger than reserved room")  # cannot happen: see sizing
    out = bytearray(offset)
    _PRE.pack_into(out, 0, MAGIC, len(header))
    out[_PRE.size : _PRE.size + len(header)] = header
    for name in names:
        spec, arr = specs[name], arrays[name]
        out[spec["offset"] : spec["offset"] + arr.nbytes] = arr.tobytes()
    return bytes(out)


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
