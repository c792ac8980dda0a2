"""What removed markup leaves in extracted text goes, and real punctuation stays (issue 32:
"Allah (; , )" in a snippet)."""

from __future__ import annotations

import pytest

from services.archives.formats.wikitext import CANONICAL, Namespaces, to_text
from services.text.extract.html import parse_html
from services.text.extract.leftovers import tidy_leftovers


@pytest.mark.parametrize(
    ("dirty", "clean"),
    [
        ("Allah (; , ) is", "Allah is"),
        ("Albedo ( ; ) and", "Albedo and"),
        ("x [ , ] y", "x y"),
        ("solar zenith angle,, and", "solar zenith angle, and"),
        ("such as, ; or", "such as, or"),
        ("Foo , bar ; baz .", "Foo, bar; baz."),
        ("a  b", "a b"),
    ],
)
def test_leftovers_go(dirty: str, clean: str) -> None:
    assert tidy_leftovers(dirty) == clean


@pytest.mark.parametrize(
    "kept",
    ["call foo() and a[]", "f(a, b)", "i.e., the U.S., etc.", "(1, 2)", ".NET, C#", "x = [1,2]", "a\nb"],
)
def test_real_punctuation_stays(kept: str) -> None:
    assert tidy_leftovers(kept) == kept


def _wiki(text: str) -> str:
    return to_text(text, Namespaces(CANONICAL), frozenset({0}), lambda t: "https://w/" + t)[0]


def test_wikitext_hostile_leftovers() -> None:
    text = _wiki(
        "'''Allah''' ({{IPA|ˈælə}}; {{lang-ar|}}, {{IPA|x}}) is God.\n"
        "The angle,{{sfn|x}}, and such as {{IPA|a}},{{IPA|b}}, or.<ref>x</ref>\n"
        "Empty [{{cite|x}}] bracket and [ ] one.\n"
        "{{efn|note}}, a line that began with a reference.\n"
        ".NET stays."
    )
    assert text.splitlines() == [
        "Allah is God.",
        "The angle, and such as, or.",
        "Empty bracket and one.",
        "a line that began with a reference.",
        ".NET stays.",
    ]


def test_html_text_without_separator_leftovers() -> None:
    page = parse_html(
        b"<html><body><p>Allah (<span class=ipa></span>; <span></span>, ) is <a href=/g>God</a>, "
        b"the <b>one</b>; call foo() here.</p></body></html>",
        "http://example.test/",
    )
    assert page.text == "Allah is God, the one; call foo() here."
