"""Language identification: CLD2 on the page's text, the page's own declaration as fallback."""

from __future__ import annotations

import pytest

from services.text.lang import identify, keep_language

TEXTS = {
    "en": "The committee met on Tuesday to discuss the budget for the coming year, and most of "
    "the members agreed that the library should stay open longer in the evenings.",
    "de": "Der Ausschuss traf sich am Dienstag, um über den Haushalt für das kommende Jahr zu "
    "beraten, und die meisten Mitglieder waren sich einig, dass die Bibliothek abends länger "
    "geöffnet bleiben sollte.",
    "fr": "Le comité s'est réuni mardi pour discuter du budget de l'année prochaine, et la "
    "plupart des membres ont convenu que la bibliothèque devrait rester ouverte plus tard le soir.",
    "es": "El comité se reunió el martes para discutir el presupuesto del próximo año, y la "
    "mayoría de los miembros estuvo de acuerdo en que la biblioteca debería abrir hasta más tarde.",
    "ru": "Комитет собрался во вторник, чтобы обсудить бюджет на следующий год, и большинство "
    "членов согласились, что библиотека должна работать дольше по вечерам.",
    "ja": "委員会は火曜日に集まり、来年度の予算について話し合いました。ほとんどの委員は、"
    "図書館の夜間の開館時間を延長すべきだという意見で一致しました。",
}


@pytest.mark.parametrize("code", sorted(TEXTS))
def test_the_text_decides_not_the_declaration(code: str) -> None:
    assert identify(TEXTS[code], hint="en-US" if code != "en" else "de") == code


def test_too_little_text_falls_back_to_the_declared_primary_tag() -> None:
    assert identify("Home | Contact", hint="pt-BR") == "pt"
    assert identify("Home | Contact") == ""


def test_control_characters_and_lone_surrogates_do_not_break_it() -> None:
    dirty = TEXTS["de"].replace(" ", " \x00\x07", 5) + "\ud800"
    assert identify(dirty) == "de"


def test_only_the_first_part_of_a_long_page_is_read() -> None:
    # The cost stays flat per page: a German page with an English appendix is German.
    assert identify(TEXTS["de"] * 8 + TEXTS["en"] * 40) == "de"


def test_keep_language() -> None:
    assert keep_language("de", frozenset())
    assert keep_language("", frozenset({"en"}))  # unknown is kept
    assert not keep_language("de", frozenset({"en"}))
