"""A delta segment scored with the collection's statistics (services.indexing.delta_stats and
segment_arrays' ``stats``): its impacts and idf are those a build over the whole collection
gives its documents, whether it adds pages, replaces one or removes one; without ``stats``
a build is what it always was."""

from __future__ import annotations

import numpy as np

from mapreduce.postings_wire import Chunk
from services.indexing.delta_stats import VersionPart, all_lengths, delta_stats, superseded
from services.indexing.index_rows import collect_index_rows
from services.indexing.segment_arrays import segment_arrays
from services.ranking.bm25f import FIELD_NAMES, CollectionStats, average_lengths
from services.storage.formats.delta import DeltaDocs
from services.storage.formats.segment_codec import compact_segment

# doc -> term -> (title tf, body tf, anchor tf): the collection's documents, one version each.
Doc = dict[str, tuple[int, int, int]]
HARBOUR: Doc = {"harbour": (1, 2, 0), "boat": (0, 1, 1), "night": (0, 1, 0)}
FISH: Doc = {"fish": (1, 3, 0), "harbour": (0, 1, 0), "dawn": (0, 1, 0)}
TIDE_OLD: Doc = {"tide": (1, 1, 0), "harbour": (0, 1, 0), "daily": (0, 2, 0)}
TIDE_NEW: Doc = {"tide": (1, 1, 0), "notice": (0, 1, 0), "board": (0, 1, 0), "harbour": (0, 2, 0)}
QUAY: Doc = {"quay": (1, 2, 1), "ferry": (0, 3, 0), "island": (0, 1, 0)}
FERRY: Doc = {"ferry": (1, 2, 2), "island": (0, 2, 0), "harbour": (0, 1, 0)}


def rows(docs: dict[int, Doc]) -> list:
    """MRIndex rows (as collect_index_rows reads them) of ``docs``."""
    by_term: dict[str, list[tuple[int, tuple[int, int, int]]]] = {}
    for doc, terms in sorted(docs.items()):
        for term, tfs in terms.items():
            by_term.setdefault(term, []).append((doc, tfs))
    out: list = []
    for term, postings in by_term.items():
        positions = [list(range(t + b)) for _, (t, b, _a) in postings]
        out.append(
            (
                ["t", term],
                Chunk(
                    np.array([d for d, _ in postings], np.uint32),
                    np.array([[t, b, a, 0, 0, 0] for _, (t, b, a) in postings], np.uint16).reshape(-1, 6),
                    np.array([len(p) for p in positions], np.uint32),
                    np.array([x for p in positions for x in p], np.uint32),
                ).encode(),
            )
        )
    for doc, terms in docs.items():
        title = sum(t for t, _, _ in terms.values())
        body = sum(b for _, b, _ in terms.values())
        anchor = sum(a for _, _, a in terms.values())
        out.append((["l", doc], [title, body, anchor, 0, 0, 0]))
    return out


def build(docs: dict[int, Doc], num_docs: int, stats: CollectionStats | None = None) -> dict[str, np.ndarray]:
    return segment_arrays(
        collect_index_rows(rows(docs)), np.full(num_docs, 1.0 / num_docs), num_docs, stats=stats
    )


def postings(arrays: dict[str, np.ndarray]) -> dict[tuple[bytes, int], float]:
    """(term, doc) -> impact."""
    out = {}
    offsets, terms = arrays["term_offsets"], arrays["post_offsets"]
    for t in range(arrays["df"].shape[0]):
        term = arrays["term_bytes"][offsets[t] : offsets[t + 1]].tobytes()
        for p in range(int(terms[t]), int(terms[t + 1])):
            out[(term, int(arrays["post_docs"][p]))] = float(
                arrays["post_impacts"][p] * arrays["impact_scale"][t]
            )
    return out


def idf(arrays: dict[str, np.ndarray]) -> dict[bytes, float]:
    offsets = arrays["term_offsets"]
    return {
        arrays["term_bytes"][offsets[t] : offsets[t + 1]].tobytes(): float(arrays["idf"][t])
        for t in range(arrays["df"].shape[0])
    }


def delta_of(
    parts: list[VersionPart], docs: dict[int, Doc], num_docs: int, removed: list[int] = ()
) -> dict[str, np.ndarray]:
    cols = collect_index_rows(rows(docs))
    holds = np.array(sorted(docs), np.int64)
    stats, _ = delta_stats(
        parts, num_docs, holds, np.array(removed, np.int64), cols.lengths, sorted(cols.chunks)
    )
    return segment_arrays(cols, np.full(num_docs, 1.0 / num_docs), num_docs, stats=stats)


def assert_scored_as(delta: dict[str, np.ndarray], full: dict[str, np.ndarray], docs: list[int]) -> None:
    """The delta's postings of ``docs`` and its terms' idf are the full build's, exactly."""
    mine = postings(delta)
    theirs = {key: value for key, value in postings(full).items() if key[1] in docs}
    assert mine == theirs
    whole = idf(full)
    assert {t: whole[t] for t in idf(delta)} == idf(delta)


def base_part(docs: dict[int, Doc], num_docs: int) -> VersionPart:
    return VersionPart("index/base.nseg", compact_segment(build(docs, num_docs)), None)


def test_a_delta_of_new_pages_scores_as_a_build_of_the_whole_collection() -> None:
    base = base_part({0: HARBOUR, 1: FISH, 2: TIDE_OLD}, 3)
    delta = delta_of([base], {3: QUAY, 4: FERRY}, 5)
    full = build({0: HARBOUR, 1: FISH, 2: TIDE_OLD, 3: QUAY, 4: FERRY}, 5)
    assert_scored_as(delta, full, [3, 4])
    # Scored with its own statistics, "harbour" (in every base page) would weigh as rare.
    alone = build({3: QUAY, 4: FERRY}, 5)
    assert idf(alone)[b"harbour"] > idf(delta)[b"harbour"]


def test_a_recrawl_and_a_removal_leave_the_base_s_copies_out_of_the_statistics() -> None:
    base = base_part({0: HARBOUR, 1: FISH, 2: TIDE_OLD}, 3)
    delta = delta_of([base], {2: TIDE_NEW, 3: QUAY}, 4, removed=[1])
    full = build({0: HARBOUR, 2: TIDE_NEW, 3: QUAY}, 4)  # doc 1 removed: a number, no text
    assert_scored_as(delta, full, [2, 3])


def test_a_second_delta_counts_the_first_and_supersedes_its_copies() -> None:
    base = base_part({0: HARBOUR, 1: FISH, 2: TIDE_OLD}, 3)
    first_docs = {3: QUAY, 2: TIDE_NEW}
    first = delta_of([base], first_docs, 4)
    held = DeltaDocs("index/base.nseg", np.array([2, 3], np.uint32), np.zeros(0, np.uint32))
    parts = [base, VersionPart("index/d1.nseg", compact_segment(first), held)]
    second = delta_of(parts, {4: FERRY, 3: {"quay": (1, 1, 0), "pier": (0, 2, 0)}}, 5, removed=[0])
    full = build({1: FISH, 2: TIDE_NEW, 3: {"quay": (1, 1, 0), "pier": (0, 2, 0)}, 4: FERRY}, 5)
    assert_scored_as(second, full, [3, 4])
    assert [d.tolist() for d in superseded(parts, np.array([3, 4]), np.array([0]))] == [[0, 2], [3]]


def test_lengths_are_each_document_s_newest_and_removed_ones_are_zero() -> None:
    base = base_part({0: HARBOUR, 1: FISH, 2: TIDE_OLD}, 3)
    lengths = all_lengths(
        [base], 5, np.array([2, 4]), np.array([1]), {2: [1, 5, 0, 0, 0, 0], 4: [2, 2, 2, 0, 0, 0]}
    )
    assert lengths[:3].T.tolist() == [[1, 4, 1], [0, 0, 0], [1, 5, 0], [0, 0, 0], [2, 2, 2]]
    assert lengths.shape == (len(FIELD_NAMES), 5)


def test_without_statistics_or_with_its_own_a_build_is_unchanged() -> None:
    docs = {0: HARBOUR, 1: FISH, 2: TIDE_OLD}
    plain = build(docs, 3)
    own = [np.asarray(plain[f"len_{name}"]) for name in FIELD_NAMES]
    again = build(docs, 3, CollectionStats(3, tuple(average_lengths(own))))
    for name, value in plain.items():
        np.testing.assert_array_equal(again[name], value, err_msg=name)


def test_the_delta_s_pagerank_is_stored_as_given() -> None:
    stats = CollectionStats(4, (1.0,) * len(FIELD_NAMES))
    prior = np.array([0.5, 0.5, 0.25, 0.25])  # the base's for 0-1, 1/N for new pages
    arrays = segment_arrays(collect_index_rows(rows({2: QUAY})), prior, 4, stats=stats)
    assert arrays["pagerank"].tolist() == prior.tolist()  # not renormalised to sum 1
