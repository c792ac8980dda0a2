"""The admin dashboard in a real browser: sign in with the token, pause the crawl; and no
state-changing request works without the session and its CSRF token."""

from __future__ import annotations

import time

import pytest

from services.config import Settings
from tests.e2e.serving import serving

TOKEN = "browser-admin-token"
pytestmark = pytest.mark.browser


@pytest.fixture
def admin_url(settings: Settings):
    from services.admin.app import create_app
    from services.crawler.cluster import heartbeat
    from services.storage.sql.engines import make_engine, session_factory
    from services.storage.sql.schema import init_db

    admin = settings.with_overrides(admin_token=TOKEN)
    engine = make_engine(admin.database_url)
    init_db(engine)
    with session_factory(engine).begin() as session:
        now = time.time()
        heartbeat.beat(
            session, heartbeat.Beat("ec2-a/all/7", "crawler", now - 30, now, "running", {"pages": 42})
        )
    with serving(create_app(admin)) as url:
        yield url, session_factory(engine)
    engine.dispose()


def test_sign_in_see_the_nodes_and_pause(chromium, admin_url) -> None:
    from services.crawler.cluster import heartbeat

    url, sessions = admin_url
    page = chromium.new_page()
    response = page.goto(url + "/admin")
    assert response is not None and response.status == 401
    page.fill("input[name=token]", "wrong")
    page.click("button[type=submit]")
    assert "not the admin token" in page.inner_text("main")
    page.fill("input[name=token]", TOKEN)
    page.click("button[type=submit]")
    page.wait_for_selector("table#nodes")
    assert "ec2-a/all/7" in page.inner_text("table#nodes")
    page.click("button[value=pause]")
    page.wait_for_selector("#summary strong")
    assert "paused" in page.inner_text("#summary")
    with sessions() as session:
        assert heartbeat.control(session).paused


def test_block_a_host_and_unblock_it(chromium, admin_url) -> None:
    from services.crawler.cluster import heartbeat

    url, sessions = admin_url
    page = chromium.new_page()
    page.goto(url + "/admin")
    page.fill("input[name=token]", TOKEN)
    page.click("button[type=submit]")
    page.fill("#block-hosts", "https://noisy.test/forum/\nquiet.test")
    page.fill("#block-reason", "its webmaster asked")
    page.click("#block-form button[value=block]")
    page.wait_for_selector("table#blocked >> text=noisy.test")
    assert "its webmaster asked" in page.inner_text("table#blocked")
    with sessions() as session:
        assert heartbeat.control(session).blocked == frozenset({"noisy.test", "quiet.test"})
    page.locator("table#blocked tr", has_text="quiet.test").locator("button[value=unblock]").click()
    page.wait_for_selector("table#blocked >> text=quiet.test", state="detached")
    with sessions() as session:
        assert heartbeat.control(session).blocked == frozenset({"noisy.test"})


def test_no_state_change_without_the_session_and_csrf(chromium, admin_url) -> None:
    from services.crawler.cluster import heartbeat

    url, sessions = admin_url
    stranger = chromium.new_context()  # no cookie: another site's page, or a script
    forms = (
        ("/admin/command", {"action": "stop"}),
        ("/admin/seed", {"urls": "http://x.test/"}),
        ("/admin/block", {"hosts": "x.test"}),
    )
    for path, form in forms:
        response = stranger.request.post(url + path, form=form, max_redirects=0)
        assert response.status == 403, path
    signed = chromium.new_context()
    page = signed.new_page()
    page.goto(url + "/admin")
    page.fill("input[name=token]", TOKEN)
    page.click("button[type=submit]")
    page.wait_for_selector("table#nodes")
    # Signed in, but a request without the form's CSRF token (what a forged form sends) is refused.
    forged = signed.request.post(url + "/admin/command", form={"action": "stop"}, max_redirects=0)
    assert forged.status == 403
    with sessions() as session:
        assert heartbeat.control(session).stop_requested_at == 0.0


def _style(page, selector: str, *properties: str) -> dict[str, str]:
    script = "(el, names) => Object.fromEntries(names.map(n => [n, getComputedStyle(el)[n]]))"
    return page.eval_on_selector(selector, script, list(properties))


def test_the_dashboard_looks_like_the_rest_of_the_site(chromium, admin_url) -> None:
    """Its buttons are the search box's button and its fields the search box's field (the site's
    stylesheet classes, not the browser's defaults); an empty table says so."""
    url, _ = admin_url
    page = chromium.new_page(viewport={"width": 1280, "height": 900})
    page.goto(url + "/")
    site_button = _style(page, "form.search button", "backgroundColor", "color", "fontFamily")
    site_field = _style(page, "form.search input", "borderTopColor", "fontFamily")
    page.goto(url + "/admin")
    assert _style(page, "button[type=submit]", "backgroundColor") == {
        "backgroundColor": site_button["backgroundColor"]
    }
    page.fill("input[name=token]", TOKEN)
    page.click("button[type=submit]")
    page.wait_for_selector("table#nodes")
    for button in ("button[value=pause]", "#block-form button[value=block]", "form.panel button"):
        style = _style(page, button, "backgroundColor", "color", "fontFamily", "borderTopLeftRadius")
        assert {k: style[k] for k in site_button} == site_button, button
        assert style["borderTopLeftRadius"] != "0px", button
    for field in ("#urls", "#block-hosts", "#block-reason"):
        assert _style(page, field, "borderTopColor", "fontFamily") == site_field, field
    assert _style(page, "label[for=urls]", "display")["display"] == "block"  # above its field
    # No URL is waiting: the table says so under its headers, not a bare header row.
    assert page.inner_text("table#hosts tbody").strip() == "None yet: no URL is waiting."
    headers = page.inner_text("table#nodes thead")
    assert "HTTP 4xx" in headers and "failed fetches" in headers
