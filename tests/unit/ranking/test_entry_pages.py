"""Entry pages: the URL's form, whether a query names a page, the factor it gets."""

from __future__ import annotations

import numpy as np
import pytest

from services.ranking.entry_pages import (
    UrlKind,
    entry_factor,
    names_by_url,
    names_page,
    site_names,
    url_kind,
    url_kinds,
)


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


def _named(
    url: list[list[bool]],
    site: list[list[bool]],
    title: tuple[list[list[int]], list[int]],
    anchor: tuple[list[list[int]], list[int]],
) -> list[bool]:
    return names_page(
        np.array(url, dtype=bool),
        np.array(site, dtype=bool),
        np.array(title[0]),
        np.array(title[1]),
        np.array(anchor[0]),
        np.array(anchor[1]),
    ).tolist()


def test_a_query_names_a_page_by_url_words_site_name_or_most_of_its_title_or_anchor_text() -> None:
    # One query word ("iana"), five pages.
    assert _named(
        url=[[True], [False], [False], [False], [False]],  # 0: the host is www.iana.org
        site=[[False], [True], [False], [False], [False]],  # 1: the site's pages say "IANA — ..."
        title=([[0], [0], [1], [1], [0]], [4, 4, 1, 4, 4]),  # 2: title "IANA"; 3: "IANA — Root Zone Database"
        anchor=([[0], [0], [0], [0], [9]], [14, 14, 14, 14, 10]),  # 4: 9 of 10 anchor words say "IANA"
    ) == [True, True, True, False, True]


def test_every_word_must_be_named() -> None:
    # Two query words ("iana numbers"): the host names one, the site name the other.
    assert _named(
        url=[[True, False], [True, True], [False, False]],
        site=[[False, True], [False, False], [False, False]],
        title=([[0, 0], [0, 0], [1, 1]], [3, 3, 5]),  # page 2: both words, 2 of its 5 title terms
        anchor=([[0, 0], [0, 0], [0, 0]], [0, 0, 0]),
    ) == [True, True, False]


def test_most_of_the_title_names_the_page_one_word_of_it_does_not() -> None:
    no_anchor = ([[0, 0]], [0])
    # "sample wiki" against "Sample Wiki - all articles" (3 terms: sampl, wiki, articl): 2 of 3.
    assert _named([[False, False]], [[False, False]], ([[1, 1]], [3]), no_anchor) == [True]
    # "numbers" against "Internet Assigned Numbers Authority": 1 of 4 is a word of the name.
    assert _named([[False]], [[False]], ([[1]], [4]), ([[0]], [0])) == [False]
    # "domains" against "Example Domain": half is not most.
    assert _named([[False]], [[False]], ([[1]], [2]), ([[0]], [0])) == [False]
    assert _named([[False]], [[False]], ([[0]], [0]), ([[0]], [0])) == [False]  # no title names nothing


def test_no_words_name_nothing() -> None:
    empty = np.zeros((2, 0), dtype=bool)
    zeros = np.zeros((2, 0))
    lengths = np.array([3, 3])
    assert names_page(empty, empty, zeros, lengths, zeros, lengths).tolist() == [False, False]


def test_the_factor_by_url_form_for_named_pages_only() -> None:
    kinds = np.array(
        [UrlKind.ROOT, UrlKind.SUBROOT, UrlKind.PATH, UrlKind.FILE, UrlKind.ROOT], dtype=np.uint8
    )
    named = np.array([True, True, True, True, False])
    assert entry_factor(kinds, named, 1.0).tolist() == [2.0, 1.5, 1.0, 1.0, 1.0]
    assert entry_factor(kinds, named, 0.0).tolist() == [1.0] * 5


def test_a_sites_name_is_the_words_most_of_its_titles_share_and_only_roots_get_it() -> None:
    # Terms 0 "iana", 1 "zone", 2 "wiki". Host 0: docs 0 (root), 1, 2, 3; host 1: docs 4 (root), 5.
    # "iana" is in the titles of docs 1, 2, 3 (3 of host 0's 4 pages), "zone" in doc 2's only;
    # "wiki" in doc 5's title and (URL only, tf 0) doc 4: 1 of host 1's 2 pages, below 2 pages.
    post_offsets = np.array([0, 3, 4, 6])
    post_docs = np.array([1, 2, 3, 2, 4, 5])
    tf_title = np.array([1, 1, 1, 1, 0, 1])
    hosts = np.array([0, 0, 0, 0, 1, 1])
    kinds = np.array([UrlKind.ROOT, UrlKind.SUBROOT, UrlKind.PATH, UrlKind.FILE, UrlKind.ROOT, UrlKind.PATH])
    offsets, terms = site_names(post_offsets, post_docs, tf_title, hosts, kinds.astype(np.uint8))
    assert offsets.tolist() == [0, 1, 1, 1, 1, 1, 1] and terms.tolist() == [0]


@pytest.mark.parametrize("seed", range(5))
def test_site_names_match_a_count_of_each_hosts_titles(seed: int) -> None:
    """Random postings (some terms with none) against the rule counted page by page."""
    rng = np.random.default_rng(seed)
    num_docs, num_terms, num_hosts = 60, 12, 4
    per_term = rng.integers(0, num_docs + 1, num_terms)
    per_term[rng.integers(0, num_terms)] = 0
    post_docs = np.concatenate([np.sort(rng.choice(num_docs, n, replace=False)) for n in per_term])
    post_offsets = np.concatenate([[0], np.cumsum(per_term)])
    tf_title = (rng.random(post_docs.shape[0]) < 0.6).astype(np.uint16)
    hosts = rng.integers(0, num_hosts, num_docs)
    kinds = rng.choice([UrlKind.ROOT, UrlKind.PATH], num_docs).astype(np.uint8)
    offsets, terms = site_names(post_offsets, post_docs, tf_title, hosts, kinds)
    host_pages = np.bincount(hosts, minlength=num_hosts)
    named: dict[int, list[int]] = {h: [] for h in range(num_hosts)}
    for term in range(num_terms):
        titled = [
            int(d)
            for d, tf in zip(
                post_docs[post_offsets[term] : post_offsets[term + 1]],
                tf_title[post_offsets[term] : post_offsets[term + 1]],
                strict=True,
            )
            if tf
        ]
        for h in range(num_hosts):
            pages = sum(1 for d in titled if hosts[d] == h)
            if pages >= 2 and pages >= 0.5 * host_pages[h]:
                named[h].append(term)
    expected = [named[int(hosts[d])] if kinds[d] == UrlKind.ROOT else [] for d in range(num_docs)]
    got = [terms[offsets[d] : offsets[d + 1]].tolist() for d in range(num_docs)]
    assert got == expected
    assert any(expected)  # the rule named some site


def test_a_page_alone_on_its_host_names_no_site() -> None:
    offsets, terms = site_names(
        np.array([0, 1]),
        np.array([0]),
        np.array([3]),
        np.array([0]),
        np.array([UrlKind.ROOT], dtype=np.uint8),
    )
    assert offsets.tolist() == [0, 0] and terms.shape[0] == 0


def test_generic_url_words_and_numbers_name_no_site() -> None:
    assert names_by_url("iana") and names_by_url("time") and names_by_url("3com")
    assert not any(names_by_url(w) for w in ("www", "org", "com", "127", "0", "41083"))
