"""Which analyses (languages) a query is read in on an index (``analyses_for``)."""

from __future__ import annotations

import pytest

from services.search.query.language import analyses_for
from services.text.analysis.lang import identify
from services.text.analysis.languages import PLAIN, query_languages, script_of

TEXTS = [
    "Die Häuser der Altstadt von Heidelberg und ihre Brücken",
    "книга о самолётах и крыльях для начинающих",
    "les élections municipales de la ville de Lyon",
    "+wing +lift",
    "東京の天気予報を見る",
    "42",
    "",
]


@pytest.mark.parametrize("only", ["en", "de", "ru", PLAIN])
def test_a_one_language_index_reads_every_query_as_the_full_rule_does(only: str) -> None:
    """On an index of one analysis the query's language is not asked: whatever CLD2 says and
    whatever the script, ``query_languages`` ends in that one analysis."""
    index = {only: 1000}
    for text in TEXTS:
        assert analyses_for(text, index) == query_languages(identify(text), index, script_of(text)) == [only]


def test_a_query_on_a_multilingual_index_is_read_in_its_own_language() -> None:
    index = {"en": 900, "de": 80, "ru": 20}
    assert analyses_for(TEXTS[0], index) == ["de", "en"]
    assert analyses_for(TEXTS[1], index) == ["ru", "en"]
    assert analyses_for("+wing +lift", index) == ["en", "de"]  # too short to tell: >= 5 % of pages
