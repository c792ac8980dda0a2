"""A delta segment's meta: the documents it holds and removed, as ranges, and its rows."""

from __future__ import annotations

import numpy as np
import pytest

from services.storage.errors import SegmentContractError
from services.storage.formats.delta import DeltaDocs, from_ranges, held_row_count, to_ranges
from services.storage.formats.segment import check_segment


def test_ranges_round_trip_runs_of_new_pages_and_scattered_recrawls() -> None:
    docs = np.array([9, 5, 6, 7, 100, 101, 5])  # unsorted, a duplicate
    assert to_ranges(docs) == [[5, 8], [9, 10], [100, 102]]
    assert from_ranges(to_ranges(docs)).tolist() == [5, 6, 7, 9, 100, 101]
    assert to_ranges(np.zeros(0)) == [] and from_ranges([]).shape == (0,)


def test_meta_round_trip_and_rows() -> None:
    held = DeltaDocs("index/base.nseg", np.array([3, 40, 41], np.uint32), np.array([7], np.uint32), True)
    back = DeltaDocs.from_meta({"num_docs": 42, **held.to_meta()})
    assert back is not None and back.base == "index/base.nseg" and back.rows_held
    assert back.holds.tolist() == [3, 40, 41] and back.removed.tolist() == [7]
    assert back.rows(np.array([40, 3])).tolist() == [1, 0]  # held rows: positions in holds
    assert held_row_count(held.to_meta()) == 3
    wide = DeltaDocs("b", np.array([3], np.uint32))
    assert wide.rows(np.array([3])).tolist() == [3] and held_row_count(wide.to_meta()) is None
    assert DeltaDocs.from_meta({"num_docs": 4}) is None  # a base: no delta object


def test_the_contract_counts_a_held_rows_delta_by_its_ranges() -> None:
    from tests.unit.search.retrieval.test_segment_set import arrays_of

    arrays = arrays_of({4: ("A", "alpha beta"), 6: ("B", "beta gamma")}, 8, held_rows_only=True)
    meta = {"num_docs": 8, **DeltaDocs("b", np.array([4, 6], np.uint32), rows_held=True).to_meta()}
    check_segment(arrays, meta, "delta")  # 2 rows for 8 document numbers: fine
    wrong = {"num_docs": 8, **DeltaDocs("b", np.array([4, 5, 6], np.uint32), rows_held=True).to_meta()}
    with pytest.raises(SegmentContractError, match="holds 3 documents but the arrays hold 2 rows"):
        check_segment(arrays, wrong, "delta")
