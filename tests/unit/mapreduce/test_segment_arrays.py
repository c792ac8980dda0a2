"""Packing MRIndex rows into the segment's arrays (the contract in mapreduce.publish)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mapreduce.publish import PublishError, collect_index_rows, segment_arrays, segment_meta

# Job output in reducer order, which is not term order. "école" sorts after
# "zoo" by UTF-8 bytes (0xC3 > 'z'), though before it by Unicode collation.
ROWS = [
    (["term", "zoo"], [[1, 2]]),
    (["len", 1], 3),
    (["term", "école"], [[0, 1], [2, 4]]),
    (["term", "apple"], [[0, 3], [1, 1], [2, 1]]),
    (["len", 0], 4),
    (["len", 2], 5),
]


def arrays_for(rows: list, pagerank: list[float] | None = None) -> dict[str, np.ndarray]:
    ranks = np.array(pagerank or [0.2, 0.3, 0.5])
    return segment_arrays(collect_index_rows(rows), ranks, 3)


def test_terms_sorted_by_utf8_bytes_with_their_postings() -> None:
    a = arrays_for(ROWS)
    terms = [bytes(a["term_bytes"][a["term_offsets"][i]:a["term_offsets"][i + 1]]).decode()
             for i in range(len(a["df"]))]
    assert terms == ["apple", "zoo", "école"]
    assert a["df"].tolist() == [3, 1, 2]
    assert a["post_offsets"].tolist() == [0, 3, 4, 6]
    assert a["post_docs"].tolist() == [0, 1, 2, 1, 0, 2]
    assert a["post_tfs"].tolist() == [3, 1, 1, 2, 1, 4]
    assert a["doc_lengths"].tolist() == [4, 3, 5]


def test_dtypes_idf_norms_and_pagerank_follow_the_contract() -> None:
    a = arrays_for(ROWS, [2.0, 3.0, 5.0])  # not normalised: publish divides by the sum
    dtypes = {name: arr.dtype for name, arr in a.items()}
    assert dtypes == {
        "term_bytes": np.uint8, "term_offsets": np.uint64, "df": np.uint32, "idf": np.float32,
        "post_offsets": np.uint64, "post_docs": np.uint32, "post_tfs": np.uint32,
        "doc_lengths": np.uint32, "doc_norms": np.float32, "pagerank": np.float64,
    }
    idf_apple, idf_zoo, idf_ecole = math.log(1 + 3 / 3), math.log(1 + 3 / 1), math.log(1 + 3 / 2)
    assert a["idf"].tolist() == pytest.approx([idf_apple, idf_zoo, idf_ecole], rel=1e-6)
    # doc 0: apple tf 3, école tf 1; doc 1: apple 1, zoo 2; doc 2: apple 1, école 4.
    norm0 = math.hypot((1 + math.log(3)) * idf_apple, idf_ecole)
    norm1 = math.hypot(idf_apple, (1 + math.log(2)) * idf_zoo)
    norm2 = math.hypot(idf_apple, (1 + math.log(4)) * idf_ecole)
    assert a["doc_norms"].tolist() == pytest.approx([norm0, norm1, norm2], rel=1e-6)
    assert a["pagerank"].tolist() == pytest.approx([0.2, 0.3, 0.5])
    meta = segment_meta(a, pagerank_iterations=7, pagerank_damping=0.85, created_at=12.5)
    assert meta == {"format": 1, "num_docs": 3, "num_terms": 3, "num_postings": 6,
                    "created_at": 12.5, "pagerank_iterations": 7, "pagerank_damping": 0.85}


def test_empty_documents_get_zero_norm_and_length() -> None:
    a = segment_arrays(collect_index_rows([(["term", "x"], [[0, 1]]), (["len", 0], 1)]),
                       np.array([0.5, 0.5]), 2)
    assert a["doc_lengths"].tolist() == [1, 0]
    assert a["doc_norms"][1] == 0.0


@pytest.mark.parametrize(("rows", "message"), [
    ([(["term", "x"], [[5, 1]])], "doc_num 5"),
    ([(["len", 9], 1)], "doc_num 9"),
    ([(["term", "x"], [[1, 1], [1, 2]])], "indexed twice"),
    ([(["what", "x"], 1)], "unexpected MRIndex row kind"),
])
def test_inconsistent_job_output_is_refused(rows: list, message: str) -> None:
    with pytest.raises(PublishError, match=message):
        arrays_for(rows)


def test_pagerank_vector_must_cover_every_document() -> None:
    with pytest.raises(PublishError, match="2 entries for 3 documents"):
        segment_arrays(collect_index_rows(ROWS), np.array([0.5, 0.5]), 3)
