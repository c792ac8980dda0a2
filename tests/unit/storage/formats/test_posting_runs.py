"""A term range's postings (services.storage.formats.posting_runs) read from a stored segment
are what the plain segment holds for those rows: the merge reads its base this way, a range at
a time, never expanded whole."""

from __future__ import annotations

import numpy as np
import pytest

from services.storage.formats.bitpack import BLOCK
from services.storage.formats.doc_blocks import DocBlocks
from services.storage.formats.posting_runs import is_stored, posting_run
from services.storage.formats.segment import TF_FIELDS
from services.storage.formats.segment_codec import compact_segment
from tests.unit.storage.formats.test_segment_codec import plain


@pytest.mark.parametrize(("postings", "docs"), [(0, 7), (1, 7), (BLOCK, 7), (3 * BLOCK + 5, 7), (900, 300)])
def test_any_run_of_a_stored_segment_is_the_plain_segments_rows(postings: int, docs: int) -> None:
    before = plain(postings, docs, postings)
    stored = compact_segment(before)
    assert is_stored(stored) and not is_stored(before)
    offsets = before["pos_offsets"].astype(np.int64)
    term_offsets = before["post_offsets"].astype(np.int64)
    terms = term_offsets.shape[0] - 1
    edges = sorted({0, 1, terms // 2, terms - 1, terms} & set(range(terms + 1)))
    for lo_term in edges:
        for hi_term in edges:
            if hi_term < lo_term:
                continue
            lo, hi = term_offsets[lo_term], term_offsets[hi_term]
            for arrays, blocks in ((before, None), (stored, None), (stored, DocBlocks.of(stored))):
                run = posting_run(arrays, lo_term, hi_term, blocks)
                assert run.docs.tolist() == before["post_docs"][lo:hi].tolist()
                for f, field in enumerate(TF_FIELDS):
                    assert run.field_tfs[:, f].tolist() == before[f"tf_{field}"][lo:hi].tolist()
                assert run.pos_counts.tolist() == np.diff(offsets[lo : hi + 1]).tolist()
                assert run.positions.dtype == np.uint32
                assert run.positions.tolist() == before["positions"][offsets[lo] : offsets[hi]].tolist()
