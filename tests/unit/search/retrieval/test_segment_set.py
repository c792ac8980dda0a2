"""A base segment and its deltas searched as one (``SegmentSet``) find what one segment built
over the same documents finds: the same postings (a recrawled page's older copy gone), field
frequencies, positions, forward entries and word-form filters, in one numbering."""

from __future__ import annotations

import numpy as np
import pytest

from mapreduce.mr_index import FORMS, LENGTH, TERM, VOCABULARY
from mapreduce.postings import PostingBuffer
from services.indexing.index_rows import IndexColumns, collect_index_rows
from services.indexing.segment_arrays import segment_arrays
from services.search.query.language import parse_query
from services.search.retrieval.phrase import phrase_matches
from services.search.retrieval.retrieve import retrieve
from services.search.retrieval.segment import SegmentIndex
from services.search.retrieval.segment_set import SegmentSet
from services.storage.formats.delta import DeltaDocs
from services.storage.formats.records import Record
from services.storage.formats.segment_codec import compact_segment, held_rows
from services.text.analysis.forms import form_hashes, form_pairs, holds

FIELDS = ("title", "body", "anchor", "url", "meta", "nav")

# The crawl as a base build saw it (docs 0-5), then a delta (7, 8 new; 2 recrawled with
# other words; 6 new and empty), then a second delta (9 new; 7 recrawled again).
BASE = {
    0: ("Boundary layer", "the boundary layer of a wing in laminar flow"),
    1: ("Layers", "a layer near the boundary; boundary conditions of the heat flow"),
    2: ("Old page", "turbulent boundary layer separation over a cylinder"),
    3: ("Heat transfer", "heat transfer in laminar boundary layer flow"),
    4: ("Supersonic", "shock waves and supersonic flow over wedges"),
    5: ("Cylinder", "flow past a circular cylinder at low speed"),
}
DELTA_1 = {
    2: ("New page", "hypersonic flow and heat shields of capsules"),
    6: ("", ""),
    7: ("Capsule", "reentry capsule heat shield ablation in hypersonic flow"),
    8: ("Wing", "swept wing boundary layer transition and laminar flow control"),
}
DELTA_2 = {
    7: ("Capsule again", "the capsule heat shield, rewritten: ablation and boundary layer"),
    9: ("Wedge", "oblique shock on a wedge in supersonic flow, boundary layer interaction"),
}


def arrays_of(
    docs: dict[int, tuple[str, str]], num_docs: int, held_rows_only: bool = False
) -> dict[str, np.ndarray]:
    columns = IndexColumns()  # a delta of removals only holds no document (delta_build)
    if docs:
        buffer = PostingBuffer()
        rows: list[tuple[list[object], object]] = []
        for num, (title, text) in sorted(docs.items()):
            buffer.add(Record(num, f"http://t.test/{num}", "", "", "text/html", title=title, text=text))
        chunks, lengths = buffer.drain()
        rows += [([LENGTH, num], [n or 0 for n in fields]) for num, fields in lengths.items()]
        rows += [([TERM, t], c.encode()) for t, c in chunks]
        rows += [([FORMS, num], forms) for num, forms in chunks.forms.items()]  # words as written
        rows += [([VOCABULARY, form], held) for form, held in chunks.vocabulary.items()]
        columns = collect_index_rows(rows)
    pagerank = np.full(num_docs, 1 / num_docs)
    plain = segment_arrays(columns, pagerank, num_docs, near_duplicates=False)
    if held_rows_only:
        plain = held_rows(plain, np.array(sorted(docs), dtype=np.int64))
    return compact_segment(plain)


def segment(name: str, docs: dict[int, tuple[str, str]], num_docs: int, held: bool = False) -> SegmentIndex:
    meta = {"languages": {"en": len(docs)}, "num_docs": num_docs}
    return SegmentIndex(0, name, None, meta, arrays_of(docs, num_docs, held))  # type: ignore[arg-type]


def delta(
    name: str, docs: dict[int, tuple[str, str]], num_docs: int, held: bool = True
) -> tuple[SegmentIndex, DeltaDocs]:
    """A delta as ``delta_build`` writes it: one per-document row per held document (``held``),
    or one per document number (the contract allows both)."""
    holds = np.array(sorted(docs), dtype=np.uint32)
    return segment(name, docs, num_docs, held), DeltaDocs("base", holds, rows_held=held)


@pytest.fixture(scope="module", params=["held rows", "a row per document number"])
def pair(request: pytest.FixtureRequest) -> tuple[SegmentSet, SegmentIndex]:
    """(base + two deltas, one segment over the documents as they are now)."""
    now = {**BASE, **DELTA_1, **DELTA_2}
    base = segment("base", BASE, 6)
    held = request.param == "held rows"
    both = SegmentSet.combine(7, base, [delta("d1", DELTA_1, 9, held), delta("d2", DELTA_2, 10, held)])
    return both, segment("whole", now, 10)


def terms_of(index: SegmentIndex) -> set[str]:
    return {index.term(i) for i in range(index.num_terms) if index.postings(i)[0].shape[0]}


def test_postings_hold_each_document_once_from_its_newest_segment(
    pair: tuple[SegmentSet, SegmentIndex],
) -> None:
    both, whole = pair
    assert both.num_docs == 10 and both.segments == ["base", "d1", "d2"]
    assert terms_of(both) == terms_of(whole)
    for term in terms_of(whole):
        mine, theirs = both.term_id(term), whole.term_id(term)
        assert mine is not None and theirs is not None
        assert both.postings(mine)[0].tolist() == whole.postings(theirs)[0].tolist(), term
    # The recrawled page 2 lost "turbulent" and 7 lost "reentry": only their old copies held them.
    assert both.postings(both.term_id("turbul"))[0].tolist() == []  # type: ignore[arg-type]
    new_word = both.term_id("hyperson")
    assert new_word is not None and new_word >= both.parts[0].num_terms


def test_field_frequencies_positions_and_forward_entries_come_from_the_owner(
    pair: tuple[SegmentSet, SegmentIndex],
) -> None:
    both, whole = pair
    for term in sorted(terms_of(whole)):
        mine, theirs = both.term_id(term), whole.term_id(term)
        assert mine is not None and theirs is not None
        for name in FIELDS:
            assert both.field_tfs_of(name, mine).tolist() == whole.field_tfs_of(name, theirs).tolist()
        docs = whole.postings(theirs)[0]
        hit, handles = both.locate(mine, docs)
        whole_hit, whole_handles = whole.locate(theirs, docs)
        assert hit.all() and whole_hit.all()
        theirs_tfs = whole.field_tfs_many(FIELDS, whole_handles)
        for a, b in zip(both.field_tfs_many(FIELDS, handles), theirs_tfs, strict=True):
            assert a.tolist() == b.tolist()
        got, want = both.positions(handles), whole.positions(whole_handles)
        assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist(), term
        assert np.allclose(both.posting_impacts(handles), both.postings(mine)[1])
    docs = np.array([0, 2, 3, 7, 8, 9], dtype=np.uint32)
    entries = []
    for index in (both, whole):
        counts, terms, tfs = index.forward(docs)
        runs = np.split(np.arange(terms.shape[0]), np.cumsum(counts)[:-1])
        entries.append([{(index.term(int(terms[i])), int(tfs[i])) for i in run} for run in runs])
    assert entries[0] == entries[1]


def test_impacts_of_several_terms_in_a_few_documents_are_their_postings(
    pair: tuple[SegmentSet, SegmentIndex],
) -> None:
    """``term_impacts`` (a feedback query's pool), for the set and for one segment: each term's
    impact where a document holds it (as its postings give), 0.0 and not held elsewhere."""
    both, whole = pair
    docs = np.arange(10, dtype=np.uint32)
    for index in (both, whole):
        ids = sorted(index.term_id(t) for t in terms_of(whole))  # type: ignore[type-var]
        held, impacts = index.term_impacts(ids, docs)
        assert held.shape == impacts.shape == (len(ids), 10) and held.any()
        for row, term_id in enumerate(ids):
            listed, listed_impacts = index.postings(term_id)
            want = np.zeros(10, np.float32)
            want[listed] = listed_impacts
            assert held[row].tolist() == np.isin(docs, listed).tolist()
            assert impacts[row].tolist() == want.tolist()


def test_per_document_tables_and_word_forms(pair: tuple[SegmentSet, SegmentIndex]) -> None:
    both, whole = pair
    for name in ("doc_lengths", "len_title", "len_body", "url_kind"):
        assert both.arrays[name].tolist() == whole.arrays[name].tolist(), name
    forms = ["hypersonic", "turbulent", "capsule"]
    docs = np.arange(10, dtype=np.uint32)
    for form in forms:  # each form held where one segment holds it (a share of 1.0, else 0.0)
        one = form_pairs([form])
        assert both.form_shares(docs, one).tolist() == whole.form_shares(docs, one).tolist(), form
    pairs = form_pairs(forms)
    assert both.form_shares(docs, pairs).tolist() == whole.form_shares(docs, pairs).tolist()
    assert whole.form_shares(docs, pairs).any()  # some page holds some of them
    h1, h2 = form_hashes(forms)
    summed = holds(whole.arrays["form_filters"], whole.arrays["form_offsets"], docs, h1, h2).sum(axis=0) / 3
    assert whole.form_shares(docs, pairs).tolist() == summed.tolist()
    # Document frequencies are summed over the segments: 7's superseded copy still counts
    # until a merge (one document in ten here; a merge policy bounds the deltas' share).
    flow = both.term_id("flow")
    assert flow is not None and int(both.arrays["df"][flow]) == 9
    assert int(whole.arrays["df"][whole.term_id("flow")]) == 8


def test_phrases_and_retrieval_find_the_same_documents(pair: tuple[SegmentSet, SegmentIndex]) -> None:
    both, whole = pair
    for phrase in (["boundari", "layer"], ["heat", "shield"], ["laminar", "flow"]):
        found = []
        for index in (both, whole):
            ids = [index.term_id(t) for t in phrase]
            assert all(i is not None for i in ids)
            first, second = (index.postings(i)[0] for i in ids)  # type: ignore[arg-type]
            candidates = np.intersect1d(first, second)
            found.append(phrase_matches(candidates, ids, index.locate, index.positions).tolist())  # type: ignore[arg-type]
        assert found[0] == found[1], phrase
    for q in ("boundary layer", "heat OR shock", "capsule", '"boundary layer" flow', "laminar -wing"):
        mine = retrieve(both, parse_query(q), 10)
        theirs = retrieve(whole, parse_query(q), 10)
        assert sorted(mine.ranked.docs.tolist()) == sorted(theirs.ranked.docs.tolist()), q
        assert mine.mode == theirs.mode and mine.ranked.total == theirs.ranked.total, q
    # A word only a superseded copy held is still in the dictionary (until a merge), and
    # finds nothing, as a word only deleted documents hold.
    assert retrieve(both, parse_query("turbulent"), 10).ranked.docs.shape[0] == 0


def test_required_words_find_the_same_documents(pair: tuple[SegmentSet, SegmentIndex]) -> None:
    """``+word``: a strict AND, or (beside optional words) the mask of the pages holding it,
    read across base and deltas as in one segment; a word only a superseded copy held
    requires what no page holds."""
    from services.search.retrieval.filters import operator_mask

    both, whole = pair
    for q in (
        "+boundary +laminar",
        "+capsule heat",
        "+hypersonic +heat",
        "+wedge OR flow",
        "+turbulent flow",
    ):
        found = []
        for index in (both, whole):
            query = parse_query(q)
            result = retrieve(index, query, 10, allowed=operator_mask(query, index, None))
            found.append((sorted(result.ranked.docs.tolist()), result.ranked.total))
        assert found[0] == found[1], q
    assert retrieve(both, parse_query("+turbulent +flow"), 10).ranked.total == 0
    capsule = retrieve(
        both,
        parse_query("+capsule heat"),
        10,
        allowed=operator_mask(parse_query("+capsule heat"), both, None),
    )
    assert sorted(capsule.ranked.docs.tolist()) == [2, 7]  # "heat" in 1 and 3 too, without a capsule


def test_removed_documents_stay_hidden_whatever_the_service_adds() -> None:
    base = segment("base", BASE, 6)
    gone = DeltaDocs("base", np.array([7], np.uint32), removed=np.array([1], np.uint32))
    both = SegmentSet.combine(3, base, [(segment("d1", {7: DELTA_1[7]}, 8), gone)])
    assert both.deleted.tolist() == [1]
    assert 1 not in retrieve(both, parse_query("boundary"), 10).ranked.docs.tolist()
    later = both.with_deleted(np.array([3], np.uint32))
    assert later.deleted.tolist() == [1, 3]
    assert later.with_deleted(np.array([3], np.uint32)) is later  # nothing new: the same view


def test_a_few_recrawls_are_skipped_in_long_lists() -> None:
    """Superseded documents few against a list are looked up in it, not every owner read."""
    base = segment("base", {i: (f"Page {i}", f"common words of page {i}") for i in range(40)}, 40)
    recrawl = {5: ("Page 5", "rare words now"), 41: ("Page 41", "common and new")}
    both = SegmentSet.combine(2, base, [delta("d1", recrawl, 42)])
    common = both.term_id("common")
    assert common is not None
    docs, impacts = both.postings(common)
    assert docs.tolist() == [i for i in range(40) if i != 5] + [41]
    assert impacts.shape == docs.shape and both.superseded[0].tolist() == [5]
    assert both.field_tfs_of("body", common).tolist() == [1] * 40


def test_a_page_a_delta_removed_and_a_later_one_holds_again_is_found() -> None:
    base = segment("base", BASE, 6)
    gone = DeltaDocs("base", np.array([7], np.uint32), removed=np.array([1], np.uint32), rows_held=True)
    back = {1: ("Layers again", "boundary layers fetched again after a 503")}
    both = SegmentSet.combine(
        4, base, [(segment("d1", {7: DELTA_1[7]}, 8, True), gone), delta("d2", back, 8)]
    )
    assert both.deleted.tolist() == []
    assert 1 in retrieve(both, parse_query("boundary"), 10).ranked.docs.tolist()
    assert retrieve(both, parse_query("fetched"), 10).ranked.docs.tolist() == [1]


def test_a_delta_of_removals_only_hides_them() -> None:
    """A purge's delta: no documents, removals only (its arrays hold no rows)."""
    base = segment("base", BASE, 6)
    purge = DeltaDocs("base", np.zeros(0, np.uint32), removed=np.array([0, 3], np.uint32), rows_held=True)
    both = SegmentSet.combine(5, base, [(segment("d1", {}, 6, True), purge)])
    assert both.deleted.tolist() == [0, 3] and both.num_terms == base.num_terms
    assert retrieve(both, parse_query("laminar"), 10).ranked.docs.tolist() == []  # 0 and 3 held it
    one = np.array([1], np.uint32)
    assert both.forward(one)[0].tolist() == base.forward(one)[0].tolist()
