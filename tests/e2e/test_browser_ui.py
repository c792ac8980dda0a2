"""The search UI in a real browser (Debian's Chromium driven by Playwright)."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest
from polling import wait_for

CHROMIUM = Path("/usr/bin/chromium")
pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def server_url(pipeline):
    import uvicorn

    from services.search.app import create_app

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = uvicorn.Config(create_app(pipeline.settings), host="127.0.0.1", port=port, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_for(lambda: server.started, timeout=30, what="uvicorn to start")
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture(scope="module")
def page():
    if not CHROMIUM.exists():
        pytest.fail("Chromium missing: run `make services` (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM),
            args=[
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        page = browser.new_page()
        yield page
        browser.close()


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
