"""A fake Open-Meteo on 127.0.0.1 for the weather answer's tests (integration and browser)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

GOOD = {
    "latitude": 48.86,
    "longitude": 2.34,
    "utc_offset_seconds": 0,
    "timezone": "GMT",
    "current_units": {"time": "iso8601", "temperature_2m": "°C", "weather_code": "wmo code",
                      "wind_speed_10m": "km/h"},
    "current": {"time": "2024-05-01T12:15", "interval": 900, "temperature_2m": 12.3, "weather_code": 61,
                "wind_speed_10m": 10.5},
}  # fmt: skip


class FakeProvider:
    """An Open-Meteo stand-in on 127.0.0.1: ``mode`` is good, garbage, error or slow.

    Every request is recorded (and ``received`` set) before it is answered; a slow answer
    blocks until the test ends (``release``), so nothing here sleeps.
    """

    def __init__(self) -> None:
        self.mode = "good"
        self.requests: list[dict[str, list[str]]] = []
        self.received = threading.Event()
        self.release = threading.Event()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.server.fake = self  # type: ignore[attr-defined]
        # A short poll: shutdown() waits for serve_forever to look up (0.5 s by default).
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def stop(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        fake: FakeProvider = self.server.fake  # type: ignore[attr-defined]
        parts = urlsplit(self.path)
        fake.requests.append({"path": [parts.path], **parse_qs(parts.query)})
        fake.received.set()
        if fake.mode == "slow":
            fake.release.wait(timeout=60)  # until the test is over; then hang up without an answer
            return
        if fake.mode == "error":
            self._send(500, b'{"error": true, "reason": "down for maintenance"}')
        elif fake.mode == "garbage":
            self._send(200, b'{"current": {"temperature_2m": "warm", "weather_code": ')
        else:
            self._send(200, json.dumps(GOOD).encode())

    def _send(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        return  # quiet: the tests read the recorded requests, not a log
