"""Results in other scripts and with unbreakable text, as a reader sees them in Chromium:
an Arabic or Hebrew title and snippet run right to left, and a 300-character "word"
(a hash, a URL pasted into text) does not push the page wider than a phone's screen."""

from __future__ import annotations

import pytest

from services.demo.sampleweb import Resource, Site
from tests.e2e.crawled_site import crawled_and_served

pytestmark = pytest.mark.browser

ARABIC = (
    "<html lang=ar><head><title>مكتبة زوبروفكا للمخطوطات القديمة</title></head><body><p>"
    "تضم مكتبة zubrowka مجموعة كبيرة من المخطوطات القديمة والكتب النادرة في التاريخ والعلوم "
    "والأدب، وهي مفتوحة للباحثين والطلاب طوال أيام الأسبوع.</p></body></html>"
)
HEBREW = (
    "<html lang=he><head><title>ספריית זוברובקה לכתבי יד עתיקים</title></head><body><p>"
    "בספריית zubrowka אוסף גדול של כתבי יד עתיקים וספרים נדירים בהיסטוריה, במדע ובספרות, "
    "והיא פתוחה לחוקרים ולסטודנטים בכל ימות השבוע.</p></body></html>"
)
LONG_WORD = "x" * 300
ENGLISH = (
    "<html lang=en><head><title>The zubrowka manuscript library</title></head><body><p>The zubrowka "
    f"library keeps old manuscripts; its catalogue key is {LONG_WORD}zubrowka and more text of the "
    "library follows for readers and students every day of the week.</p></body></html>"
)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    site = Site("world")
    html = "text/html; charset=utf-8"
    site.resources["/"] = Resource(
        html, b'<html><a href="/ar">ar</a> <a href="/he">he</a> <a href="/en">en</a></html>'
    )
    for path, page in (("/ar", ARABIC), ("/he", HEBREW), ("/en", ENGLISH)):
        site.resources[path] = Resource(html, page.encode())
    # languages="": every language stored
    with crawled_and_served(site, tmp_path_factory.mktemp("world"), max_pages=10, languages="") as url:
        yield url


def test_right_to_left_results_and_long_words_on_a_phone(world, chromium, artifacts):
    context = chromium.new_context(viewport={"width": 360, "height": 800})
    page = context.new_page()
    try:
        page.goto(world + "/?q=zubrowka")
        hits = page.locator("li.hit")
        assert hits.count() == 3
        direction = "el => getComputedStyle(el).direction"
        for i in range(3):
            hit = hits.nth(i)
            title = hit.locator("h2 a")
            rtl = any("\u0590" <= ch <= "\u08ff" for ch in title.inner_text())  # Hebrew or Arabic
            expected = "rtl" if rtl else "ltr"
            assert title.evaluate(direction) == expected, title.inner_text()
            assert hit.locator("p.snippet").evaluate(direction) == expected
        page.screenshot(path=str(artifacts / "world-results-phone.png"), full_page=True)
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    finally:
        context.close()
