"""A hostile web on 127.0.0.1: one raw-socket HTTP server that misbehaves on purpose.

http.server and aiohttp.web both protect their clients from the worst
behaviour (they fix Content-Length, finish chunks, buffer writes), so this
server speaks HTTP/1.1 by hand on asyncio streams: every response is bytes
the test chose, written when the test chose. It runs its own event loop in a
thread, so a test can call the (blocking) crawler while it serves, and it
logs every request as ``(method, path)``.

Every handler ends by itself: drips are bounded in count, and a client that
hangs up ends its handler at the next write.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

Handler = Callable[["Request", asyncio.StreamWriter], Awaitable[None]]


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str] = field(default_factory=dict)


def head(status: int, headers: dict[str, str]) -> bytes:
    """A status line and headers (``Connection: close`` added): the bytes before a body."""
    lines = [f"HTTP/1.1 {status} X"] + [f"{k}: {v}" for k, v in headers.items()] + ["Connection: close"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def page(
    body: bytes | str,
    ctype: str | None = "text/html; charset=utf-8",
    status: int = 200,
    headers: dict[str, str] | None = None,
) -> Handler:
    """An honest response (HEAD gets the same headers, no body). ``ctype=None`` sends no Content-Type."""
    data = body.encode() if isinstance(body, str) else body
    extra = dict(headers or {})
    if ctype is not None:
        extra["Content-Type"] = ctype
    extra["Content-Length"] = str(len(data))

    async def handle(req: Request, w: asyncio.StreamWriter) -> None:
        w.write(head(status, extra) + (b"" if req.method == "HEAD" else data))

    return handle


def html(title: str, body: str = "", links: list[str] = ()) -> Handler:  # type: ignore[assignment]
    """A well-formed English page with enough text to be identified as English."""
    anchors = " ".join(f'<a href="{href}">link to {href}</a>' for href in links)
    text = (
        f"<p>{body or title} This page is part of a small test web about gardens, rivers and the "
        f"weather in the north of the country.</p>"
    )
    return page(
        f"<!doctype html><html lang=en><head><title>{title}</title></head><body>{text}{anchors}</body></html>"
    )


def redirect(location: str, status: int = 302) -> Handler:
    return page(b"", ctype="text/html", status=status, headers={"Location": location})


def raw(data: bytes) -> Handler:
    """Exactly these bytes, whatever the method, then close."""

    async def handle(req: Request, w: asyncio.StreamWriter) -> None:
        w.write(data)

    return handle


def slow_drip(interval: float = 0.1, max_bytes: int = 2000) -> Handler:
    """Headers at once, then one byte every ``interval`` seconds: no read timeout ever fires."""

    async def handle(req: Request, w: asyncio.StreamWriter) -> None:
        w.write(head(200, {"Content-Type": "text/html", "Content-Length": str(max_bytes)}))
        if req.method == "HEAD":
            return
        w.write(b"<html><body><p>")
        for _ in range(max_bytes - 15):
            await w.drain()
            await asyncio.sleep(interval)
            w.write(b"x")

    return handle


def close_mid_body(declared: int = 5000, sent: int = 1000, chunked: bool = False) -> Handler:
    """Promise ``declared`` bytes (or a chunk of that size), send ``sent``, hang up."""

    async def handle(req: Request, w: asyncio.StreamWriter) -> None:
        if chunked:
            w.write(head(200, {"Content-Type": "text/html", "Transfer-Encoding": "chunked"}))
            if req.method != "HEAD":
                w.write(f"{declared:x}\r\n".encode() + b"<html><body>" + b"y" * sent)
        else:
            w.write(head(200, {"Content-Type": "text/html", "Content-Length": str(declared)}))
            if req.method != "HEAD":
                w.write(b"<html><body>" + b"y" * sent)

    return handle


def gzip_bomb(decoded_bytes: int) -> Handler:
    """A gzip body of ``decoded_bytes`` bytes of HTML-ish zeros (about 1000:1), no length to warn."""
    bomb = gzip.compress(b"<html><body>" + b"0" * decoded_bytes, compresslevel=9)

    async def handle(req: Request, w: asyncio.StreamWriter) -> None:
        w.write(head(200, {"Content-Type": "text/html", "Content-Encoding": "gzip"}))
        if req.method != "HEAD":
            w.write(bomb)

    return handle


def head_refused(inner: Handler, status: int = 405) -> Handler:
    """``inner`` for GET; ``status`` (405 or 501) for HEAD, as some servers do."""

    async def handle(req: Request, w: asyncio.StreamWriter) -> None:
        if req.method == "HEAD":
            w.write(head(status, {"Content-Length": "0"}))
        else:
            await inner(req, w)

    return handle


class BadWeb:
    """Routes by exact path, then by the longest key ending in ``*`` that prefixes the path
    (``"/calendar/*"``); unknown paths are 404. Use as a context manager."""

    def __init__(self, routes: dict[str, Handler] | None = None) -> None:
        self.routes: dict[str, Handler] = dict(routes or {})
        self.requests: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.base_events.Server | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self.port = 0

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str) -> str:
        return self.base + path

    def paths(self, method: str = "GET") -> list[str]:
        with self._lock:
            return [p for m, p in self.requests if m == method]

    def __enter__(self) -> BadWeb:
        self._thread.start()
        started = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._serve, "127.0.0.1", 0), self._loop
        )
        self._server = started.result(timeout=10)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def __exit__(self, *exc: object) -> None:
        async def stop() -> None:
            assert self._server is not None
            self._server.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    def _prefix_route(self, path: str) -> Handler:
        prefixes = [k for k in self.routes if k.endswith("*") and path.startswith(k[:-1])]
        if prefixes:
            return self.routes[max(prefixes, key=len)]
        return page(b"<h1>not found</h1>", status=404)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await _read_request(reader)
            if request is None:
                return
            with self._lock:
                self.requests.append((request.method, request.path))
            handler = self.routes.get(request.path) or self._prefix_route(request.path)
            await handler(request, writer)
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass  # the client hung up: exactly what some tests provoke
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError, asyncio.CancelledError):
                await writer.wait_closed()


async def _read_request(reader: asyncio.StreamReader) -> Request | None:
    raw_head = await reader.readuntil(b"\r\n\r\n")
    lines = raw_head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3:
        return None
    headers = {}
    for line in lines[1:]:
        key, sep, value = line.partition(":")
        if sep:
            headers[key.strip().lower()] = value.strip()
    return Request(parts[0], parts[1], headers)
