"""Entry pages in retrieval: a query naming a site lists its home page first, a query naming
a section lifts its page by the bounded factor, and a query naming none ranks exactly as
without entry pages."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from services.config.search import SearchSettings
from services.search.query.language import parse_query
from services.search.retrieval.entry_pages import named_entry_pages
from services.search.retrieval.explain import breakdown
from services.search.retrieval.retrieve import retrieve, retrieve_ranked
from services.search.retrieval.segment import SegmentIndex
from tests.unit.search.retrieval.web_pages import index_of

ACME = "Acme widgets, Acme gadgets and Acme spare parts: Acme ships every Acme order in a day."
PAGES = [  # (url, title, text, anchor text of links to it)
    ("http://shop.test/", "Acme: tools for the workshop", "Welcome to our shop.", "Home"),
    ("http://shop.test/catalogue/widgets", "Acme widgets", ACME + " Widgets in steel.", "Widgets"),
    ("http://shop.test/catalogue/gadgets", "Acme gadgets", ACME + " Gadgets in brass.", "Gadgets"),
    ("http://shop.test/about/acme.html", "About Acme", ACME, "About"),
    ("http://shop.test/gears", "Gears", "Gears of steel, gears of brass: gears for every workshop.", "Gears"),
    ("http://other.test/blog/gears", "Gears", "Gears: spur gears, bevel gears, worm gears, rack gears.", ""),
]
# A home page whose text barely says the name: only the site's other pages call it "Acme".
QUIET_HOME = [
    (
        "http://shop.test/",
        "Welcome",
        "Welcome to Acme. Tools, hardware, paint, timber and garden supplies for the workshop and the "
        "home, delivered across the county from a shop open six days a week since 1952.",
        "Home",
    ),
    *PAGES[1:],
]


def term(index: SegmentIndex, word: str) -> int:
    """The term id of ``word`` as a query analyzes it."""
    (analyzed,) = parse_query(word).terms
    found = index.term_id(analyzed)
    assert found is not None
    return found


def ranked(index: SegmentIndex, q: str, weight: float) -> list[int]:
    settings = SearchSettings(entry_page_weight=weight, feedback_docs=0)
    return retrieve_ranked(index, parse_query(q), 10, settings).ranked.docs.tolist()


def test_a_query_naming_the_site_finds_its_home_page_first() -> None:
    index = index_of(PAGES)
    assert ranked(index, "acme", 0.0)[0] != 0  # the inner pages say "Acme" many times
    assert ranked(index, "acme", 1.0)[0] == 0  # the site's pages are titled "Acme ..."
    acme = term(index, "acme")
    named = named_entry_pages(index, [[acme]], 1.0)
    assert named.docs.tolist() == [0] and named.factors.tolist() == [2.0]
    # Its title names the site only with the site's other pages: "acme" is one of three
    # title words, and in the titles of three of the site's five pages.
    assert index.arrays["site_name_terms"].tolist() == [acme]


def test_a_section_named_by_its_url_is_its_entry_page() -> None:
    index = index_of(PAGES)
    # "gears" names the subroot /gears (its URL word) and nothing else: /gears first, at
    # 1.5 times its text score, the other site's post on gears after it.
    named = named_entry_pages(index, [[term(index, "gears")]], 1.0)
    assert named.docs.tolist() == [4] and named.factors.tolist() == [1.5] and named.roots.shape[0] == 0
    assert ranked(index, "gears", 0.0)[0] != 4
    assert ranked(index, "gears", 1.0)[0] == 4


def test_a_query_naming_no_entry_page_ranks_as_without_the_factor() -> None:
    index = index_of(PAGES)
    settings_off = SearchSettings(entry_page_weight=0.0, feedback_docs=0)
    settings_on = SearchSettings(entry_page_weight=1.0, feedback_docs=0)
    for q in ("steel", "brass workshop", "spare parts", "widgets steel"):
        query = parse_query(q)
        off = retrieve_ranked(index, query, 10, settings_off).ranked
        on = retrieve_ranked(index, query, 10, settings_on).ranked
        assert on.docs.tolist() == off.docs.tolist() and on.final.tolist() == off.final.tolist(), q


def test_a_segment_without_url_forms_has_no_entry_pages() -> None:
    index = index_of(PAGES, with_kinds=False)  # every document a PATH: as before format 8
    assert named_entry_pages(index, [[term(index, "acme")]], 1.0).docs.shape[0] == 0
    assert ranked(index, "acme", 1.0) == ranked(index, "acme", 0.0)


def test_the_home_page_first_whatever_its_score_but_not_past_the_querys_filters() -> None:
    index = index_of(QUIET_HOME)
    settings = SearchSettings(feedback_docs=0)
    found = retrieve_ranked(index, parse_query("acme"), 3, settings)
    plain = retrieve(index, parse_query("acme"), 10, settings).ranked
    assert found.ranked.docs.tolist()[0] == 0 and found.ranked.docs.shape[0] == 3
    assert found.ranked.total == plain.total  # the same matches, counted once
    assert float(found.ranked.final[0]) < float(found.ranked.final[1])  # first by being named
    # The rest follow in their own order.
    assert found.ranked.docs.tolist()[1:] == [d for d in plain.docs.tolist() if d != 0][:2]
    assert 0 not in ranked_docs(index, "acme -welcome", settings)  # excluded stays excluded
    assert ranked_docs(index, '"acme widgets"', settings)[0] == 1  # the home holds no such phrase
    allowed = np.ones(index.num_docs, dtype=bool)
    allowed[0] = False  # an operator (site:, intitle:...) left it out
    assert 0 not in retrieve_ranked(index, parse_query("acme"), 10, settings, allowed).ranked.docs.tolist()


def ranked_docs(index: SegmentIndex, q: str, settings: SearchSettings) -> list[int]:
    return retrieve_ranked(index, parse_query(q), 10, settings).ranked.docs.tolist()


def test_page_info_shows_the_entry_page_factor() -> None:
    index = index_of(QUIET_HOME)
    settings = SearchSettings(feedback_docs=0)
    query = parse_query("acme")
    result = retrieve_ranked(index, query, 10, settings)
    home = breakdown(index, query, "acme", 0, result.ranked, result.mode, 0.2, settings.entry_page_weight)
    inner = breakdown(index, query, "acme", 3, result.ranked, result.mode, 0.2, settings.entry_page_weight)
    assert (home.rank, home.entry_factor, inner.entry_factor) == (1, 2.0, 1.0)
    rebuilt = home.text_score * (1 + home.prior) * home.entry_factor * (1 + home.exact_bonus)
    assert home.final_score == pytest.approx(rebuilt)


def test_a_generic_url_word_names_no_home_page() -> None:
    index = index_of(PAGES)
    # "shop" is the host's name (shop.test): it names the home page; "test", the suffix
    # here, would too were it "com" or "org", which name no site.
    assert named_entry_pages(index, [[term(index, "shop")]], 1.0).roots.tolist() == [0]
    generic = index_of([("http://www.shop.org/", "Welcome", "www org shop", "Home"), *PAGES[1:]])
    assert named_entry_pages(generic, [[term(generic, "org")]], 1.0).docs.shape[0] == 0
    assert named_entry_pages(generic, [[term(generic, "www")]], 1.0).docs.shape[0] == 0


def test_the_entry_pages_in_the_rarest_words_lists_either_way_round() -> None:
    """Entries looked up in the lists (they are the fewer) or the lists filtered by kind (they
    are): the same pages, ascending, once each."""
    from services.ranking.entry_pages import UrlKind
    from services.search.retrieval.entry_pages import _entries_holding
    from services.storage.formats.doc_blocks import pack_docs

    rng = np.random.default_rng(7)
    kinds = rng.choice([UrlKind.ROOT, UrlKind.SUBROOT, UrlKind.PATH, UrlKind.FILE], 5000).astype(np.uint8)
    entries = np.flatnonzero(kinds <= UrlKind.SUBROOT).astype(np.uint32)
    for sizes in ([40], [30, 25], [4000], [3000, 2500]):
        parts = [np.sort(rng.choice(5000, n, replace=False)).astype(np.uint32) for n in sizes]
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.uint64)
        lists = {
            "post_offsets": offsets,
            **pack_docs(np.concatenate(parts), offsets),
            "post_impacts": np.ones(sum(sizes), np.float32),
        }
        index = SegmentIndex(0, "lists", Path("lists"), {}, lists)
        union = np.unique(np.concatenate(parts))
        want = union[kinds[union] <= UrlKind.SUBROOT]
        got = _entries_holding(index, entries, list(range(len(sizes))), kinds)
        assert got.tolist() == want.tolist() and got.dtype == np.uint32
