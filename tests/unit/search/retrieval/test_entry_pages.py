"""The entry-page factor in retrieval: a query naming a site puts its home page first, and
a query naming none ranks exactly as without the factor."""

from __future__ import annotations

import numpy as np

from mapreduce.mr_index import LENGTH, TERM
from mapreduce.postings import PostingBuffer
from services.config.search import SearchSettings
from services.indexing.index_rows import collect_index_rows
from services.indexing.segment_arrays import segment_arrays
from services.ranking.entry_pages import url_kinds
from services.search.query.language import parse_query
from services.search.retrieval.entry_pages import named_entry_pages
from services.search.retrieval.retrieve import retrieve
from services.search.retrieval.segment import SegmentIndex
from services.text.urls import host_key

ACME = "Acme widgets, Acme gadgets and Acme spare parts: Acme ships every Acme order in a day."
PAGES = [  # (url, title, text, anchor text of links to it)
    ("http://shop.test/", "Acme: tools for the workshop", "Welcome to our shop.", "Home"),
    ("http://shop.test/catalogue/widgets", "Acme widgets", ACME + " Widgets in steel.", "Widgets"),
    ("http://shop.test/catalogue/gadgets", "Acme gadgets", ACME + " Gadgets in brass.", "Gadgets"),
    ("http://shop.test/about/acme.html", "About Acme", ACME, "About"),
    ("http://shop.test/gears", "Gears", "Gears of steel, gears of brass: gears for every workshop.", "Gears"),
    ("http://other.test/blog/gears", "Gears", "A post on gears and the workshop.", ""),
]


def index_of(pages: list[tuple[str, str, str, str]], with_kinds: bool = True) -> SegmentIndex:
    buffer, rows = PostingBuffer(), []
    for num, (url, title, text, anchor) in enumerate(pages):
        buffer.add_anchor(num, anchor)
        buffer.add(Record_(num, url, title, text))
    chunks, lengths = buffer.drain()
    rows += [([LENGTH, num], [n or 0 for n in fields]) for num, fields in lengths.items()]
    rows += [([TERM, t], c.encode()) for t, c in chunks]
    n = len(pages)
    kinds = url_kinds(((i, p[0]) for i, p in enumerate(pages)), n) if with_kinds else None
    hosts: dict[str, int] = {}
    doc_hosts = np.array([hosts.setdefault(host_key(p[0]), len(hosts)) for p in pages])
    arrays = segment_arrays(
        collect_index_rows(rows), np.full(n, 1 / n), n, url_kinds=kinds, doc_hosts=doc_hosts
    )
    return SegmentIndex(0, "t", None, {"languages": {"en": n}}, arrays)


def Record_(num: int, url: str, title: str, text: str):  # noqa: N802 - a Record, as the crawler writes it
    from services.storage.formats.records import Record

    return Record(num, url, "", "", "text/html", title=title, text=text, lang="en")


def term(index: SegmentIndex, word: str) -> int:
    """The term id of ``word`` as a query analyzes it."""
    (analyzed,) = parse_query(word).terms
    found = index.term_id(analyzed)
    assert found is not None
    return found


def ranked(index: SegmentIndex, q: str, weight: float) -> list[int]:
    settings = SearchSettings(entry_page_weight=weight, feedback_docs=0)
    return retrieve(index, parse_query(q), 10, settings).ranked.docs.tolist()


def test_a_query_naming_the_site_finds_its_home_page_first() -> None:
    index = index_of(PAGES)
    assert ranked(index, "acme", 0.0)[0] != 0  # the inner pages say "Acme" many times
    assert ranked(index, "acme", 1.0)[0] == 0  # the site's pages are titled "Acme ..."
    acme = term(index, "acme")
    pages, factors = named_entry_pages(index, [[acme]], 1.0)
    assert pages.tolist() == [0] and factors.tolist() == [2.0]
    # Its title names the site only with the site's other pages: "acme" is one of three
    # title words, and in the titles of three of the site's five pages.
    assert index.arrays["site_name_terms"].tolist() == [acme]


def test_a_section_named_by_its_url_is_its_entry_page() -> None:
    index = index_of(PAGES)
    # "gears" names the subroot /gears (its URL word) and nothing else: /gears first, at
    # 1.5 times its text score, the other site's post on gears after it.
    pages, factors = named_entry_pages(index, [[term(index, "gears")]], 1.0)
    assert pages.tolist() == [4] and factors.tolist() == [1.5]
    assert ranked(index, "gears", 1.0)[0] == 4


def test_a_query_naming_no_entry_page_ranks_as_without_the_factor() -> None:
    index = index_of(PAGES)
    settings_off = SearchSettings(entry_page_weight=0.0, feedback_docs=0)
    settings_on = SearchSettings(entry_page_weight=1.0, feedback_docs=0)
    for q in ("steel", "brass workshop", "spare parts", "widgets steel"):
        query = parse_query(q)
        off, on = retrieve(index, query, 10, settings_off).ranked, retrieve(index, query, 10, settings_on).ranked
        assert on.docs.tolist() == off.docs.tolist() and on.final.tolist() == off.final.tolist(), q


def test_a_segment_without_url_forms_has_no_entry_pages() -> None:
    index = index_of(PAGES, with_kinds=False)  # every document a PATH: as before format 7
    assert named_entry_pages(index, [[term(index, "acme")]], 1.0)[0].shape[0] == 0
    assert ranked(index, "acme", 1.0) == ranked(index, "acme", 0.0)
