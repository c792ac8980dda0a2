"""A query word read in several languages: any of its forms matches, scored by the best;
a segment of another analyzer is refused."""

from __future__ import annotations

import numpy as np
import pytest

from mapreduce.mr_index import LENGTH, TERM
from mapreduce.postings import PostingBuffer
from services.indexing.index_rows import collect_index_rows
from services.indexing.segment_arrays import segment_arrays
from services.search.errors import SearchIndexError
from services.search.query.language import parse_query, plain_query
from services.search.retrieval.query_terms import query_term_group
from services.search.retrieval.retrieve import retrieve
from services.search.retrieval.segment import SegmentIndex, check_analyzer
from services.storage.formats.records import Record
from services.storage.formats.segment_codec import compact_segment
from services.text.analysis.analyze import analyzer_version

PAGES = [
    ("de", "Altstadt", "Die alten Häuser der Altstadt stehen am Fluss"),
    ("en", "Houses", "The houses of the old town stand by the river"),
    ("de", "Brücken", "Die Brücken über den Fluss sind alt"),
    ("en", "Haus", "Haus is a word the English analyzer leaves whole: Haus"),
]


def index_of(pages: list[tuple[str, str, str]]) -> SegmentIndex:
    buffer, rows = PostingBuffer(), []
    for num, (lang, title, text) in enumerate(pages):
        buffer.add(
            Record(num, f"http://t.test/{num}", "", "", "text/html", title=title, text=text, lang=lang)
        )
    chunks, lengths = buffer.drain()
    rows += [([LENGTH, num], [n or 0 for n in fields]) for num, fields in lengths.items()]
    rows += [([TERM, t], c.encode()) for t, c in chunks]
    n = len(pages)
    arrays = segment_arrays(collect_index_rows(rows), np.full(n, 1 / n), n)
    return SegmentIndex(0, "t", None, {"languages": {"de": 2, "en": 2}}, compact_segment(arrays))


def test_a_word_gets_its_forms_in_every_language_of_the_query() -> None:
    query = parse_query("Häuser -Brücken", ["en", "de"])
    assert dict(query.terms) == {"häuser": 1}
    assert query.alternatives == {"häuser": ["haus"]}
    assert query.forms_of("häuser") == ["häuser", "haus"]
    assert set(query.excluded) == {"brücken", "bruck"}  # an exclusion excludes every form
    assert plain_query("Häuser", ["de", "en"]).alternatives == {"haus": ["häuser"]}
    assert parse_query("Häuser").alternatives == {}  # one language: no alternatives


def test_the_first_language_decides_the_stop_words() -> None:
    assert dict(parse_query("die Häuser", ["de", "en"]).terms) == {"haus": 1}
    assert dict(parse_query("die Häuser", ["en", "de"]).terms) == {"die": 1, "häuser": 1}


def test_any_form_matches_and_the_best_impact_scores() -> None:
    index = index_of(PAGES)
    found = retrieve(index, parse_query("Häuser", ["en", "de"]), 10)
    assert sorted(found.ranked.docs.tolist()) == [0, 3]  # German "haus" and English "haus"
    assert found.found == ["häuser"]  # the word, as its first analysis names it
    # A word with one form in the index is that term, unchanged.
    haus = index.term_id("haus")
    assert haus is not None
    group = query_term_group(index, [haus], 1.0)
    docs, impacts = index.postings(haus)
    assert group.docs.tolist() == docs.tolist() and group.impacts.tolist() == impacts.tolist()


def test_a_group_of_two_terms_takes_each_documents_best() -> None:
    index = index_of(PAGES)
    a, b = index.term_id("alt"), index.term_id("fluss")
    assert a is not None and b is not None
    group = query_term_group(index, [a, b], 2.0)
    docs_a, imp_a = index.postings(a)
    docs_b, imp_b = index.postings(b)
    best: dict[int, float] = {}
    pairs = [
        *zip(docs_a.tolist(), imp_a.tolist(), strict=True),
        *zip(docs_b.tolist(), imp_b.tolist(), strict=True),
    ]
    for d, x in pairs:
        best[d] = max(best.get(d, 0.0), x)
    assert group.docs.tolist() == sorted(best)
    assert group.impacts.tolist() == pytest.approx([best[d] for d in sorted(best)])
    assert group.max_impact == max(index.max_impact(a), index.max_impact(b))
    assert group.weight == 2.0


def test_a_segment_of_another_analyzer_is_refused() -> None:
    check_analyzer({"analyzer": analyzer_version()}, "segment")
    with pytest.raises(SearchIndexError, match="rebuild the index"):
        check_analyzer({"analyzer": "1-000000000000"}, "segment")
    with pytest.raises(SearchIndexError, match="before per-language analysis"):
        check_analyzer({}, "segment")  # built before the analyzer had a version
