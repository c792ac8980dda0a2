"""Pages the fast parser follows into a useless result are repaired and parsed again."""

from __future__ import annotations

from services.text.extract.html import parse_html, repair_unclosed_title, title_swallowed_page

UNCLOSED = (
    b"<html><head><title>Swept wings\n<meta name=description content='Wing notes'>"
    b"<meta name=robots content=nofollow></head><body><h1>Drag</h1>"
    b"<p>Later text about compressibility.</p><a href='/more'>more</a></body></html>"
)


def test_an_unclosed_title_keeps_its_own_text_and_gives_back_the_page() -> None:
    page = parse_html(UNCLOSED, "http://a.test/dir/")
    assert page.title == "Swept wings"
    assert "Later text about compressibility." in page.text and "Drag" in page.text
    assert page.description == "Wing notes" and page.nofollow and not page.links


def test_links_after_an_unclosed_title_are_found() -> None:
    body = b"<title>Index<body><p>See <a href='next.html'>the next page</a> for lift.</p>"
    page = parse_html(body, "http://a.test/dir/")
    assert page.title == "Index"
    assert page.links == [("http://a.test/dir/next.html", "the next page")]


def test_a_run_on_title_of_plain_text_becomes_body_text() -> None:
    words = "boundary layer transition on a flat plate " * 60
    page = parse_html(f"<title>{words}".encode(), "http://a.test/")
    assert len(page.title) <= 202 and page.title.startswith("boundary layer transition")
    assert page.text == " ".join(words.split())


def test_normal_pages_are_not_touched() -> None:
    body = b"<title>Using the &lt;div&gt; element</title><p>Body text.</p>"
    page = parse_html(body, "http://a.test/")
    assert not title_swallowed_page(page)
    assert (page.title, page.text) == ("Using the <div> element", "Body text.")
    title_only = parse_html(b"<title>Just a title</title>", "http://a.test/")
    assert (title_only.title, title_only.text) == ("Just a title", "")


def test_repair_leaves_pages_without_a_title_alone() -> None:
    html = "<p>no title here</p>"
    assert repair_unclosed_title(html) == html
