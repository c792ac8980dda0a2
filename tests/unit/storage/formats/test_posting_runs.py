"""A term range's postings (services.storage.formats.posting_runs) read from a stored segment
are what the plain segment holds for those rows: the merge reads its base this way, a range at
a time, never expanded whole."""

from __future__ import annotations

import numpy as np
import pytest

from services.storage.formats.bitpack import BLOCK
from services.storage.formats.posting_runs import is_stored, posting_run
from services.storage.formats.segment import TF_FIELDS
from services.storage.formats.segment_codec import compact_segment
from tests.unit.storage.formats.test_segment_codec import plain


@pytest.mark.parametrize("postings", [0, 1, BLOCK, 3 * BLOCK + 5])
def test_any_run_of_a_stored_segment_is_the_plain_segments_rows(postings: int) -> None:
    before = plain(postings, 7, postings)
    stored = compact_segment(before)
    assert is_stored(stored) and not is_stored(before)
    offsets = before["pos_offsets"].astype(np.int64)
    edges = sorted({0, 1, BLOCK - 1, BLOCK, BLOCK + 1, postings // 2, postings - 1, postings})
    edges = [e for e in edges if 0 <= e <= postings]
    for lo in edges:
        for hi in edges:
            if hi < lo:
                continue
            for arrays in (before, stored):
                run = posting_run(arrays, lo, hi)
                assert run.docs.tolist() == before["post_docs"][lo:hi].tolist()
                for f, field in enumerate(TF_FIELDS):
                    assert run.field_tfs[:, f].tolist() == before[f"tf_{field}"][lo:hi].tolist()
                assert run.pos_counts.tolist() == np.diff(offsets[lo : hi + 1]).tolist()
                assert run.positions.dtype == np.uint32
                assert run.positions.tolist() == before["positions"][offsets[lo] : offsets[hi]].tolist()
