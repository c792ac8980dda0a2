"""The word-recall benchmark's pieces: the words a reader sees, and the index without nav
text that stands for the index before the nav field (benchmarks/word_recall.py)."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.word_recall import visible_words, without_nav
from mapreduce.postings_wire import Chunk
from services.indexing.index_rows import collect_index_rows
from services.indexing.segment_arrays import segment_arrays


def test_visible_words_hold_menus_and_form_labels_but_no_scripts_or_hidden_values() -> None:
    html = (
        "<html><head><title>Members area</title><script>var secret = 1;</script></head><body>"
        "<nav><a href=/jobs>Vacancies</a></nav><p>Welcome back</p>"
        '<form><input placeholder="Membership number"><input type=hidden value=tokenvalue>'
        '<input type=submit value="Sign in"></form></body></html>'
    )
    words = visible_words(html)
    assert {"members", "area", "vacancies", "welcome", "membership", "number", "sign"} <= words
    assert not {"secret", "tokenvalue", "var", "in"} & words  # "in": under 3 characters


def _chunk(*postings: tuple[int, list[int], int]) -> bytes:
    """(doc, [title, body, anchor, url, meta, nav] tfs, positions) -> a term's row."""
    return Chunk(
        np.array([p[0] for p in postings], np.uint32),
        np.array([p[1] for p in postings], np.uint16).reshape(-1, 6),
        np.array([p[2] for p in postings], np.uint32),
        np.arange(sum(p[2] for p in postings), dtype=np.uint32),
    ).encode()


def test_without_nav_is_the_index_built_without_nav_text() -> None:
    lengths = {0: [1, 4, 0, 2, 0, 3], 1: [1, 5, 0, 2, 0, 6], 2: [2, 3, 1, 2, 0, 0]}
    with_nav = [
        (
            ["t", "menu"],
            _chunk((0, [0, 0, 0, 0, 0, 2], 0), (1, [0, 1, 0, 0, 0, 1], 1), (2, [0, 1, 0, 0, 0, 0], 1)),
        ),
        (["t", "jobs"], _chunk((1, [0, 0, 0, 0, 0, 3], 0))),  # only in a link list
        (["t", "wharf"], _chunk((0, [1, 2, 0, 0, 0, 1], 3), (2, [0, 0, 1, 0, 0, 0], 0))),
    ]
    without = [
        (["t", "menu"], _chunk((1, [0, 1, 0, 0, 0, 0], 1), (2, [0, 1, 0, 0, 0, 0], 1))),
        (["t", "jobs"], _chunk()),
        (["t", "wharf"], _chunk((0, [1, 2, 0, 0, 0, 0], 3), (2, [0, 0, 1, 0, 0, 0], 0))),
    ]
    lengths_rows = [(["l", doc], values) for doc, values in lengths.items()]
    flat = [(["l", doc], [*values[:5], 0]) for doc, values in lengths.items()]
    ranks = np.array([0.3, 0.3, 0.4])
    got = without_nav(segment_arrays(collect_index_rows(with_nav + lengths_rows), ranks, 3))
    want = segment_arrays(collect_index_rows(without + flat), ranks, 3)
    assert set(got) == set(want)
    for name, array in want.items():
        assert got[name].dtype == array.dtype, name
        if array.dtype.kind == "f":
            assert got[name].tolist() == pytest.approx(array.tolist(), rel=1e-6), name
        else:
            assert got[name].tolist() == array.tolist(), name
