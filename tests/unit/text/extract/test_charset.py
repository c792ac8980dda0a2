"""Charset detection: BOM, header, <meta>, XML declaration, valid UTF-8, then charset-normalizer."""

from __future__ import annotations

import pytest

from services.text.extract.charset import DecodedHtml, decode_body, header_charset
from services.text.extract.html import parse_html

FRENCH = "<html><body><p>Le café est très bon à Paris, où les élèves étudient le soir.</p></body></html>"
RUSSIAN = "<html><body><p>Привет, как дела? Это тестовая страница на русском языке.</p></body></html>"
JAPANESE = "<html><body><p>日本語のテキストです。これはテストページです。</p></body></html>"
GREEK = "<html><body><p>Ελληνικά κείμενα για δοκιμή της ανίχνευσης.</p></body></html>"
# Detection is statistical: a sentence or two is enough for these, but very short
# legacy-encoded text can still be misread (one Greek sentence reads as mac-cyrillic).


def _how(decoded: DecodedHtml) -> tuple[str, str]:
    return decoded.charset, decoded.source


def test_bom_beats_every_label() -> None:
    for bom, codec in ((b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be")):
        decoded = decode_body(bom + FRENCH.encode(codec), "iso-8859-1")
        assert (decoded.text, decoded.charset, decoded.source) == (FRENCH, codec, "bom")


def test_header_then_meta() -> None:
    assert _how(decode_body(RUSSIAN.encode("koi8-r"), "KOI8-R")) == ("koi8-r", "header")
    meta = '<meta http-equiv="Content-Type" content="text/html; charset=windows-1251">' + RUSSIAN
    decoded = decode_body(meta.encode("cp1251"))
    assert (decoded.charset, decoded.source) == ("cp1251", "meta") and "Привет" in decoded.text
    # An unknown header label falls through to the <meta>.
    assert decode_body(meta.encode("cp1251"), "x-no-such-charset").source == "meta"
    # latin-1 labels mean windows-1252, as in browsers: curly quotes survive.
    assert decode_body("“quoted” café".encode("cp1252"), "ISO-8859-1").text == "“quoted” café"


def test_an_empty_charset_parameter_declares_nothing_and_the_meta_decides() -> None:
    """``charset=""`` is no label: the crawler and the cached copy both go on to the <meta>."""
    assert header_charset('text/html; charset=""') is None
    assert header_charset("text/html; charset=''") is None
    assert header_charset("text/html; charset=") is None
    assert header_charset("text/html; charset=; charset=utf-8") == "utf-8"  # skipped, as WHATWG parses
    assert header_charset('text/html; charset=" "') is None
    assert header_charset('text/html; Charset="KOI8-R"') == "KOI8-R"
    meta = '<meta http-equiv="Content-Type" content="text/html; charset=windows-1251">' + RUSSIAN
    decoded = decode_body(meta.encode("cp1251"), header_charset('text/html; charset=""'))
    assert (decoded.charset, decoded.source) == ("cp1251", "meta") and "Привет" in decoded.text


@pytest.mark.parametrize(
    ("codec", "text"),
    [
        ("iso-8859-2", "Zażółć gęślą jaźń, strona"),  # the detector read ISO-8859-10
        ("koi8-r", "Привет мир, это страница о погоде"),  # the detector read Shift_JIS
        ("windows-1251", "Привет мир, это страница"),
    ],
)
def test_an_xhtml_pages_xml_declaration_names_its_encoding(codec, text) -> None:
    page = (
        f'<?xml version="1.0" encoding="{codec}"?>\n<html xmlns="http://www.w3.org/1999/xhtml">'
        f"<head><title>x</title></head><body><p>{text}</p></body></html>"
    ).encode(codec)
    decoded = decode_body(page)
    assert decoded.source == "xml" and text in decoded.text
    # A header that decodes the bytes still comes first (a wrong "utf-8" does not); and
    # "UTF-16" in a declaration read as ASCII is a lie.
    assert decode_body(page, "koi8-u").source == "header"
    assert decode_body(page, "utf-8").source == "xml"
    assert decode_body(b'<?xml version="1.0" encoding="UTF-16"?><p>plain</p>').charset == "utf-8"


@pytest.mark.parametrize(
    ("text", "codec"), [(FRENCH, "cp1252"), (RUSSIAN, "cp1251"), (JAPANESE, "shift_jis"), (GREEK, "cp1253")]
)
def test_undeclared_legacy_charsets_are_detected(text: str, codec: str) -> None:
    decoded = decode_body(text.encode(codec))
    assert decoded.source == "detected" and decoded.text == text


def test_mislabelled_pages_are_read_correctly() -> None:
    # Labelled UTF-8, really windows-1252: the label fails, the detector decides.
    wrong_utf8 = decode_body(FRENCH.encode("cp1252"), "utf-8")
    assert (wrong_utf8.text, wrong_utf8.source) == (FRENCH, "detected")
    # Labelled latin-1 (a common server default), really UTF-8: valid UTF-8 wins.
    wrong_latin = decode_body(RUSSIAN.encode("utf-8"), "iso-8859-1")
    assert (wrong_latin.text, wrong_latin.charset, wrong_latin.source) == (RUSSIAN, "utf-8", "utf-8")
    # Header wrong, <meta> right: the <meta> is tried before guessing.
    meta = '<meta charset="shift_jis">' + JAPANESE
    assert decode_body(meta.encode("shift_jis"), "utf-8").text == meta


def test_plain_ascii_and_utf8_take_the_fast_path() -> None:
    assert _how(decode_body(b"<p>plain</p>")) == ("utf-8", "utf-8")
    assert _how(decode_body(RUSSIAN.encode())) == ("utf-8", "utf-8")
    page = parse_html(FRENCH.encode("cp1252"), "http://a.test/")
    assert "très bon" in page.text and page.charset == "cp1252"


def test_undecodable_noise_never_raises() -> None:
    decoded = decode_body(bytes(range(256)) * 4, "utf-8")
    assert decoded.charset and isinstance(decoded.text, str)


def test_utf8_with_stray_latin1_bytes_keeps_its_utf8() -> None:
    body = "<title>Zürich</title><p>Straße in Zürich, naïve café</p>".encode() + b"<p>caf\xe9 cr\xe8me</p>"
    decoded = decode_body(body)
    assert decoded.charset == "utf-8"
    assert "Straße in Zürich, naïve café" in decoded.text and "café crème" in decoded.text
    assert parse_html(body, "http://a.test/").title == "Zürich"
    labelled = decode_body('<meta charset="iso-8859-1"><p>Zürich</p>'.encode() + b"<p>\xe9t\xe9</p>")
    assert "Zürich" in labelled.text and "été" in labelled.text  # the label loses to real UTF-8


def test_legacy_pages_are_not_taken_for_broken_utf8() -> None:
    legacy = "<p>café crème naïve à Genève, déjà vu</p>".encode("cp1252")
    assert decode_body(legacy).text == "<p>café crème naïve à Genève, déjà vu</p>"
    many = ("<p>" + "é è à ù ç " * 20 + "</p>").encode("cp1252") + "ü".encode()
    assert decode_body(many).charset != "utf-8"  # one valid UTF-8 pair among 100 legacy bytes


WHATWG_CASES = [
    # (label on the page, the text, the encoding its bytes are really in: the label's Windows superset)
    ("shift_jis", "<title>お知らせ</title><p>①会議は②月曜日です。</p>", "cp932"),
    ("gb2312", "<title>新闻</title><p>镕基总理访问了上海。</p>", "gbk"),
    ("euc-kr", "<title>뉴스</title><p>똠방각하 한국어 페이지입니다.</p>", "cp949"),
    ("big5", "<title>新聞</title><p>香港的天氣很好，這是一個中文網頁。</p>", "big5hkscs"),
    ("iso-8859-9", "<title>Haber</title><p>Bugün hava güzel – fiyatı 5 €, “şimdi”.</p>", "cp1254"),
    ("tis-620", "<title>ข่าว</title><p>วันนี้อากาศดีมาก “ยินดีต้อนรับ”</p>", "cp874"),
    ("x-mac-roman", "<title>Café</title><p>Crème brûlée — déjà vu.</p>", "mac-roman"),
]


@pytest.mark.parametrize(("label", "text", "codec"), WHATWG_CASES)
def test_legacy_labels_decode_as_browsers_decode_them(label: str, text: str, codec: str) -> None:
    """The WHATWG Encoding Standard's label table: pages labelled with an old standard are
    written in its Windows superset, and Python's codec of the label's name refuses or drops
    their extra characters."""
    page = f'<meta charset="{label}">{text}'
    for decoded in (decode_body(page.encode(codec)), decode_body(text.encode(codec), label)):
        assert decoded.source in ("meta", "header")
        assert text in decoded.text


def test_a_labelled_thai_page_is_not_taken_for_broken_utf8() -> None:
    """Thai letters in TIS-620 include bytes that form valid UTF-8 pairs by chance: the
    page's own label decides, and unlabelled the detector does, not a "mostly UTF-8" guess."""
    text = "<p>วันนี้อากาศดีมาก นี่คือหน้าเว็บภาษาไทย ยินดีต้อนรับสู่เว็บไซต์ของเรา ข่าวสารประจำวัน</p>"
    labelled = decode_body(f'<meta charset="tis-620">{text}'.encode("cp874"))
    assert (labelled.charset, labelled.source) == ("cp874", "meta") and text in labelled.text
    assert decode_body(text.encode("cp874")).text == text
