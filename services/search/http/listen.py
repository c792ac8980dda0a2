"""The service's listening socket, bound before any work: a port already in use is found in
the first second, not after the demo's crawl and index build.

``listen`` binds as uvicorn would (SO_REUSEADDR, an address with a colon is IPv6) and hands
the listening socket over (``uvicorn.Server.run(sockets=[...])``, or the workers' supervisor), so the
port cannot be taken between the check and the serving. The socket is created as TCP
(``IPPROTO_TCP``): asyncio sets TCP_NODELAY only on sockets whose protocol says so
(``serve_command.serve_workers``).
"""

from __future__ import annotations

import errno
import socket

from services.search.errors import SearchError


class PortInUseError(SearchError):
    """The port to serve on is taken (or not ours to take); the message names a free one."""


def listen(host: str, port: int) -> socket.socket:
    """A socket listening on ``host``:``port``, or ``PortInUseError``.

    Listening, not only bound: on Linux another SO_REUSEADDR socket may bind a port that is
    bound but not listened on, and only the second ``listen`` fails. Connections that come
    before the server starts wait in the backlog."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen()
    except OSError as exc:
        sock.close()
        raise PortInUseError(_refusal(host, port, exc)) from None
    sock.set_inheritable(True)  # the workers' supervisor hands it to its child processes
    return sock


def bound_port(sock: socket.socket) -> int:
    """The port ``sock`` is bound to (the one the kernel chose for port 0)."""
    port: int = sock.getsockname()[1]
    return port


def _refusal(host: str, port: int, exc: OSError) -> str:
    if exc.errno == errno.EADDRINUSE:
        why = f"port {port} on {host} is already in use (another nimbus serve or demo?)"
    elif exc.errno == errno.EACCES:
        why = f"port {port} on {host} needs privileges this user lacks"
    else:
        why = f"cannot listen on {host}:{port} ({exc.strerror or exc})"
    return f"{why}: pick another with --port N or NIMBUS_PORT=N{_free_port_hint(host)}"


def _free_port_hint(host: str) -> str:
    """ ", e.g. --port 43121": a port free on ``host`` right now, when the kernel names one."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.bind((host, 0))
            return f", e.g. --port {bound_port(probe)}"
    except OSError:  # the address itself is not ours: no port would do
        return ""
