"""Packing MRIndex rows into the segment's arrays (services.indexing.segment_arrays; the contract in
services.storage.formats.segment)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mapreduce.postings_wire import Chunk
from services.indexing.errors import PublishError
from services.indexing.index_rows import collect_index_rows
from services.indexing.segment_arrays import _text_terms, segment_arrays, segment_meta
from services.ranking.impact_levels import dequantize
from services.storage.errors import SegmentContractError
from services.storage.formats.segment_codec import plain_dtypes
from services.text.analysis.analyze import analyzer_version


def chunk(*postings: tuple[int, int, list[int]]) -> bytes:
    """A term's row (as the job writes it) from (doc, body tf, positions) triples
    (title, anchor, meta and nav tf 0, url tf 1)."""
    return Chunk(
        np.array([p[0] for p in postings], np.uint32),
        np.array([[0, p[1], 0, 1, 0, 0] for p in postings], np.uint16).reshape(-1, 6),
        np.array([len(p[2]) for p in postings], np.uint32),
        np.array([x for p in postings for x in p[2]], np.uint32),
    ).encode()


# Job output in reducer order, which is not term order. "école" sorts after
# "zoo" by UTF-8 bytes (0xC3 > 'z'), though before it by Unicode collation.
ROWS = [
    (["t", "zoo"], chunk((1, 2, [0, 2]))),
    (["l", 1], [0, 3, 0, 1, 0, 0]),
    (["t", "école"], chunk((0, 1, [3]), (2, 4, [0, 1, 2, 3]))),
    (["t", "apple"], chunk((0, 3, [0, 1, 2]), (1, 1, [1]), (2, 1, [4]))),
    (["l", 0], [0, 4, 0, 1, 0, 0]),
    (["l", 2], [0, 5, 0, 1, 0, 0]),
]


def arrays_for(rows: list, pagerank: list[float] | None = None) -> dict[str, np.ndarray]:
    ranks = np.array(pagerank or [0.2, 0.3, 0.5])
    return segment_arrays(collect_index_rows(rows), ranks, 3)


def test_terms_sorted_by_utf8_bytes_with_their_postings_and_positions() -> None:
    a = arrays_for(ROWS)
    terms = [
        bytes(a["term_bytes"][a["term_offsets"][i] : a["term_offsets"][i + 1]]).decode()
        for i in range(len(a["df"]))
    ]
    assert terms == ["apple", "zoo", "école"]
    assert a["df"].tolist() == [3, 1, 2]
    assert a["post_offsets"].tolist() == [0, 3, 4, 6]
    assert a["post_docs"].tolist() == [0, 1, 2, 1, 0, 2]
    assert a["tf_body"].tolist() == [3, 1, 1, 2, 1, 4]
    assert a["tf_url"].tolist() == [1] * 6
    runs = [a["positions"][a["pos_offsets"][p] : a["pos_offsets"][p + 1]].tolist() for p in range(6)]
    assert runs == [[0, 1, 2], [1], [4], [0, 2], [3], [0, 1, 2, 3]]
    assert a["len_body"].tolist() == [4, 3, 5] and a["doc_lengths"].tolist() == [4, 3, 5]


def test_dtypes_idf_impacts_forward_index_and_pagerank_follow_the_contract() -> None:
    a = arrays_for(ROWS, [2.0, 3.0, 5.0])  # not normalised: publish divides by the sum
    assert {name: arr.dtype for name, arr in a.items()} == plain_dtypes()
    idf = [math.log(1 + (3 - df + 0.5) / (df + 0.5)) for df in (3, 1, 2)]
    assert a["idf"].tolist() == pytest.approx(idf, rel=1e-6)
    assert (a["post_impacts"] > 0).all()  # levels: every posting scores something
    assert a["impact_scale"].tolist() == pytest.approx([x * 2.2 / 255 for x in idf], rel=1e-6)
    for t in range(3):
        lo, hi = a["post_offsets"][t], a["post_offsets"][t + 1]
        stored = dequantize(a["post_impacts"][lo:hi], a["impact_scale"][t])
        assert a["max_impact"][t] == stored.max()  # the bound is the largest impact as stored
    # Forward index: doc 0 holds apple (3) and école (1), doc 2 apple (1) and école (4).
    fwd = [
        dict(
            zip(
                a["fwd_terms"][a["fwd_offsets"][d] : a["fwd_offsets"][d + 1]].tolist(),
                a["fwd_tfs"][a["fwd_offsets"][d] : a["fwd_offsets"][d + 1]].tolist(),
                strict=True,
            )
        )
        for d in range(3)
    ]
    assert fwd == [{0: 3, 2: 1}, {0: 1, 1: 2}, {0: 1, 2: 4}]
    assert a["pagerank"].tolist() == pytest.approx([0.2, 0.3, 0.5])
    meta = segment_meta(a, pagerank_iterations=7, pagerank_damping=0.85, created_at=12.5)
    assert meta["format"] == 13 and meta["num_postings"] == 6 and meta["num_terms"] == 3
    assert meta["analyzer"] == analyzer_version() and meta["languages"] == {}
    assert meta["bm25f"]["k1"] == 1.2


def test_empty_documents_get_zero_length() -> None:
    a = segment_arrays(
        collect_index_rows([(["t", "x"], chunk((0, 1, [0]))), (["l", 0], [0, 1, 0, 0, 0, 0])]),
        np.array([0.5, 0.5]),
        2,
    )
    assert a["doc_lengths"].tolist() == [1, 0]
    assert a["fwd_offsets"].tolist() == [0, 1, 1]


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([(["t", "x"], chunk((5, 1, [0])))], "doc_num 5"),
        ([(["l", 9], [0, 1, 0, 0, 0, 0])], "doc_num 9"),
        ([(["t", "x"], chunk((1, 1, [0]), (1, 2, [1])))], "indexed twice"),
        ([(["what", "x"], 1)], "unexpected MRIndex row kind"),
    ],
)
def test_inconsistent_job_output_is_refused(rows: list, message: str) -> None:
    with pytest.raises(PublishError, match=message):
        arrays_for(rows)


def test_pagerank_vector_must_cover_every_document() -> None:
    with pytest.raises(PublishError, match="2 entries for 3 documents"):
        segment_arrays(collect_index_rows(ROWS), np.array([0.5, 0.5]), 3)


def test_link_arrays_hold_in_links_by_target_and_out_counts():
    from services.indexing.segment_arrays import link_arrays

    arrays = link_arrays({0: [1, 2, 2], 2: [1], 3: []}, 4)  # 0 links to 2 twice: once here
    offsets, sources = arrays["in_offsets"].tolist(), arrays["in_docs"].tolist()
    assert [sources[offsets[d] : offsets[d + 1]] for d in range(4)] == [[], [0, 2], [0], []]
    assert arrays["out_counts"].tolist() == [2, 0, 1, 0]
    with pytest.raises(PublishError, match="outside 0..3"):
        link_arrays({0: [7]}, 4)


def test_a_segment_of_an_older_format_is_refused_with_the_fix():
    from services.storage.formats.segment import SEGMENT_FORMAT, check_segment
    from services.storage.formats.segment_codec import compact_segment

    assert SEGMENT_FORMAT == 13
    stored = compact_segment(arrays_for(ROWS))
    check_segment(stored, {"format": 13, "num_docs": 3}, "new.nseg")  # no error
    for old in (3, 6, 8, 9, 10, 11, 12):
        with pytest.raises(
            SegmentContractError, match=rf"format {old}, .*rebuild the index with `nimbus index`"
        ):
            check_segment(stored, {"format": old, "num_docs": 3}, "old.nseg")
    plain = arrays_for(ROWS)  # format 8's arrays, unpacked
    with pytest.raises(SegmentContractError, match="doc_block_base"):
        check_segment(plain, {"format": 13, "num_docs": 3}, "unpacked.nseg")


def test_a_stored_segment_expands_to_the_arrays_it_was_made_from():
    from services.storage.formats.segment import check_segment
    from services.storage.formats.segment_codec import compact_segment, expand_segment

    plain = arrays_for(ROWS)
    stored = compact_segment(plain)
    check_segment(stored, {"format": 13, "num_docs": 3}, "t.nseg")
    back = expand_segment(stored)
    assert sorted(back) == sorted(plain)
    for name, array in plain.items():
        assert back[name].dtype == array.dtype and back[name].tolist() == array.tolist(), name


def test_text_terms_keep_the_title_and_body_entries_of_each_document_empty_ones_too() -> None:
    # Documents: empty, [1 (tf 0), 4 (tf 2)], empty, [2 (tf 1), 3 (tf 0), 5 (tf 0)], [7 (tf 0)], empty.
    offsets = np.array([0, 0, 2, 2, 5, 6, 6], dtype=np.uint64)
    terms = np.array([1, 4, 2, 3, 5, 7], dtype=np.uint32)
    tfs = np.array([0, 2, 1, 0, 0, 0], dtype=np.uint16)
    kept_offsets, kept_terms = _text_terms(offsets, terms, tfs)
    assert kept_offsets.tolist() == [0, 0, 1, 1, 2, 2, 2] and kept_offsets.dtype == np.uint64
    assert kept_terms.tolist() == [4, 2]
    none_offsets, none_terms = _text_terms(np.zeros(3, np.uint64), terms[:0], tfs[:0])
    assert none_offsets.tolist() == [0, 0, 0] and none_terms.shape == (0,)
