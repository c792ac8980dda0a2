"""A full build's segment streamed a term range at a time (services.indexing.segment_stream)
is the one the whole-at-once arrays give (``segment_arrays`` then ``compact_segment``, what
publish stored before), array for array, byte for byte and in the file's order, whatever the
ranges: one term each, a few hundred bytes of postings text, or the default."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pybase64
import pytest

from mapreduce.mr_index import FORMS_KEY, LANGUAGE_KEY, LENGTH_KEY, TERM_KEY, VOCABULARY_KEY
from services.indexing.errors import PublishError
from services.indexing.index_rows import collect_index_rows, index_columns, read_index_rows
from services.indexing.segment_arrays import segment_arrays
from services.indexing.segment_stream import RANGE_BYTES, streamed_segment
from services.ranking.entry_pages import UrlKind
from services.storage.formats.segment import pack_segment
from services.storage.formats.segment_codec import compact_segment
from tests.unit.indexing.test_segment_merge import WORDS, random_doc, rows_for

KEYS = {"t": TERM_KEY, "l": LENGTH_KEY, "f": FORMS_KEY, "v": VOCABULARY_KEY, "g": LANGUAGE_KEY}


def write_job_output(path: Path, rows: list, rng: random.Random) -> None:
    """``rows`` as MRIndex's output file (one ``key<TAB>value`` line each), in a shuffled
    order: the reducers' parts are not in the terms' byte order."""
    lines = []
    for (kind, name), value in rows:
        key = KEYS[kind] + str(name).encode("utf-8")
        if kind == "l":
            text = b",".join(b"%d" % v for v in value)
        elif kind == "f":
            text = pybase64.b64encode(value)
        elif kind in ("v", "g"):
            text = b"%d" % value
        else:
            text = value if isinstance(value, bytes) else value.encode("ascii")
        lines.append(key + b"\t" + text + b"\n")
    rng.shuffle(lines)
    path.write_bytes(b"".join(lines))


@pytest.fixture
def job_output(tmp_path: Path) -> tuple[Path, int]:
    rng = random.Random(5)
    num_docs = 420
    docs = {d: random_doc(rng, WORDS) for d in range(num_docs) if d % 37}  # gaps: empty documents
    for d in range(0, 400, 50):  # exact copies: near-duplicate folding has groups to find
        if d in docs and d + 3 in docs:
            docs[d + 3] = docs[d]
    rows = rows_for(docs, vocabulary={"Zoo": 3, "école": 1}, anchors={7: {"w1": 2}, 8: {"zoo": 1}})
    rows.append((["g", "en"], 400))
    path = tmp_path / "index.jsonl"
    write_job_output(path, rows, rng)
    return path, num_docs


@pytest.mark.parametrize("range_bytes", [RANGE_BYTES, 300, 1])
def test_the_streamed_segment_is_the_whole_at_once_one_byte_for_byte(
    job_output: tuple[Path, int], range_bytes: int
) -> None:
    path, num_docs = job_output
    rng = np.random.default_rng(3)
    ranks = rng.random(num_docs)
    links = {1: [2, 3], 5: [2], 9: [1, 2, 3]}
    kinds = rng.choice([UrlKind.ROOT, UrlKind.PATH, UrlKind.FILE], num_docs).astype(np.uint8)
    hosts = np.arange(num_docs) // 10
    whole = compact_segment(
        segment_arrays(
            collect_index_rows(read_index_rows(path)),
            ranks,
            num_docs,
            links=links,
            url_kinds=kinds,
            doc_hosts=hosts,
        )
    )
    cols, terms = index_columns(path)
    assert not cols.chunks and len(terms.terms) == len(set(terms.terms)) > 60
    if range_bytes == 1:
        assert len(terms.ranges(range_bytes)) == len(terms.terms)
    streamed = streamed_segment(
        terms, cols, ranks, num_docs, links=links, url_kinds=kinds, doc_hosts=hosts, range_bytes=range_bytes
    )
    assert int(whole["post_impacts"].shape[0]) > 3 * 128  # postings of several blocks of 128
    assert int((whole["near_dup_of"] != np.arange(num_docs)).sum()) > 0  # folding found copies
    assert list(streamed) == list(whole)  # the file's layout
    for name, value in whole.items():
        assert streamed[name].dtype == value.dtype, name
        assert streamed[name].tobytes() == value.tobytes(), name
    meta = {"num_docs": num_docs}
    assert pack_segment(streamed, meta) == pack_segment(whole, meta)


def test_the_job_outputs_terms_are_read_in_byte_order_and_by_place(job_output: tuple[Path, int]) -> None:
    path, _ = job_output
    whole = collect_index_rows(read_index_rows(path))
    cols, terms = index_columns(path)
    assert terms.terms == sorted(whole.chunks)
    assert terms.texts(0, len(terms.terms)) == [whole.chunks[t] for t in terms.terms]
    assert cols.lengths == whole.lengths and cols.forms == whole.forms
    assert cols.vocabulary == whole.vocabulary and cols.languages == whole.languages == {"en": 400}
    ranges = terms.ranges(300)
    assert ranges[0][0] == 0 and ranges[-1][1] == len(terms.terms)
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:], strict=False))


def test_a_term_twice_in_the_job_output_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "index.jsonl"
    path.write_bytes(b"t:zoo\tAAAA\nl:0\t1,1,0,0,0,0\nt:zoo\tAAAA\n")
    with pytest.raises(PublishError, match="came twice"):
        index_columns(path)


def test_a_truncated_postings_text_is_a_publish_error(tmp_path: Path) -> None:
    path = tmp_path / "index.jsonl"
    path.write_bytes(b"t:zoo\tAAA\nl:0\t1,1,0,0,0,0\n")
    cols, terms = index_columns(path)
    with pytest.raises(PublishError, match="cannot be read"):
        streamed_segment(terms, cols, np.ones(1), 1)
