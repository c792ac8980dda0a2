"""A long chain of pages on loopback whose answers wait while a gate is shut: a crawl still
running when a test pauses, blocks or scrapes it (the ``slow_site`` fixture)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from tests.integration.crawler.loopback_http import QuietHandler
from tests.integration.crawler.loopback_http import serve as serve_http

PAGES = 400


@contextmanager
def slow_chain() -> Iterator[tuple[str, threading.Event, list[str]]]:
    """A chain of pages, each linking the next ten; every answer waits while ``gate`` is shut.
    The list holds the paths asked, in order of arrival (before the gate)."""
    gate = threading.Event()
    gate.set()
    asked: list[str] = []

    class Handler(QuietHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            asked.append(self.path)
            gate.wait(timeout=10)
            if self.path == "/robots.txt":
                body = b"User-agent: *\nAllow: /\n"
            else:
                n = int(self.path.strip("/") or 0)
                links = " ".join(f'<a href="/{m}">{m}</a>' for m in range(n + 1, min(n + 11, PAGES)))
                text = f"<p>Page {n} of the long chain of pages about rivers.</p>{links}"
                body = f"<html lang=en><title>Page {n}</title><body>{text}</body></html>".encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    httpd, base = serve_http(Handler)
    try:
        yield base, gate, asked
    finally:
        gate.set()
        httpd.shutdown()
        httpd.server_close()
