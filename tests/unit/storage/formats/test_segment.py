"""The index-segment container: written array by array, read back by memory-mapping."""

from __future__ import annotations

import numpy as np
import pytest

from services.storage.errors import BlockFormatError
from services.storage.formats.segment import ALIGN, open_segment, pack_segment, write_segment


def _arrays() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    return {
        "post_docs": rng.integers(0, 1 << 31, 1001, dtype=np.uint32),
        "idf": rng.random(17, dtype=np.float32),
        "empty": np.zeros(0, dtype=np.uint64),
        "strided": np.arange(40, dtype=np.uint16)[::2],  # not contiguous: copied once
        "pagerank": rng.random(33),
    }


def test_a_written_segment_reads_back_aligned_and_equal(tmp_path) -> None:
    arrays, meta = _arrays(), {"num_docs": 33, "format": 2}
    path = tmp_path / "s.nseg"
    with path.open("wb") as fh:
        size = write_segment(fh, arrays, meta)
    assert size == path.stat().st_size
    assert path.read_bytes() == pack_segment(arrays, meta)  # the in-memory form is the same bytes
    read, read_meta = open_segment(path)
    assert read_meta == meta
    assert set(read) == set(arrays)
    for name, arr in arrays.items():
        assert read[name].dtype == arr.dtype
        np.testing.assert_array_equal(read[name], arr)
        if arr.nbytes:
            assert read[name].ctypes.data % ALIGN == 0  # mapped at an aligned address


def test_a_two_dimensional_array_is_refused_before_anything_is_written(tmp_path) -> None:
    path = tmp_path / "bad.nseg"
    with path.open("wb") as fh, pytest.raises(ValueError, match="one-dimensional"):
        write_segment(fh, {"tfs": np.zeros((3, 4), dtype=np.uint16)}, {})
    assert path.stat().st_size == 0
    with pytest.raises(BlockFormatError, match="truncated"):
        open_segment(path)
