"""The fault tests' resetting proxy (tests/faultproxy.py) against a loopback echo server.

The storage fault tests trust the proxy to forward faithfully and to reset with a real
RST exactly when told; these tests hold it to both, without S3 in the way.
"""

from __future__ import annotations

import queue
import socket
import socketserver
import threading
from collections.abc import Iterator

import pytest

from tests.faultproxy import ResettingProxy

TIMEOUT = 10.0  # bounds every blocking socket call: a bug fails a test instead of hanging it


class EchoServer(socketserver.ThreadingTCPServer):
    """Echoes each connection's bytes back; ``received`` gets all a connection sent once it ends."""

    allow_reuse_address = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), EchoHandler)
        self.received: queue.Queue[bytes] = queue.Queue()

    @property
    def address(self) -> tuple[str, int]:
        host, port = self.server_address[:2]
        return str(host), int(port)


class EchoHandler(socketserver.BaseRequestHandler):
    server: EchoServer

    def handle(self) -> None:
        got = bytearray()
        self.request.settimeout(TIMEOUT)
        try:
            while data := self.request.recv(65536):
                got += data
                self.request.sendall(data)
        except OSError:  # the proxy reset or closed its side: record what arrived
            pass
        finally:
            self.server.received.put(bytes(got))


@pytest.fixture
def echo() -> Iterator[EchoServer]:
    server = EchoServer()
    # shutdown() waits for serve_forever's next selector timeout: keep it short.
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), name="echo-server")
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()  # joins the handler threads
        thread.join(TIMEOUT)


@pytest.fixture
def proxy(echo: EchoServer) -> Iterator[ResettingProxy]:
    with ResettingProxy(echo.address) as proxy:
        yield proxy


def connect(proxy: ResettingProxy) -> socket.socket:
    return socket.create_connection(("127.0.0.1", proxy.port), timeout=TIMEOUT)


def round_trip(client: socket.socket, data: bytes) -> bytes:
    client.sendall(data)
    got = bytearray()
    while len(got) < len(data):
        chunk = client.recv(65536)
        if not chunk:
            break
        got += chunk
    return bytes(got)


def assert_reset(client: socket.socket, request: bytes = b"GET / HTTP/1.1\r\n\r\n") -> None:
    """The request goes out whole (it fits the socket buffer); the answer is a RST, not a FIN."""
    client.sendall(request)
    with pytest.raises(ConnectionResetError):
        client.recv(1024)


def test_forwards_bytes_both_ways_and_passes_the_close_on(proxy, echo):
    assert proxy.url == f"http://127.0.0.1:{proxy.port}"
    with connect(proxy) as client:
        assert round_trip(client, b"hello") == b"hello"
        # More than the proxy buffers per direction: it must hold the client back, not drop bytes.
        big = bytes(range(256)) * (3 * 4096)
        sender = threading.Thread(target=client.sendall, args=(big,))
        sender.start()
        got = bytearray()
        while len(got) < len(big):
            chunk = client.recv(65536)
            assert chunk, "the proxy closed the connection mid-stream"
            got += chunk
        sender.join(TIMEOUT)
        assert bytes(got) == big
        client.shutdown(socket.SHUT_WR)  # the echo server sees the end, closes, and so must the proxy
        assert client.recv(1024) == b""
    assert echo.received.get(timeout=TIMEOUT) == b"hello" + big
    assert proxy.resets == 0 and proxy.accepted == 1


def test_reset_for_resets_the_next_connections_then_forwards_again(proxy, echo):
    proxy.reset_for(2)
    for _ in range(2):
        with connect(proxy) as client:
            assert_reset(client)
    assert proxy.resets == 2 and not proxy.resetting
    # The target never saw the reset requests: the connections it had reached it empty.
    assert [echo.received.get(timeout=TIMEOUT) for _ in range(2)] == [b"", b""]
    with connect(proxy) as client:
        assert round_trip(client, b"after") == b"after"
    assert proxy.resets == 2 and proxy.accepted == 3


def test_live_connections_are_reset_on_their_next_bytes_unless_spared(proxy):
    with connect(proxy) as pooled:
        assert round_trip(pooled, b"one") == b"one"
        proxy.start_resetting(live=False)  # only connections made from now on
        assert round_trip(pooled, b"two") == b"two"
        with connect(proxy) as fresh:
            assert_reset(fresh)
        proxy.stop_resetting()
        proxy.start_resetting()  # a keep-alive connection's next request is reset too
        assert_reset(pooled)
        proxy.wait_for_resets(2, timeout=TIMEOUT)
    proxy.stop_resetting()
    with connect(proxy) as client:
        assert round_trip(client, b"three") == b"three"
    assert proxy.resets == 2


def test_after_bytes_lets_the_start_of_the_request_through_before_the_reset(proxy, echo):
    proxy.start_resetting(after_bytes=5)
    with connect(proxy) as client:
        assert_reset(client, b"0123456789")
    assert echo.received.get(timeout=TIMEOUT) == b"01234"  # a request cut short, then a FIN


def test_a_refused_target_is_passed_on_as_a_reset():
    with socket.create_server(("127.0.0.1", 0)) as probe:
        free_port = probe.getsockname()[1]
    with ResettingProxy(("127.0.0.1", free_port)) as proxy:
        # The RST may beat the end of connect() or come to the first read.
        with pytest.raises(ConnectionResetError), connect(proxy) as client:
            client.recv(1024)
        assert proxy.resets == 0  # not a reset the proxy was asked for


def test_close_ends_the_thread_and_the_connections(echo):
    proxy = ResettingProxy(echo.address)
    name = f"ResettingProxy-{proxy.port}->"
    assert any(t.name.startswith(name) for t in threading.enumerate())
    with connect(proxy) as client:
        assert round_trip(client, b"x") == b"x"
        proxy.close()
        assert not any(t.name.startswith(name) for t in threading.enumerate())
        assert client.recv(1024) == b""  # closed with a FIN, not left hanging
    with pytest.raises(ConnectionRefusedError):
        connect(proxy)
    proxy.close()  # a second close is harmless


def test_bad_arguments_are_refused(proxy):
    with pytest.raises(ValueError, match="n_connections"):
        proxy.reset_for(0)
    with pytest.raises(ValueError, match="after_bytes"):
        proxy.start_resetting(after_bytes=-1)
    assert not proxy.resetting
