"""A map-only MRIndex's output (one file a map task, a piece a term and flush) read back by
``services.indexing.job_pieces`` gives, byte for byte, the segment its reducer's output gives:
the pieces here are written as map tasks write them, and the reducer's output is made by
MRIndex's own reducer over the same rows. Plus the hostile cases: a term in one piece only or
in every piece, pieces of one document from two tasks (a page's and its anchors'), files in
any order, empty pieces and empty files, and damaged files refused with their name."""

from __future__ import annotations

import random
from collections import defaultdict
from pathlib import Path

import numpy as np
import pybase64
import pytest

from mapreduce.mr_index import MRIndex
from mapreduce.postings_join import join_decoded, join_pieces
from mapreduce.postings_wire import NUM_FIELDS, Chunk, read_regions
from services.indexing import job_pieces
from services.indexing.errors import PublishError
from services.indexing.index_rows import index_columns
from services.indexing.job_pieces import piece_columns
from services.indexing.segment_stream import streamed_segment
from tests.unit.indexing.test_segment_merge import WORDS, Doc, random_doc

Row = tuple[bytes, bytes]


def chunk_of(postings: list[tuple[int, list[int], list[int]]]) -> Chunk:
    """(doc, field tfs, positions) of one term, ascending by doc, as a chunk."""
    return Chunk(
        np.array([p[0] for p in postings], np.uint32),
        np.array([p[1] for p in postings], np.uint16).reshape(-1, NUM_FIELDS),
        np.array([len(p[2]) for p in postings], np.uint32),
        np.array([x for p in postings for x in p[2]], np.uint32),
    )


def flush_rows(pages: dict[int, Doc], anchors: dict[int, dict[str, int]]) -> list[Row]:
    """One flush of a map task that read ``pages`` and the anchor text ``anchors``: its rows in
    the order ``MRIndex._drain`` writes them (terms last, in byte order)."""
    rows: list[Row] = []
    if pages:
        rows.append((b"g:en", b"%d" % len(pages)))
    by_term: dict[str, list[tuple[int, list[int], list[int]]]] = defaultdict(list)
    for num in sorted(set(pages) | set(anchors)):
        doc = {term: (list(tfs), positions) for term, (tfs, positions) in pages.get(num, {}).items()}
        for term, tf in anchors.get(num, {}).items():
            doc.setdefault(term, ([0] * NUM_FIELDS, []))[0][2] = tf
        for term, (tfs, positions) in doc.items():
            by_term[term].append((num, tfs, positions))
        lengths = [sum(tfs[f] for tfs, _ in doc.values()) for f in range(NUM_FIELDS)]
        if num in pages:
            title, body, _, url, meta, nav = lengths
            rows.append((b"l:%d" % num, b"m,%d,%d,%d,%d,%d" % (title, body, url, meta, nav)))
        if num in anchors:
            rows.append((b"l:%d" % num, b"a,%d" % lengths[2]))
    for num in sorted(pages):
        rows.append((b"f:%d" % num, pybase64.b64encode(bytes([num % 251, 7]))))
    for term in pages[min(pages)] if pages else {}:  # the written forms of a page per flush
        rows.append((("v:" + term.upper()).encode("utf-8"), b"1"))
    for term in sorted(by_term, key=lambda t: t.encode("utf-8")):
        rows.append((b"t:" + term.encode("utf-8"), chunk_of(by_term[term]).encode()))
    return rows


def write_part(path: Path, rows: list[Row]) -> Path:
    path.write_bytes(b"".join(key + b"\t" + value + b"\n" for key, value in rows))
    return path


def reducer_output(parts: list[Path], path: Path) -> Path:
    """What MRIndex's reducer writes for the map tasks' files ``parts``: its own code, over
    the rows grouped by key (the shuffle)."""
    grouped: dict[bytes, list[bytes]] = defaultdict(list)
    for part in parts:
        for line in part.read_bytes().splitlines():
            key, _, value = line.partition(b"\t")
            grouped[key].append(value)
    job = MRIndex(args=["--blob-url", "file:///nowhere"])
    rows = [row for key in sorted(grouped) for row in job.reducer_postings(key, iter(grouped[key]))]
    return write_part(path, rows)


@pytest.fixture
def corpus() -> tuple[dict[int, Doc], dict[int, dict[str, int]], int]:
    rng = random.Random(11)
    num_docs = 300
    docs = {d: random_doc(rng, WORDS, anchor=False) for d in range(num_docs) if d % 29}
    for d in range(0, 280, 40):  # exact copies: folding has groups to find
        if d in docs and d + 2 in docs:
            docs[d + 2] = docs[d]
    for doc in docs.values():  # in every page flush's piece
        doc["everywhere"] = ([0, 1, 0, 0, 0, 0], [40])
    docs[7]["lonely"] = ([1, 1, 0, 0, 0, 0], [0, 41])  # in one piece only
    anchors = {d: {rng.choice(WORDS): rng.randint(1, 3)} for d in rng.sample(sorted(docs), 25)}
    anchors[29] = {"w1": 2}  # the anchors of a document no task read: lengths from them alone
    return docs, anchors, num_docs


def map_tasks(
    tmp_path: Path, docs: dict[int, Doc], anchors: dict[int, dict[str, int]], flushes: int = 3
) -> list[Path]:
    """The files of three map tasks: two over halves of the documents, ``flushes`` flushes
    each, and one over the anchor text (its own flush: its postings share documents with the
    pages' tasks)."""
    half = len(docs) // 2
    nums = sorted(docs)
    parts = []
    for task, owned in enumerate([nums[:half], nums[half:]]):
        rows: list[Row] = []
        for flush in np.array_split(np.array(owned), flushes):
            rows += flush_rows({d: docs[d] for d in flush.tolist()}, {})
        parts.append(write_part(tmp_path / f"part-{task:05d}", rows))
    parts.append(write_part(tmp_path / "part-00002", flush_rows({}, anchors)))
    return parts


def same_segment(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    assert list(a) == list(b)
    for name, value in a.items():
        assert b[name].dtype == value.dtype, name
        assert b[name].tobytes() == value.tobytes(), name


@pytest.mark.parametrize("range_bytes", [1 << 24, 400, 1])
def test_the_map_tasks_pieces_give_the_reducers_segment_byte_for_byte(
    tmp_path: Path, corpus: tuple, range_bytes: int
) -> None:
    docs, anchors, num_docs = corpus
    parts = map_tasks(tmp_path, docs, anchors)
    joined = reducer_output(parts, tmp_path / "reduced.txt")
    ranks = np.random.default_rng(2).random(num_docs)
    want_cols, want_terms = index_columns(joined)
    cols, pieces = piece_columns(parts)
    assert pieces.terms == want_terms.terms
    assert cols.lengths == want_cols.lengths and cols.forms == want_cols.forms
    assert cols.vocabulary == want_cols.vocabulary and cols.languages == want_cols.languages
    assert cols.lengths[29] == [0, 0, 2, 0, 0, 0]
    every = pieces.terms.index(b"everywhere")
    assert np.diff(pieces.piece_bounds)[every] == 2 * 3  # a piece in each page flush
    assert np.diff(pieces.piece_bounds)[pieces.terms.index(b"lonely")] == 1
    overlapping = [t for t in pieces.terms if len({int(f) for f in pieces_files(pieces, t)}) > 2]
    assert overlapping  # pieces of the anchor task among both page tasks': merged
    for lo, hi in [(0, len(pieces.terms)), (every, every + 1)]:
        got = pieces.postings(lo, hi)
        want = want_terms.postings(lo, hi)
        for g, w in zip(got, want, strict=True):
            assert np.array_equal(g, w)
    same_segment(
        streamed_segment(want_terms, want_cols, ranks, num_docs, range_bytes=range_bytes),
        streamed_segment(pieces, cols, ranks, num_docs, range_bytes=range_bytes),
    )


def pieces_files(pieces, term: bytes) -> np.ndarray:
    i = pieces.terms.index(term)
    return pieces.piece_files[pieces.piece_bounds[i] : pieces.piece_bounds[i + 1]]


def test_files_in_any_order_and_empty_files_change_nothing(
    tmp_path: Path, corpus: tuple, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs, anchors, num_docs = corpus
    parts = map_tasks(tmp_path, docs, anchors)
    assert all(part.stat().st_size > 3 * 4096 for part in parts[:2])
    monkeypatch.setattr(job_pieces, "_RELEASE_BYTES", 4096)  # pages released mid-file, often
    empty = tmp_path / "part-00009"
    empty.write_bytes(b"")
    ranks = np.full(num_docs, 1 / num_docs)
    cols, pieces = piece_columns(parts)
    again_cols, again = piece_columns([parts[2], empty, parts[1], parts[0]])
    assert again.terms == pieces.terms and again_cols.lengths == cols.lengths
    same_segment(
        streamed_segment(pieces, cols, ranks, num_docs), streamed_segment(again, again_cols, ranks, num_docs)
    )


def test_join_decoded_orders_merges_and_skips_empty_pieces() -> None:
    """Three terms' pieces in the order files give them: "a" in one piece; "b" in three,
    the later document range first and an empty piece between; "c" a page's posting and the
    same document's anchor posting from another task."""
    a = chunk_of([(4, [1, 0, 0, 0, 0, 0], [0])])
    b_late = chunk_of([(9, [0, 2, 0, 0, 0, 0], [3, 5]), (12, [0, 1, 0, 0, 0, 0], [2])])
    b_empty = chunk_of([])
    b_early = chunk_of([(1, [0, 1, 0, 0, 0, 0], [7])])
    c_page = chunk_of([(3, [1, 1, 0, 0, 0, 0], [0, 4]), (6, [0, 1, 0, 0, 0, 0], [9])])
    c_anchor = chunk_of([(3, [0, 0, 2, 0, 0, 0], [])])
    pieces = [[a], [b_late, b_empty, b_early], [c_anchor, c_page]]
    texts = [chunk.encode() for term in pieces for chunk in term]
    regions = read_regions(texts)
    per_term, docs, tfs, counts, positions = join_decoded(
        np.array([len(p) for p in pieces]),
        regions.per_text,
        regions.docs(),
        regions.tfs(),
        regions.counts(),
        regions.positions(),
    )
    want = [Chunk.decode(join_pieces([chunk.encode() for chunk in term])) for term in pieces]
    assert per_term.tolist() == [1, 3, 2]
    assert docs.tolist() == [4, 1, 9, 12, 3, 6]
    assert docs.tolist() == [d for chunk in want for d in chunk.docs.tolist()]
    assert np.array_equal(tfs, np.concatenate([chunk.tfs for chunk in want]))
    assert tfs[4].tolist() == [1, 1, 2, 0, 0, 0]  # page and anchors summed
    assert counts.tolist() == [1, 1, 2, 1, 2, 1]
    assert positions.tolist() == [0, 7, 3, 5, 2, 0, 4, 9]
    assert np.array_equal(positions, np.concatenate([chunk.positions for chunk in want]))


def test_a_truncated_piece_file_is_refused_by_name(tmp_path: Path, corpus: tuple) -> None:
    docs, anchors, _ = corpus
    parts = map_tasks(tmp_path, docs, anchors)
    whole = parts[1].read_bytes()
    parts[1].write_bytes(whole[: len(whole) - 7])  # the last row cut off
    with pytest.raises(PublishError, match=r"part-00001: its last row is cut off.*truncated"):
        piece_columns(parts)
    cut = whole.index(b"\t", whole.index(b"\nt:")) + 10  # inside the first term's text
    parts[1].write_bytes(whole[:cut] + b"\n")
    with pytest.raises(PublishError, match=r"part-00001: the postings of term .* not whole regions"):
        piece_columns(parts)


def test_a_piece_whose_regions_say_more_than_it_holds_is_refused_by_name(tmp_path: Path) -> None:
    chunk = chunk_of([(1, [0, 1, 0, 0, 0, 0], [2]), (2, [0, 1, 0, 0, 0, 0], [3])])
    words = bytearray(pybase64.b64decode(chunk.encode()))
    words[0] = 200  # the header claims 200 postings
    lines = [(b"l:1", b"m,0,1,0,0,0"), (b"l:2", b"m,0,1,0,0,0"), (b"t:zoo", pybase64.b64encode(bytes(words)))]
    ant = chunk_of([(1, [0, 1, 0, 0, 0, 0], [0])]).encode()
    good = write_part(tmp_path / "part-00000", [(b"t:ant", ant)])
    bad = write_part(tmp_path / "part-00001", lines)
    cols, pieces = piece_columns([good, bad])
    damaged = r"part-00001: the postings of term 'zoo' at byte \d+ cannot be read"
    with pytest.raises(PublishError, match=damaged):
        streamed_segment(pieces, cols, np.full(3, 1 / 3), 3)


def test_a_document_from_two_tasks_is_refused(tmp_path: Path) -> None:
    one = write_part(tmp_path / "part-00000", [(b"l:4", b"m,1,2,0,0,0")])
    two = write_part(tmp_path / "part-00001", [(b"l:4", b"m,1,2,0,0,0")])
    with pytest.raises(PublishError, match="doc_num 4 occurs in two records"):
        piece_columns([one, two])
    reduced = write_part(tmp_path / "part-00002", [(b"l:4", b"1,2,0,0,0,0")])
    with pytest.raises(PublishError, match="not a map task's"):
        piece_columns([reduced])
