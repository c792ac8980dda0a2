"""Snippets come from a page's content, not its furniture (issue 32: the top snippet for a
person came from the "External links" section)."""

from __future__ import annotations

from services.search.display.snippets import furniture_start, make_snippet, snippet_text
from services.text.analysis.analyze import analyze

BODY = "It has many rivers and hills, and its people drink tea in the evenings. " * 12
LINKS = "Lutz official site. Lutz tourism board. Lutz city council. Lutz news and weather."


def _snippet(text: str, query: str) -> str:
    return snippet_text(make_snippet(text, set(analyze(query))))


def test_the_main_text_is_preferred_to_external_links() -> None:
    text = f"Lutz is the capital of Zubrowka. {BODY}External links {LINKS}"
    assert _snippet(text, "lutz").startswith("Lutz is the capital")
    for heading in ("References", "See also", "Further reading", "Notes", "Bibliography", "EXTERNAL LINKS"):
        text = f"{BODY}The city of Lutz lies on a river. {BODY}\n{heading}\n{LINKS}"
        assert "The city of Lutz lies" in _snippet(text, "lutz"), heading


def test_furniture_still_gives_the_snippet_when_it_alone_holds_more_query_words() -> None:
    text = f"Lutz is a city. {BODY}External links Lutz tourism board of Zubrowka."
    assert "tourism board" in _snippet(text, "lutz tourism")


def test_a_heading_is_only_a_heading_at_a_blocks_start() -> None:
    for prose in (
        "He took notes on the river. See also the hills.",  # a lower-case word follows
        "She kept her notes. Notes on rivers follow",
        "the references list and see also",  # not at a block's start, not capitalised
    ):
        assert furniture_start(prose) == len(prose)
    assert furniture_start("Text.\nReferences\n1. A book") == len("Text.\n")
    assert furniture_start("The end. External links Official site") == len("The end. ")


def test_a_heading_after_the_best_stretch_or_a_title_word_in_prose_changes_nothing() -> None:
    """The furniture start is looked for only up to the best stretch: pages with a heading
    after it, or a title's word in a sentence before it, get the stretch as before."""
    content = "Glaciers carve valleys. Glacier ice moves slowly downhill over many years. "
    later = "Filler text about other things. " * 20 + "References\n1. Glacier atlas, glacier survey."
    assert "Glaciers carve" in snippet_text(make_snippet(content + later, ["glacier"]))
    prose = "See the Notes of the survey. " + "Filler text about other things. " * 20 + content
    assert "Glaciers carve" in snippet_text(make_snippet(prose, ["glacier"]))
    # A heading before the densest stretch still sends the snippet to the content.
    head = content + "Filler text. " * 30 + "References\n" + "Glacier glacier glaciers, glacier atlas. " * 3
    assert "Glaciers carve" in snippet_text(make_snippet(head, ["glacier"]))
