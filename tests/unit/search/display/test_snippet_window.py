"""Snippet windows: where the matches are, what is marked, and the fallbacks."""

from __future__ import annotations

from services.search.display.snippets import ELLIPSIS, Fragment, make_snippet, snippet_text
from services.text.analysis.analyze import analyze


def terms(query: str) -> set[str]:
    return set(analyze(query))


def marked(fragments: list[Fragment]) -> list[str]:
    return [f.text for f in fragments if f.match]


def filler(n: int, word: str = "lorem") -> str:
    return " ".join(f"{word}{i}" for i in range(n))


def test_window_moves_to_the_densest_stretch_of_matches():
    text = (
        f"{filler(40)} the wing carries lift {filler(40, 'ipsum')} "
        f"wing lift and wing drag near the wing root {filler(40, 'dolor')}"
    )
    fragments = make_snippet(text, terms("wing lift"), window=12)
    assert marked(fragments) == ["wing", "lift", "wing", "wing"]
    shown = snippet_text(fragments)
    assert shown.startswith(ELLIPSIS) and shown.endswith(ELLIPSIS)
    assert "carries" not in shown  # the sparser first mention lost


def test_distinct_terms_beat_a_repeated_single_term():
    text = f"flow flow flow flow {filler(30)} boundary layer flow {filler(30, 'x')}"
    fragments = make_snippet(text, terms("boundary flow"), window=6)
    assert "boundary" in marked(fragments)


def test_words_match_by_analyzed_form_and_keep_original_spelling():
    text = "Engineers were Running tests; the runner runs daily."
    fragments = make_snippet(text, terms("run"))
    assert marked(fragments) == ["Running", "runs"]  # "runner" stems to "runner"
    assert snippet_text(fragments) == text


def test_matches_are_centred_in_the_window():
    text = f"{filler(50)} turbulent {filler(50, 'z')}"
    shown = snippet_text(make_snippet(text, terms("turbulent"), window=11))
    before, after = shown.split("turbulent")
    assert len(before.split()) == 6 and len(after.split()) == 6  # 5 words + the ellipsis


def test_fragments_carry_markup_as_text_never_as_html():
    text = "<b>bold</b> claims & <script>alert('wing')</script>"
    fragments = make_snippet(text, terms("wing"))
    assert snippet_text(fragments) == text  # the template escapes; the snippet keeps text
    assert marked(fragments) == ["wing"]


def test_no_match_in_text_falls_back_to_a_matching_description():
    fragments = make_snippet(
        "nothing relevant here", terms("albedo"), description="Albedo is the fraction of light reflected."
    )
    assert marked(fragments) == ["Albedo"]


def test_no_match_anywhere_shows_description_then_start_of_text():
    description = "A page about " + filler(50)
    shown = snippet_text(make_snippet("body text", terms("zebra"), description, window=5))
    assert shown == f"A page about lorem0 lorem1 {ELLIPSIS}"
    shown = snippet_text(make_snippet(f"  Start\n of   {filler(40)}", terms("zebra"), window=4))
    assert shown == f"Start of lorem0 lorem1 {ELLIPSIS}"


def test_empty_inputs_give_no_fragments():
    assert make_snippet("", terms("wing")) == []
    assert make_snippet("wing", set()) == [Fragment("wing", False)]


def test_long_documents_find_the_best_stretch_far_from_the_start():
    text = f"wing {filler(5000)} wing lift drag wing lift {filler(5000, 'b')} lift"
    fragments = make_snippet(text, terms("wing lift drag"), window=10)
    assert marked(fragments) == ["wing", "lift", "drag", "wing", "lift"]
    shown = snippet_text(fragments)
    assert shown.startswith(ELLIPSIS) and shown.endswith(ELLIPSIS)
    assert len(shown.split()) == 12  # ten words and two ellipses


def test_apostrophes_and_case_still_match():
    fragments = make_snippet("The AIRCRAFT's wings (see 'Wing design').", terms("wing aircraft"))
    assert marked(fragments) == ["AIRCRAFT's", "wings", "Wing"]


def test_the_fast_candidate_scan_finds_what_the_regex_found():
    """str.find over the lower-cased text against the look-behind regex (the reference), on
    texts mixing cases, joiners ("don't", "e.g."), digits, underscores and non-Latin words."""
    import random

    from services.search.display.snippets import _matches, _matches_by_regex, _prefix_length
    from services.text.analysis.analyze import analyze

    rng = random.Random(5)
    words = [
        "Wing",
        "wings",
        "rewing",
        "don't",
        "o'wing",
        "e.g.wing",
        "_wing",
        "wing_x",
        "Winglet",
        "flow",
        "FLOWS",
        "reflow",
    ]
    words += ["Ölfluss", "straße", "Flöße", "2wing", "wing2", "wi", "w", "pressure", "İstanbul"]
    terms = frozenset({"wing", "flow", "pressur", "ölfluss"})
    for _ in range(300):
        text = "".join(
            rng.choice(words) + rng.choice([" ", ", ", ". ", "'", "\n", "-", ""]) for _ in range(40)
        )
        prefixes = tuple(sorted({t[: _prefix_length(t)] for t in terms}))
        assert _matches(text, terms) == _matches_by_regex(text, terms, prefixes), text
        # The longer prefixes lose no word the two-letter ones found by its first term (they
        # also caught "wie.g.wing" for "wing", by the "wi" of "wie": luck, not design).
        two_letters = tuple(sorted({t[:2] for t in terms}))
        old = {
            (a, b, found)
            for a, b, found in _matches_by_regex(text, terms, two_letters)
            if set(analyze(text[a:b])[:1]) & found
        }
        assert old <= set(_matches(text, terms)), text


def test_cjk_words_are_marked_inside_unspaced_text():
    """The analyzer indexes CJK text as character bigrams: the snippet marks exactly the
    characters a query word's bigrams cover, as one mark, wherever they sit in a clause."""
    text = "委員会は火曜日に集まり、東京大学の図書館で会議を開いた。"
    assert marked(make_snippet(text, terms("図書館"))) == ["図書館"]
    assert marked(make_snippet(text, terms("東京 会議"))) == ["東京", "会議"]
    assert marked(make_snippet(text, terms("図"))) == ["図"]  # a one-character query
    assert marked(make_snippet(text, terms("大阪"))) == []  # no match: the text's start, unmarked
    assert snippet_text(make_snippet(text, terms("図書館"))).replace(ELLIPSIS, "").strip() in text
    mixed = make_snippet("The Tokyo 東京 wing report", terms("東京 wing"))
    assert marked(mixed) == ["東京", "wing"]


def test_a_cjk_window_is_found_in_a_long_page():
    text = "前書き。" * 200 + "東京大学の図書館で会議を開いた。" + "後書き。" * 200
    fragments = make_snippet(text, terms("図書館 会議"))
    assert marked(fragments) == ["図書館", "会議"]
    assert snippet_text(fragments).startswith(ELLIPSIS)


def test_a_cjk_snippet_is_as_wide_as_an_english_one():
    """A CJK character is a "word" of the window: the window takes three times as many, so a
    snippet shows a clause or two, not ten characters each side of the match."""
    text = "前書きの文章です。" * 30 + "東京大学の図書館で会議を開いた。" + "後書きの文章です。" * 30
    shown = snippet_text(make_snippet(text, terms("図書館")))
    assert 80 <= len(shown.replace(ELLIPSIS, "").strip()) <= 100
    english = snippet_text(make_snippet(f"{filler(100)} wing {filler(100)}", terms("wing")))
    assert len(english.split()) <= 32  # English windows unchanged: 30 words and the ellipses


def test_a_run_without_spaces_is_cut_not_shown_whole():
    key = "9f8e7d6c5b4a" * 25  # 300 characters: a hash or a pasted token
    text = f"The archive key is {key} and the archive opens at nine."
    fragments = make_snippet(text, terms("archive"))
    shown = snippet_text(fragments)
    assert key not in shown and key[:40] + ELLIPSIS in shown
    assert len(shown) < 120 and marked(fragments)[0] == "archive"
