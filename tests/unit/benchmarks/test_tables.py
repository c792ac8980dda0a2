"""The library benchmarks' tables and word sets (benchmarks/tables.py)."""

from __future__ import annotations

from benchmarks.tables import figure, format_table, jaccard, ratio, words


def test_words_fold_case_and_ligatures_and_drop_punctuation() -> None:
    # "ﬁ" (U+FB01), kept by one PDF library and expanded by another, is "fi" after NFKC.
    assert words("The ﬁrst Flow, the first flow.") == ["the", "first", "flow", "the", "first", "flow"]
    assert words("") == []


def test_jaccard_of_word_sets() -> None:
    assert jaccard({"a", "b"}, {"b", "c"}) == 1 / 3
    assert jaccard({"a"}, {"a"}) == 1.0
    assert jaccard(set(), set()) == 1.0  # two empty texts agree
    assert jaccard({"a"}, set()) == 0.0


def test_ratio_and_figure_precision() -> None:
    assert ratio(621, 22) == "28.2x"
    assert ratio(1, 4) == "0.25x"
    assert ratio(5, 0) == "-"
    assert [figure(v) for v in (1311.4, 32.84, 5.613)] == ["1,311", "32.8", "5.61"]


def test_table_pads_columns_and_right_aligns_figures() -> None:
    lines = format_table(["who", "pages/s", "note"], [["selectolax", "1,311", "fast"], ["bs4", "32.8", ""]])
    assert lines == [
        "| who        | pages/s | note |",
        "|------------|--------:|------|",
        "| selectolax |   1,311 | fast |",
        "| bs4        |    32.8 |      |",
    ]


def test_ratios_p_values_and_counts_are_figures() -> None:
    [_header, rule, _row] = format_table(["a", "b", "c", "d"], [["28.2x", "<0.001", "29/27", "+0.0020"]])
    assert rule == "|------:|-------:|------:|--------:|"
