"""TCP proxies in front of a real PostgreSQL: one that, once armed, loses the answer to a COMMIT;
one that makes every answer slow (``SlowLink``).

The server receives the COMMIT and applies it; the client gets, instead of its answer,
either nothing (the connection closes: a network cut, a killed proxy) or the "terminating
connection due to administrator command" error a terminated session sends. Both happen
under a loop of ``pg_terminate_backend`` or a fast stop, a few times in thousands of calls;
here each happens when a test asks for it.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
from collections.abc import Iterator
from typing import Literal

Loss = Literal["cut", "terminated"]
_CHUNK = 65536


def _terminated_error() -> bytes:
    """The ErrorResponse a session terminated by ``pg_terminate_backend`` ends with."""
    fields = b"".join(
        code + text + b"\0"
        for code, text in (
            (b"S", b"FATAL"),
            (b"V", b"FATAL"),
            (b"C", b"57P01"),
            (b"M", b"terminating connection due to administrator command"),
        )
    )
    body = fields + b"\0"
    return b"E" + struct.pack("!i", len(body) + 4) + body


class CommitLosingProxy:
    """Listens on 127.0.0.1:``port``, forwards to ``target_port``; ``arm(loss)`` loses the
    answer to the next COMMIT any client sends."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._armed: Loss | None = None
        self._lock = threading.Lock()
        self.lost = 0  # answers lost so far
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def arm(self, loss: Loss) -> None:
        with self._lock:
            self._armed = loss

    def _take(self) -> Loss | None:
        with self._lock:
            loss, self._armed = self._armed, None
            return loss

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.target_port))
            threading.Thread(target=self._pump, args=(client, server), daemon=True).start()

    def _pump(self, client: socket.socket, server: socket.socket) -> None:
        """Both directions of one connection, in this thread and one more."""
        losing = threading.Event()
        loss: list[Loss] = []

        def upstream() -> None:
            with contextlib.suppress(OSError):
                while data := client.recv(_CHUNK):
                    # The statement COMMIT, ended by its NUL (not BEGIN ... READ COMMITTED).
                    if b"COMMIT\0" in data and not losing.is_set():
                        taken = self._take()
                        if taken is not None:
                            loss.append(taken)
                            losing.set()
                    server.sendall(data)
            with contextlib.suppress(OSError):
                server.shutdown(socket.SHUT_WR)

        threading.Thread(target=upstream, daemon=True).start()
        with contextlib.suppress(OSError), client, server:
            while data := server.recv(_CHUNK):
                if losing.is_set():
                    # The server's answer to the COMMIT (it applied it) goes nowhere.
                    self.lost += 1
                    if loss[0] == "terminated":
                        client.sendall(_terminated_error())
                    client.shutdown(socket.SHUT_RDWR)
                    return
                client.sendall(data)

    def close(self) -> None:
        self._closed = True
        self._listener.close()


@contextlib.contextmanager
def commit_losing_proxy(target_port: int) -> Iterator[CommitLosingProxy]:
    proxy = CommitLosingProxy(target_port)
    try:
        yield proxy
    finally:
        proxy.close()


class SlowLink:
    """Listens on 127.0.0.1:``port``, forwards to ``target_port``; every answer of the server
    reaches the client ``delay`` seconds late (0 until a test sets it): a database that
    answers, each time slowly, as over a congested network."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.delay = 0.0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.target_port))
            with self._lock:
                self._open += [client, server]
            threading.Thread(target=self._pump, args=(server, client, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(client, server, False), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, late: bool) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(_CHUNK):
                if late and self.delay:
                    time.sleep(self.delay)
                sink.sendall(data)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        self._listener.close()
        with self._lock:
            for conn in self._open:
                conn.close()


@contextlib.contextmanager
def slow_link(target_port: int) -> Iterator[SlowLink]:
    link = SlowLink(target_port)
    try:
        yield link
    finally:
        link.close()
