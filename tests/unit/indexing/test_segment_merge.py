"""Merging segments (services.indexing.segment_merge): a base segment and a delta of new and
recrawled documents merge into exactly the segment a full build of the same documents gives,
statistics and all (document frequencies, idf, impacts, bounds, forward index, folding),
stored byte for byte as publish stores a build's, whatever the term ranges it is merged in."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from mapreduce.postings_wire import NUM_FIELDS, Chunk
from services.indexing.errors import PublishError
from services.indexing.index_rows import collect_index_rows
from services.indexing.merge_ranges import POSTINGS_PER_RANGE
from services.indexing.segment_arrays import segment_arrays
from services.indexing.segment_merge import SegmentPart, check_mergeable, merge_segments
from services.storage.formats import bitpack
from services.storage.formats.segment import POSTING_COLUMNS, SEGMENT_FORMAT, check_segment
from services.storage.formats.segment_codec import compact_segment, expand_segment

WORDS = [f"w{i}" for i in range(60)] + ["école", "zoo", "ab"]

Doc = dict[str, tuple[list[int], list[int]]]  # term -> (field tfs, positions)


def body_tf() -> list[int]:
    """Field frequencies of a word once in the body."""
    tfs = [0] * NUM_FIELDS
    tfs[1] = 1
    return tfs


def random_doc(rng: random.Random, words: list[str], *, anchor: bool = True) -> Doc:
    """Terms with random field frequencies (``anchor``: in-link anchor text's too)."""
    doc: Doc = {}
    position = 0
    for word in rng.sample(words, rng.randint(1, 12)):
        tfs = [rng.choice([0, 0, 1, 2]) for _ in range(NUM_FIELDS)]
        tfs[1] = max(1, tfs[1])
        tfs[2] = tfs[2] if anchor else 0
        words = tfs[0] + tfs[1]  # a posting's positions: its title and body words
        doc[word] = (tfs, list(range(position, position + words)))
        position += words
    return doc


def rows_for(
    docs: dict[int, Doc],
    vocabulary: dict[str, int] | None = None,
    anchors: dict[int, dict[str, int]] | None = None,
) -> list:
    """MRIndex's rows for ``docs`` (doc -> its terms), as the job writes them, with the
    in-link anchor text ``anchors`` (doc -> term -> frequency) of any document."""
    by_term: dict[str, list[tuple[int, list[int], list[int]]]] = {}
    rows: list = []
    anchors = anchors or {}
    for num in sorted(set(docs) | set(anchors)):
        doc = {term: (list(tfs), positions) for term, (tfs, positions) in docs.get(num, {}).items()}
        for term, tf in anchors.get(num, {}).items():
            doc.setdefault(term, ([0] * NUM_FIELDS, []))[0][2] = tf
        for term, (tfs, positions) in doc.items():
            by_term.setdefault(term, []).append((num, tfs, positions))
        lengths = [sum(tfs[f] for tfs, _ in doc.values()) for f in range(NUM_FIELDS)]
        rows.append((["l", num], lengths))
        if num in docs:  # a page's word forms; an anchor text's target has none of its own
            rows.append((["f", num], bytes([num % 251, 7])))
    for term, postings in by_term.items():
        chunk = Chunk(
            np.array([p[0] for p in postings], np.uint32),
            np.array([p[1] for p in postings], np.uint16).reshape(-1, NUM_FIELDS),
            np.array([len(p[2]) for p in postings], np.uint32),
            np.array([x for p in postings for x in p[2]], np.uint32),
        ).encode()
        rows.append((["t", term], chunk))
    for form, held in (vocabulary or {}).items():
        rows.append((["v", form], held))
    return rows


def build(
    docs: dict[int, Doc],
    num_docs: int,
    links: dict[int, list[int]],
    anchors: dict[int, dict[str, int]] | None = None,
) -> dict[str, np.ndarray]:
    ranks = np.full(num_docs, 1.0 / num_docs)
    return segment_arrays(collect_index_rows(rows_for(docs, anchors=anchors)), ranks, num_docs, links=links)


def assert_stored_as(merged: dict[str, np.ndarray], full: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``merged`` (stored arrays) is what publish stores of the build ``full`` (plain), byte for
    byte and in its order (the file's layout); returns the merge's plain arrays."""
    stored_full = compact_segment(full)
    assert list(merged) == list(stored_full)
    for name, value in stored_full.items():
        assert merged[name].dtype == value.dtype, name
        assert merged[name].tobytes() == value.tobytes(), name
    plain = expand_segment(merged)
    assert sorted(plain) == sorted(full)
    for name, value in full.items():
        np.testing.assert_array_equal(plain[name], value, err_msg=name)
    return plain


# The default, and ranges of a few postings: a term range's end inside a block of 128
# postings, and terms merged a handful at a time.
RANGES = [POSTINGS_PER_RANGE, 5, 1]


@pytest.mark.parametrize("range_postings", RANGES)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_base_plus_delta_merges_into_what_a_full_build_of_the_same_records_gives(
    seed: int, range_postings: int
) -> None:
    rng = random.Random(seed)
    base_n, total = 40, 70
    base = {d: random_doc(rng, WORDS) for d in range(base_n)}
    base[5] = {"only": (body_tf(), [0])}  # a word that the recrawl below removes
    base[6] = {w: (body_tf(), [i]) for i, w in enumerate(WORDS[:20])}  # 45 copies it
    recrawled = {d: random_doc(rng, WORDS) for d in (3, 5, 17)}
    new = {d: random_doc(rng, WORDS) for d in range(base_n, total)}
    new[45] = dict(base[6])
    delta = {**recrawled, **new}
    links_base = {d: rng.sample(range(base_n), 3) for d in range(base_n)}
    links_delta = {d: rng.sample(range(total), 3) for d in delta}

    final = {**base, **delta}
    final_links = {**links_base, **links_delta}
    full = build(final, total, final_links)

    # The base as an update reads it: stored (packed); the delta as the update builds it.
    base_arrays = compact_segment(build(base, base_n, links_base))
    delta_arrays = build(delta, total, links_delta)
    stored = merge_segments(
        [
            SegmentPart(base_arrays, np.arange(base_n)),
            SegmentPart(delta_arrays, np.array(sorted(delta))),
        ],
        total,
        np.full(total, 1.0 / total),
        range_postings=range_postings,
    )
    check_segment(stored, {"format": SEGMENT_FORMAT, "num_docs": total}, "merged")
    merged = assert_stored_as(stored, full)
    # The recrawl took "only" out of document 5: no posting of the old version survives.
    terms = bytes(merged["term_bytes"]).decode()
    assert "only" not in terms
    # Near-duplicates are found across the parts: the delta's copy of 6 folds into it.
    assert int(merged["near_dup_of"][45]) == 6


@pytest.mark.parametrize("range_postings", RANGES)
@pytest.mark.parametrize("seed", [4, 5])
def test_a_delta_with_the_whole_link_graph_brings_every_documents_anchor_text(
    seed: int, range_postings: int
) -> None:
    """An update's link job reads every record: new pages' anchor text from old pages, and old
    pages' from new ones, come from its part, whichever part holds the page's text."""
    rng = random.Random(seed)
    base_n, total = 30, 45
    base = {d: random_doc(rng, WORDS, anchor=False) for d in range(base_n)}
    delta = {d: random_doc(rng, WORDS, anchor=False) for d in [*range(base_n, total), 4, 9]}  # 2 recrawls
    anchors_then = {d: {rng.choice(WORDS): rng.randint(1, 3)} for d in rng.sample(range(base_n), 10)}
    anchors_now = {
        d: {rng.choice(WORDS): rng.randint(1, 3) for _ in range(2)} for d in rng.sample(range(total), 25)
    }
    anchors_now[7] = {"harbour": 2}  # a word only anchor text gives, on an old page
    links_then = {d: rng.sample(range(base_n), 2) for d in range(base_n)}
    links_now = {**links_then, **{d: rng.sample(range(total), 3) for d in delta}}

    full = build({**base, **delta}, total, links_now, anchors_now)
    merged = merge_segments(
        [
            SegmentPart(compact_segment(build(base, base_n, links_then, anchors_then)), np.arange(base_n)),
            SegmentPart(
                build(delta, total, links_now, anchors_now), np.array(sorted(delta)), whole_graph=True
            ),
        ],
        total,
        np.full(total, 1.0 / total),
        range_postings=range_postings,
    )
    assert_stored_as(merged, full)


@pytest.mark.parametrize("range_postings", RANGES)
@pytest.mark.parametrize("seed", [6, 7])
def test_a_purge_with_no_new_text_merges_into_a_full_build_of_the_live_documents(
    seed: int, range_postings: int
) -> None:
    """``block --purge`` of an old host: no document has new text, the update's delta is the
    link graph alone (of the live documents: a link to a removed page names nothing), and the
    host's documents are ``removed``. The merge equals a full build without them, their
    postings, anchor text and links gone."""
    rng = random.Random(seed)
    total = 36
    purged = list(range(10, 18))  # the host's pages
    live = [d for d in range(total) if d not in purged]
    base = {d: random_doc(rng, WORDS, anchor=False) for d in range(total)}
    base[12] = {"purgedword": (body_tf(), [0])}  # only a purged page has it
    anchors_then = {d: {rng.choice(WORDS): rng.randint(1, 3)} for d in rng.sample(range(total), 12)}
    links_then = {d: rng.sample(range(total), 3) for d in range(total)}
    anchors_now = {d: a for d, a in anchors_then.items() if d in live}
    links_now = {d: [t for t in links_then[d] if t in live] for d in live}

    full = build({d: base[d] for d in live}, total, links_now, anchors_now)
    merged = merge_segments(
        [
            SegmentPart(compact_segment(build(base, total, links_then, anchors_then)), np.arange(total)),
            SegmentPart(build({}, total, links_now, anchors_now), np.zeros(0, np.int64), whole_graph=True),
        ],
        total,
        np.full(total, 1.0 / total),
        removed=np.array(purged),
        range_postings=range_postings,
    )
    assert_stored_as(merged, full)
    assert "purgedword" not in bytes(merged["term_bytes"]).decode()


def test_vocabulary_counts_add_over_the_parts() -> None:
    docs = {0: {"cat": (body_tf(), [0])}, 1: {"cat": (body_tf(), [0])}}
    first = segment_arrays(collect_index_rows(rows_for(docs, {"cat": 2})), np.ones(2) / 2, 2)
    more = {2: {"cat": (body_tf(), [0])}, 3: {"cat": (body_tf(), [0])}}
    second = segment_arrays(collect_index_rows(rows_for(more, {"cat": 2})), np.ones(4) / 4, 4)
    merged = merge_segments(
        [SegmentPart(first, np.arange(2)), SegmentPart(second, np.array([2, 3]))], 4, np.ones(4) / 4
    )
    assert bytes(merged["vocab_bytes"]) == b"cat"
    assert merged["vocab_df"].tolist() == [4]
    assert merged["df"].tolist() == [4]


def test_a_part_speaking_for_documents_it_does_not_hold_is_refused() -> None:
    docs = {0: {"cat": (body_tf(), [0])}}
    one = segment_arrays(collect_index_rows(rows_for(docs)), np.ones(1), 1)
    with pytest.raises(PublishError, match="doc_num 3"):
        merge_segments([SegmentPart(one, np.array([0, 3]))], 4, np.ones(4) / 4)


def test_segments_of_another_analyzer_or_format_are_not_merged() -> None:
    same = {"format": SEGMENT_FORMAT, "analyzer": "2", "bm25f": {"k1": 1.2}}
    check_mergeable([same, dict(same)])
    with pytest.raises(PublishError, match="analyzer"):
        check_mergeable([same, {**same, "analyzer": "1"}])
    with pytest.raises(PublishError, match="format"):
        check_mergeable([same, {**same, "format": 3}])


def test_the_stored_base_is_read_a_term_range_at_a_time_never_expanded_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The merge's memory is bounded by a term range, not by the base (docs/benchmarks.md,
    "Issue 31: merge memory"): no read of the base's packed postings spans more than one
    range's rows, and the ranges cover them all. Expanding the base (``expand_segment``), or
    merging it in one piece, decodes every row at once and fails here."""
    rng = random.Random(8)
    base_n, total = 300, 320
    base = {d: random_doc(rng, WORDS) for d in range(base_n)}
    delta = {d: random_doc(rng, WORDS) for d in range(base_n - 10, total)}
    stored_base = compact_segment(build(base, base_n, {}))
    postings = int(stored_base["post_impacts"].shape[0])
    widest_term = int(np.diff(stored_base["post_offsets"].astype(np.int64)).max())
    read: list[tuple[int, int]] = []
    unpack_range = bitpack.unpack_range

    def spy(words: np.ndarray, *args: Any) -> np.ndarray:
        starts, widths, columns, column, lo, hi = args
        if words is stored_base["post_packed"] and column == POSTING_COLUMNS.index("anchor"):
            read.append((lo, hi))
        return unpack_range(words, *args)

    monkeypatch.setattr(bitpack, "unpack_range", spy)
    budget = 64
    merge_segments(
        [
            SegmentPart(stored_base, np.arange(base_n)),
            SegmentPart(build(delta, total, {}), np.array(sorted(delta))),
        ],
        total,
        np.full(total, 1.0 / total),
        range_postings=budget,
    )
    assert postings > 10 * (budget + widest_term)
    assert max(hi - lo for lo, hi in read) <= budget + widest_term
    assert sorted(read)[0][0] == 0 and sorted(read)[-1][1] == postings  # every row, once, in order
    assert all(a[1] == b[0] for a, b in zip(read, read[1:], strict=False))
