"""The search UI in a real browser (Debian's Chromium driven by Playwright)."""

from __future__ import annotations

import pytest

from tests.e2e.serving import serving
from tests.polling import wait_for

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def server_url(pipeline):
    from services.search.http.app import create_app

    with serving(create_app(pipeline.settings)) as url:
        yield url


@pytest.fixture(scope="module")
def page(chromium):
    return chromium.new_page()


@pytest.fixture
def browser_page(chromium):
    """A page of its own (its routes and listeners end with the test)."""
    context = chromium.new_context()
    yield context.new_page()
    context.close()


def test_query_shows_ranked_results_with_snippets(page, server_url, tmp_path):
    page.goto(server_url + "/")
    page.fill("input[name=q]", "anarchism")
    page.keyboard.press("Enter")
    page.wait_for_url("**q=anarchism**")
    first = page.locator("li.hit").first
    assert "Anarchism" in first.locator("h2 a").inner_text()
    assert first.locator("mark").count() >= 1  # highlighted query word in the snippet
    page.screenshot(path=str(tmp_path / "results.png"))


def test_cached_link_opens_the_stored_copy(page, server_url):
    page.goto(server_url + "/?q=anarchism")
    cached = page.locator("li.hit").first.locator("a", has_text="cached")
    href = cached.get_attribute("href")
    response = page.goto(server_url + href if href.startswith("/") else href)
    assert response.status == 200
    assert "Anarchism" in page.title()


def _offline(page, server_url):
    """Every request that is not to our server fails: what a private deployment sees."""
    outside: list[str] = []

    def route(r):
        if r.request.url.startswith(server_url):
            r.continue_()
        else:
            outside.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    return outside


def _errors(page) -> list[str]:
    """Console errors (CSP violations are reported there) and uncaught script errors."""
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    return errors


def test_api_docs_render_offline_under_the_site_policy(browser_page, server_url, artifacts):
    outside = _offline(browser_page, server_url)
    errors = _errors(browser_page)
    browser_page.goto(server_url + "/docs")
    browser_page.locator(".opblock-summary-path", has_text="/api/search").first.wait_for(timeout=20_000)
    browser_page.screenshot(path=str(artifacts / "docs.png"), full_page=True)
    browser_page.goto(server_url + "/redoc")
    browser_page.get_by_text("/api/suggest").first.wait_for(timeout=20_000)
    browser_page.screenshot(path=str(artifacts / "redoc.png"))
    # The policy may block Redoc's "powered by" logo from its CDN (that is the point of it);
    # no script or style of the viewers may be refused.
    refused = [e for e in errors if "script-src" in e or "style-src" in e or "worker-src" in e]
    assert outside == [] and refused == [], errors


def test_did_you_mean_operators_and_completions(browser_page, server_url, artifacts):
    errors = _errors(browser_page)
    browser_page.goto(server_url + "/?q=anarchsm&nfpr=1")  # as typed: the correction is offered
    link = browser_page.locator(".did-you-mean a")
    assert link.inner_text() == "anarchism"
    link.click()
    browser_page.wait_for_url("**q=anarchism**")
    assert "Anarchism" in browser_page.locator("li.hit h2 a").first.inner_text()
    # An operator narrows the same results to one host.
    host = server_url.split("//")[1].split(":")[0]
    browser_page.goto(server_url + f"/?q=anarchism+-site:{host}")
    assert (
        browser_page.locator("li.hit").count() == 0
        or host not in browser_page.locator("li.hit .url").first.inner_text()
    )
    # Typing fills the completions; the keyboard submits the box as ever.
    browser_page.goto(server_url + "/")
    browser_page.locator("#q").press_sequentially("anarc", delay=30)
    options = browser_page.locator("#suggestions option")
    wait_for(lambda: options.count() > 0, timeout=10, what="completions in the datalist")
    assert all(v.startswith("anarc") for v in options.evaluate_all("os => os.map(o => o.value)"))
    browser_page.keyboard.press("Enter")
    browser_page.wait_for_url("**q=anarc**")
    browser_page.screenshot(path=str(artifacts / "completions.png"))
    assert errors == [], errors


def test_a_phone_sized_screen_and_keyboard_only_use(chromium, server_url, artifacts):
    context = chromium.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page = context.new_page()
    try:
        page.goto(server_url + "/?q=anarchism")
        # Nothing wider than the screen: no sideways scrolling on a phone.
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
        assert page.locator("#q").is_visible() and page.locator("li.hit").first.is_visible()
        page.screenshot(path=str(artifacts / "phone-results.png"), full_page=True)
        # Keyboard only: the skip link comes first, then the search box, then the results.
        page.goto(server_url + "/?q=anarchism")
        focused = "(e => e.className || e.id || e.tagName)(document.activeElement)"
        # The search box takes the focus on arrival (autofocus runs at the next frame, after load).
        page.wait_for_function("document.activeElement && document.activeElement.id === 'q'", timeout=10_000)
        before = []
        for _ in range(2):  # backwards from the box: the home link, then the skip link
            page.keyboard.press("Shift+Tab")
            before.append(page.evaluate(focused))
        assert before == ["brand", "skip"], before
        order = ["skip"]
        for _ in range(12):
            page.keyboard.press("Tab")
            order.append(page.evaluate(focused))
        assert order[:4] == ["skip", "brand", "q", "BUTTON"] and order.index("q") < order.index("cached"), (
            order
        )
        for _ in range(40):  # on to the first result's "page info" link, by keyboard alone
            if page.evaluate("document.activeElement.className") == "page-info":
                break
            page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.className") == "page-info"
        page.keyboard.press("Enter")
        page.wait_for_url("**/page/**")
        assert page.locator("table.scores").is_visible()  # the score breakdown for the query
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
        page.screenshot(path=str(artifacts / "phone-page-info.png"), full_page=True)
    finally:
        context.close()


def test_results_paginate(browser_page, server_url):
    browser_page.goto(server_url + "/?q=the+anarchism+of+history")
    first = browser_page.locator("li.hit h2 a").first.inner_text()
    browser_page.locator("nav.pages a[rel=next]").click()
    browser_page.wait_for_url("**page=2**")
    assert browser_page.locator("li.hit").count() > 0
    assert browser_page.locator("li.hit h2 a").first.inner_text() != first
    assert browser_page.locator("nav.pages [aria-current=page]").inner_text() == "2"


def test_the_weather_box_with_the_provider_and_without_it(pipeline, browser_page, artifacts):
    from services.search.http.app import create_app
    from tests.fake_weather import FakeProvider

    fake = FakeProvider()
    fake.thread.start()
    try:
        app = create_app(pipeline.settings.with_overrides(weather_url=fake.url, result_cache_size=0))
        with serving(app) as url:
            wait_for(lambda: app.state.places.ready, timeout=60, what="the gazetteer to load")
            browser_page.goto(url + "/?q=weather+in+paris")
            box = browser_page.get_by_role("region", name="Weather")
            assert "12" in box.locator(".answer-temperature").inner_text()
            assert "Paris" in box.inner_text()
            browser_page.screenshot(path=str(artifacts / "weather.png"))
            fake.mode = "error"
            browser_page.goto(url + "/?q=lyon")
            assert browser_page.get_by_role("region", name="Weather").count() == 0
            assert browser_page.locator("footer.site").is_visible()  # the page itself is whole
    finally:
        fake.stop()


def test_the_pages_pass_axe_cores_accessibility_rules(browser_page, server_url, pipeline):
    """axe-core (the rules of Deque's accessibility checker) on each kind of page: no moderate,
    serious or critical violation (missing labels, names, contrast, landmarks, ARIA misuse)."""
    from axe_playwright_python.sync_playwright import Axe

    axe = Axe()
    pages = ["/", "/?q=anarchism", "/?q=qqqzzz", "/help", "/page/0?q=anarchism", "/cached/0/view"]
    pages.append("/no/such/page")
    found = {}
    for path in pages:
        browser_page.goto(server_url + path)
        violations = axe.run(browser_page).response["violations"]
        bad = [
            f"{v['id']} ({v['impact']}): {v['help']}"
            for v in violations
            if v["impact"] in ("serious", "critical")
        ]
        if bad:
            found[path] = bad
    assert found == {}, found
