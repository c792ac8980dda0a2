"""The service's port is bound before any work; a busy one is refused with a free one named."""

from __future__ import annotations

import re
import socket

import pytest

from services.search.http.listen import PortInUseError, bound_port, listen


@pytest.fixture
def busy_port():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        yield bound_port(taken)


def test_a_busy_port_is_refused_with_the_flag_the_variable_and_a_free_port(busy_port):
    with pytest.raises(PortInUseError) as refused:
        listen("127.0.0.1", busy_port)
    message = str(refused.value)
    assert f"port {busy_port} on 127.0.0.1 is already in use" in message
    assert "--port N or NIMBUS_PORT=N" in message and "\n" not in message
    suggested = int(re.search(r"e\.g\. --port (\d+)", message).group(1))
    with listen("127.0.0.1", suggested) as sock:  # the port it names is free
        assert bound_port(sock) == suggested


def test_a_free_port_is_bound_and_held_for_the_server():
    with listen("127.0.0.1", 0) as sock:
        port = bound_port(sock)
        assert port > 0 and sock.proto == socket.IPPROTO_TCP
        with pytest.raises(PortInUseError):  # held: nobody takes it while the demo crawls
            listen("127.0.0.1", port)
