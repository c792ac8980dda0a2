"""A loopback TCP proxy that resets connections on demand: a real network fault for tests.

A mocked client or a patched socket raises whatever the test told it to; a proxy whose
kernel sends a TCP RST takes the fault through the whole stack the code under test runs
on (urllib3's pool, botocore's retry handler, the code's own error translation), as a
load balancer or a NAT dropping connections would. Put it in front of a loopback server
(moto, a fake site) and point the client at ``proxy.url`` instead of the server.

One background thread serves every connection with a selector (no thread per
connection, no sleeps): ``close()`` wakes it through a socket pair and joins it, so no
thread of the proxy outlives ``close()`` and no socket is left open.
"""

from __future__ import annotations

import contextlib
import errno
import selectors
import socket
import struct
import threading
from dataclasses import dataclass, field
from types import TracebackType

_CHUNK = 64 * 1024
# Bytes held for a side that cannot take them yet: beyond this the proxy stops reading the
# other side, so a fast sender is slowed down by TCP flow control instead of filling memory.
_BUFFER_CAP = 1024 * 1024
# SO_LINGER on with a zero timeout: close() discards unsent data and sends RST, not FIN.
_LINGER_RESET = struct.pack("ii", 1, 0)


@dataclass(eq=False)
class _Pair:
    """One client connection and its connection to the target."""

    client: socket.socket
    upstream: socket.socket
    generation: int | None  # the resetting period it was accepted in (None: accepted while not resetting)
    connected: bool = False
    to_upstream: bytearray = field(default_factory=bytearray)
    to_client: bytearray = field(default_factory=bytearray)
    client_eof: bool = False  # the client sent FIN
    upstream_eof: bool = False  # the target sent FIN
    client_shut: bool = False  # FIN passed on to the client
    upstream_shut: bool = False  # FIN passed on to the target
    # Set once the pair is to be reset: the bytes of the client's request still let through
    # to the target before the RST (0: the RST follows the first bytes read).
    cut_after: int | None = None
    client_closed: bool = False


class ResettingProxy:
    """Forwards TCP between ``127.0.0.1:port`` and ``target``; resets connections when told.

    While resetting, a connection is reset when the client sends bytes on it: the proxy
    reads them, lets ``after_bytes`` of them through to the target (by default none, so the
    target never sees the request) and closes the client's socket with SO_LINGER 0, so the
    client gets a real ``ECONNRESET`` after having sent its request. The target's side is
    closed normally (FIN), as it would see a client vanish mid-request.

    Deciding on the client's bytes rather than at accept time is what makes the fault
    reach pooled clients: urllib3 keeps connections alive, so a put after a successful
    request reuses an established connection, which a proxy that only resets new ones
    would leave working. ``live=False`` restricts the resets to connections accepted while
    resetting, for tests that want exactly that.
    """

    def __init__(self, target: tuple[str, int], *, host: str = "127.0.0.1", port: int = 0) -> None:
        """Start listening on ``host:port`` (port 0: any free port) and serving at once."""
        family, _, _, _, address = socket.getaddrinfo(*target, type=socket.SOCK_STREAM)[0]
        self._target_family = family
        self._target_address = address
        self._listener = socket.create_server((host, port))
        self._listener.setblocking(False)
        self._host, self._port = self._listener.getsockname()[:2]
        self._selector = selectors.DefaultSelector()
        # close() writes a byte to wake the loop from select() at once instead of after a timeout.
        self._wake_recv, self._wake_send = socket.socketpair()
        self._wake_recv.setblocking(False)
        self._selector.register(self._listener, selectors.EVENT_READ, "accept")
        self._selector.register(self._wake_recv, selectors.EVENT_READ, "wake")
        self._masks: dict[socket.socket, int] = {}
        self._pairs: set[_Pair] = set()

        # Shared with the callers' threads; guarded by the condition's lock.
        self._cond = threading.Condition()
        self._resetting = False
        self._live = True
        self._after_bytes = 0
        self._budget: int | None = None  # resets left before resetting stops (None: until told)
        self._generation = 0
        self._resets = 0
        self._accepted = 0

        self._stopping = threading.Event()
        self._closed = False
        self._error: BaseException | None = None
        self._thread = threading.Thread(
            target=self._run, name=f"ResettingProxy-{self._port}->{target[0]}:{target[1]}", daemon=True
        )
        self._thread.start()

    # -- the caller's side ------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The port the proxy listens on."""
        return int(self._port)

    @property
    def url(self) -> str:
        """``http://host:port`` of the proxy, to give a client instead of the target's."""
        return f"http://{self._host}:{self._port}"

    @property
    def resets(self) -> int:
        """Connections reset so far (each a RST the client received)."""
        with self._cond:
            return self._resets

    @property
    def accepted(self) -> int:
        """Connections accepted so far (reset or not): shows how often a client reconnected."""
        with self._cond:
            return self._accepted

    @property
    def resetting(self) -> bool:
        """Whether the next connection to send bytes will be reset."""
        with self._cond:
            return self._resetting

    def start_resetting(self, *, live: bool = True, after_bytes: int = 0) -> None:
        """Reset every connection that sends bytes from now until ``stop_resetting()``.

        ``live=False`` spares connections accepted before this call; ``after_bytes`` lets
        that many bytes of each reset request through to the target first (a request cut
        short, as opposed to one the target never saw).
        """
        self._arm(None, live=live, after_bytes=after_bytes)

    def reset_for(self, n_connections: int, *, live: bool = True, after_bytes: int = 0) -> None:
        """Reset the next ``n_connections`` connections that send bytes, then stop resetting.

        A fault of a known length: a client with enough retries gets through, one with
        fewer gives up, and the test can say which it expects.
        """
        if n_connections < 1:
            raise ValueError(f"n_connections must be at least 1, not {n_connections}")
        self._arm(n_connections, live=live, after_bytes=after_bytes)

    def stop_resetting(self) -> None:
        """Forward every connection again (a reset already decided still happens)."""
        with self._cond:
            self._resetting = False
            self._budget = None

    def wait_for_resets(self, n: int, *, timeout: float = 10.0) -> None:
        """Return once ``n`` connections have been reset; fail after ``timeout`` seconds.

        Waits on the counter's condition, so it returns the moment the reset happens.
        """
        with self._cond:
            if not self._cond.wait_for(lambda: self._resets >= n, timeout):
                raise AssertionError(
                    f"timed out after {timeout:g} s waiting for {n} resets (saw {self._resets})"
                )

    def close(self) -> None:
        """Stop serving: close the listener and every connection, and join the thread.

        Raises if the proxy's thread failed, so a bug in the proxy fails the test that
        used it instead of passing for a network fault.
        """
        if self._closed:
            return
        self._closed = True
        self._stopping.set()
        with contextlib.suppress(OSError):  # the loop has already ended and closed its end
            self._wake_send.send(b"x")
        self._thread.join(timeout=10.0)
        self._wake_send.close()
        if self._thread.is_alive():
            raise RuntimeError(f"{self._thread.name} did not stop within 10 s")
        if self._error is not None:
            raise RuntimeError(f"{self._thread.name} failed") from self._error

    def __enter__(self) -> ResettingProxy:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _arm(self, budget: int | None, *, live: bool, after_bytes: int) -> None:
        if after_bytes < 0:
            raise ValueError(f"after_bytes must not be negative, not {after_bytes}")
        with self._cond:
            self._generation += 1
            self._resetting = True
            self._budget = budget
            self._live = live
            self._after_bytes = after_bytes

    def _decide_reset(self, pair: _Pair) -> int | None:
        """Bytes to let through before resetting ``pair``, or None to forward it."""
        with self._cond:
            if not self._resetting or not (self._live or pair.generation == self._generation):
                return None
            if self._budget is not None:
                self._budget -= 1
                if self._budget == 0:
                    self._resetting = False
                    self._budget = None
            return self._after_bytes

    # -- the loop's side ---------------------------------------------------------------------

    def _run(self) -> None:
        try:
            while not self._stopping.is_set():
                # No timeout needed: close() wakes the selector through the socket pair.
                for key, events in self._selector.select():
                    if self._stopping.is_set():
                        break
                    if key.data == "accept":
                        self._accept()
                    elif key.data == "wake":
                        self._drain_wake()
                    else:
                        pair, side = key.data
                        # An earlier event of this batch may have closed the pair or its client.
                        if pair in self._pairs and not (side == "client" and pair.client_closed):
                            self._serve(pair, side, events)
        except BaseException as exc:  # noqa: BLE001 - handed to close(), which raises it
            self._error = exc
        finally:
            for pair in list(self._pairs):
                self._close_pair(pair, reset_client=False)
            self._selector.close()
            self._listener.close()
            self._wake_recv.close()

    def _drain_wake(self) -> None:
        with contextlib.suppress(BlockingIOError):
            self._wake_recv.recv(_CHUNK)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except ConnectionAbortedError:  # the client gave up while queued: nothing to serve
                continue
            client.setblocking(False)
            upstream = socket.socket(self._target_family, socket.SOCK_STREAM)
            upstream.setblocking(False)
            with self._cond:
                self._accepted += 1
                generation = self._generation if self._resetting else None
            pair = _Pair(client, upstream, generation)
            self._pairs.add(pair)
            # Connect without blocking: the loop serves the other connections meanwhile.
            code = upstream.connect_ex(self._target_address)
            if code not in (0, errno.EINPROGRESS, errno.EAGAIN):
                self._close_pair(pair, reset_client=True)  # the target refused: so does the proxy
                continue
            self._update(pair)

    def _serve(self, pair: _Pair, side: str, events: int) -> None:
        try:
            if side == "client":
                if events & selectors.EVENT_WRITE:
                    self._flush(pair.client, pair.to_client)
                if events & selectors.EVENT_READ:
                    self._read_client(pair)
            else:
                if not pair.connected and events & selectors.EVENT_WRITE:
                    code = pair.upstream.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                    if code:
                        raise OSError(code, f"connecting to {self._target_address}: {errno.errorcode[code]}")
                    pair.connected = True
                if pair.connected and events & selectors.EVENT_WRITE:
                    self._flush(pair.upstream, pair.to_upstream)
                if events & selectors.EVENT_READ:
                    self._read_upstream(pair)
            self._update(pair)
        except OSError:
            # Either peer reset or the target refused: pass the fault on as a reset.
            self._close_pair(pair, reset_client=True)

    def _read_client(self, pair: _Pair) -> None:
        data = pair.client.recv(_CHUNK)
        if not data:
            pair.client_eof = True
            return
        if pair.cut_after is None:
            pair.cut_after = self._decide_reset(pair)
            if pair.cut_after is None:
                pair.to_upstream += data
                return
        # A pair being reset: let the rest of its allowance through, then reset the client.
        passed = data[: pair.cut_after]
        pair.to_upstream += passed
        pair.cut_after -= len(passed)
        if pair.cut_after == 0:
            self._reset_client(pair)

    def _read_upstream(self, pair: _Pair) -> None:
        data = pair.upstream.recv(_CHUNK)
        if not data:
            pair.upstream_eof = True
        elif not pair.client_closed:
            pair.to_client += data

    @staticmethod
    def _flush(sock: socket.socket, buffer: bytearray) -> None:
        try:
            sent = sock.send(buffer)
        except (BlockingIOError, InterruptedError):
            return
        del buffer[:sent]

    def _reset_client(self, pair: _Pair) -> None:
        # Counted before the RST leaves: a client that has seen its reset finds it counted.
        with self._cond:
            self._resets += 1
            self._cond.notify_all()
        pair.client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_RESET)
        self._forget(pair.client)
        pair.client.close()
        pair.client_closed = True
        pair.to_client.clear()

    def _update(self, pair: _Pair) -> None:
        """Pass FINs on, close a finished pair, and select the events each side waits for."""
        if pair.connected and pair.client_eof and not pair.to_upstream and not pair.upstream_shut:
            pair.upstream.shutdown(socket.SHUT_WR)
            pair.upstream_shut = True
        if pair.client_closed:
            # Reset: the target's side only has what was let through left to send.
            if not pair.to_upstream or pair.upstream_eof:
                self._close_pair(pair, reset_client=False)
                return
        elif pair.upstream_eof and not pair.to_client and not pair.client_shut:
            pair.client.shutdown(socket.SHUT_WR)
            pair.client_shut = True
        if pair.client_shut and pair.upstream_shut:
            self._close_pair(pair, reset_client=False)
            return
        if not pair.client_closed:
            mask = 0
            if not pair.client_eof and len(pair.to_upstream) < _BUFFER_CAP:
                mask |= selectors.EVENT_READ
            if pair.to_client:
                mask |= selectors.EVENT_WRITE
            self._select(pair.client, mask, (pair, "client"))
        if not pair.connected:
            mask = selectors.EVENT_WRITE
        else:
            mask = selectors.EVENT_WRITE if pair.to_upstream else 0
            if not pair.upstream_eof and len(pair.to_client) < _BUFFER_CAP:
                mask |= selectors.EVENT_READ
        self._select(pair.upstream, mask, (pair, "upstream"))

    def _select(self, sock: socket.socket, mask: int, data: tuple[_Pair, str]) -> None:
        current = self._masks.get(sock, 0)
        if mask == current:
            return
        if not mask:
            self._forget(sock)
        elif not current:
            self._selector.register(sock, mask, data)
            self._masks[sock] = mask
        else:
            self._selector.modify(sock, mask, data)
            self._masks[sock] = mask

    def _forget(self, sock: socket.socket) -> None:
        if self._masks.pop(sock, 0):
            self._selector.unregister(sock)

    def _close_pair(self, pair: _Pair, *, reset_client: bool) -> None:
        self._pairs.discard(pair)
        if not pair.client_closed:
            if reset_client:
                pair.client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_RESET)
            self._forget(pair.client)
            pair.client.close()
            pair.client_closed = True
        self._forget(pair.upstream)
        pair.upstream.close()
