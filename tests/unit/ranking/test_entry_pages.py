"""Entry pages: the URL's form, whether a query names a page, the factor it gets."""

from __future__ import annotations

import numpy as np
import pytest

from services.ranking.entry_pages import UrlKind, entry_factor, names_page, url_kind, url_kinds


@pytest.mark.parametrize(
    ("url", "kind"),
    [
        ("http://www.iana.org/", UrlKind.ROOT),
        ("http://www.iana.org", UrlKind.ROOT),
        ("http://127.0.0.1:8000/index.html", UrlKind.ROOT),
        ("https://example.com/Default.aspx", UrlKind.ROOT),
        ("http://www.iana.org/time-zones", UrlKind.SUBROOT),
        ("http://www.iana.org/domains/", UrlKind.SUBROOT),
        ("http://www.iana.org/domains/index.htm", UrlKind.SUBROOT),
        ("http://www.iana.org/domains/root/db", UrlKind.PATH),
        ("https://en.wikipedia.org/wiki/Anarchism", UrlKind.PATH),
        ("https://cranfield.collection.invalid/doc/12", UrlKind.PATH),
        ("http://www.iana.org/about/overview.pdf", UrlKind.FILE),
        ("http://www.iana.org/robots.txt", UrlKind.FILE),
        ("http://example.com/?page=2", UrlKind.FILE),
        ("http://example.com/news?id=4#top", UrlKind.FILE),
        ("http://example.com/#top", UrlKind.ROOT),
    ],
)
def test_the_url_forms_of_kraaij_et_al(url: str, kind: UrlKind) -> None:
    assert url_kind(url) == kind


def test_url_kinds_by_doc_number_and_no_url_is_no_entry_page() -> None:
    kinds = url_kinds([(0, "http://a.test/"), (2, "http://a.test/x/y"), (7, "http://a.test/")], 4)
    assert kinds.tolist() == [UrlKind.ROOT, UrlKind.PATH, UrlKind.PATH, UrlKind.PATH]
    assert kinds.dtype == np.uint8


def _named(url: list[list[bool]], anchor: list[list[bool]], title: list[list[int]], lens: list[int]) -> list[bool]:
    return names_page(
        np.array(url, dtype=bool), np.array(anchor, dtype=bool), np.array(title), np.array(lens)
    ).tolist()


def test_a_query_names_a_page_by_url_words_anchor_text_or_most_of_the_title() -> None:
    # One query word ("iana"), four pages.
    assert _named(
        url=[[True], [False], [False], [False]],  # 0: the host is www.iana.org
        anchor=[[False], [True], [False], [False]],  # 1: links to it say "IANA"
        title=[[0], [0], [1], [1]],  # 2: title "IANA" (1 term); 3: "IANA — Root Zone Database" (4)
        lens=[4, 4, 1, 4],
    ) == [True, True, True, False]


def test_every_word_must_be_named_and_url_and_anchor_words_combine() -> None:
    # Two query words ("iana numbers").
    assert _named(
        url=[[True, False], [True, False], [False, False]],
        anchor=[[False, True], [False, False], [False, False]],
        title=[[0, 0], [0, 1], [1, 1]],
        lens=[3, 2, 5],  # page 2: both words but only 2 of its title's 5 terms
    ) == [True, False, False]


def test_half_the_title_names_the_page() -> None:
    # "sample wiki" against "Sample Wiki - all articles" (3 terms: sampl, wiki, articl): 2 of 3.
    assert _named([[False, False]], [[False, False]], [[1, 1]], [3]) == [True]
    # "numbers" against "Internet Assigned Numbers Authority": 1 of 4 is one word of the name.
    assert _named([[False]], [[False]], [[1]], [4]) == [False]
    assert _named([[False]], [[False]], [[0]], [0]) == [False]  # no title names nothing


def test_no_words_name_nothing() -> None:
    empty = np.zeros((2, 0), dtype=bool)
    assert names_page(empty, empty, np.zeros((2, 0)), np.array([3, 3])).tolist() == [False, False]


def test_the_factor_by_url_form_for_named_pages_only() -> None:
    kinds = np.array([UrlKind.ROOT, UrlKind.SUBROOT, UrlKind.PATH, UrlKind.FILE, UrlKind.ROOT], dtype=np.uint8)
    named = np.array([True, True, True, True, False])
    assert entry_factor(kinds, named, 1.0).tolist() == [2.0, 1.5, 1.0, 1.0, 1.0]
    assert entry_factor(kinds, named, 0.0).tolist() == [1.0] * 5
