"""HTTP connections bounded in number and in time, so slow clients cannot take the port.

uvicorn gives a request no time limit until its headers are complete, and accepts as many
connections as the process has file descriptors: 1,100 connections that never finished
their headers (no token needed) made ``/mcp``, the hook route and the console unreachable
and, once descriptors ran out, logged every failed ``accept``. Here, for every HTTP server
this package runs (``serve --transport http``, ``console``):

- **A request must arrive whole in time.** From a connection's first byte (or from its
  opening, or from the end of the previous response) its request line and headers must
  arrive within ``ConnectionLimits.header_seconds`` and the whole request, body included,
  within ``request_seconds``; otherwise it is answered ``408`` and closed. An idle
  keep-alive connection is closed by uvicorn (5 s).
- **At most ``ConnectionLimits.connections`` connections at once**, well under the
  descriptors the process may open (with room for the connections asyncio accepts in one
  go, ``ACCEPT_BATCH``). A connection beyond the cap takes the place of the oldest one that
  is not in the middle of a request (a slow client still sending its headers, or an idle
  keep-alive connection), which is closed: a client that sends its request at once, as
  every real one does, is still served while slow clients hold the cap. When every
  connection is in the middle of a request, the new one is refused with ``503``
  (``Retry-After``) and closed.
- **One log line per episode**: a warning when the cap is first reached, and one line when
  the connections are back under nine tenths of it, saying how many were closed or refused
  meanwhile; nothing per connection.

The connection's protocol is uvicorn's h11 implementation, subclassed (``guarded``); its
state (``h11``'s ``their_state``) says where the client is in its request.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger(__name__)

# Descriptors kept back from the cap for everything else the process opens: the store and
# its WAL, the relay's socket and its connections, notifier pipes, log files.
DESCRIPTORS_KEPT = 256
CONNECTIONS_MAX = 1000
# The listening socket's backlog, which is also how many connections asyncio accepts in one
# go before any of them reaches ``Guard.admit`` (uvicorn's default, 2,048, opened more
# descriptors at once than a 1,024 limit allows: every failed accept was logged with its
# traceback, 150,000 lines in seconds). A connection closed to make room frees its
# descriptor one turn of the loop later, so two batches are kept free above the cap.
ACCEPT_BATCH = 128


def default_cap() -> int:
    """The connection cap: ``CONNECTIONS_MAX``, or the descriptors the process may open
    beyond those kept back and two accept batches, whichever is smaller (at least 16)."""
    try:
        import resource  # noqa: PLC0415 (POSIX only)
    except ImportError:
        return CONNECTIONS_MAX
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return CONNECTIONS_MAX
    return max(16, min(CONNECTIONS_MAX, soft - DESCRIPTORS_KEPT - 2 * ACCEPT_BATCH))


@dataclass(frozen=True)
class ConnectionLimits:
    """How many connections at once, and how long a request may take to arrive."""

    connections: int = field(default_factory=default_cap)
    header_seconds: float = 10.0
    request_seconds: float = 60.0


# The limits every server built from now on takes (tests set smaller ones).
LIMITS: ConnectionLimits | None = None

REFUSAL = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"retry-after: 5\r\nconnection: close\r\ncontent-length: %d\r\n\r\n%s"
)
REFUSAL_TEXT = b"too many connections; try again in a few seconds\n"
TIMEOUT = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"connection: close\r\ncontent-length: %d\r\n\r\n%s"
)


class Guard:
    """The connections of one server, oldest first, and the state of the current episode."""

    def __init__(self, limits: ConnectionLimits) -> None:
        self.limits = limits
        self.open: dict[GuardedProtocol, None] = {}  # insertion order: oldest first
        self.at_cap = False
        self.closed = 0  # connections closed to make room, this episode
        self.refused = 0  # connections refused, this episode
        self.timed_out = 0  # requests that did not arrive in time, since start

    def admit(self, connection: GuardedProtocol) -> bool:
        """Take ``connection`` in, closing the oldest one between requests when at the cap;
        False when there is no room (every connection is in the middle of a request)."""
        if len(self.open) >= self.limits.connections:
            self._episode_starts()
            idle = next((c for c in self.open if c.between_requests()), None)
            if idle is None:
                self.refused += 1
                return False
            # Out of the count at once: it frees its descriptor a turn of the loop later,
            # and the accepts of this turn must each make room of their own.
            self.open.pop(idle)
            self.closed += 1
            idle.close_for_room()
        self.open[connection] = None
        return True

    def left(self, connection: GuardedProtocol) -> None:
        self.open.pop(connection, None)
        if self.at_cap and len(self.open) < self.limits.connections * 9 // 10:
            log.warning(
                "HTTP: back under the cap of %d connections; meanwhile %d slow or idle "
                "connections were closed to make room and %d refused",
                self.limits.connections,
                self.closed,
                self.refused,
            )
            self.at_cap, self.closed, self.refused = False, 0, 0

    def _episode_starts(self) -> None:
        if not self.at_cap:
            self.at_cap = True
            log.warning(
                "HTTP: %d connections, the cap: new ones take the place of the oldest that are "
                "between requests (slow to send their headers, or idle), or are refused with 503; "
                "one line follows when it is over",
                self.limits.connections,
            )


class GuardedProtocol(H11Protocol):
    """uvicorn's h11 protocol, its connection admitted by a ``Guard`` and its requests timed."""

    guard: Guard  # set on the subclass ``guarded`` makes for each server

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._headers_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if not self.guard.admit(self):
            transport.write(REFUSAL % (len(REFUSAL_TEXT), REFUSAL_TEXT))
            transport.close()
            return
        self._time_the_request()

    def connection_lost(self, exc: Exception | None) -> None:
        self._untimed()
        self.guard.left(self)
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._time_the_request()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._untimed()  # uvicorn's keep-alive timeout runs until the next request begins

    def between_requests(self) -> bool:
        """No request under way: none begun yet (or its headers still coming), or the last one
        answered (an idle keep-alive connection)."""
        if self.transport.is_closing():
            return False
        return self.conn.their_state is h11.IDLE and (self.cycle is None or self.cycle.response_complete)

    def close_for_room(self) -> None:
        self._untimed()
        self.transport.close()

    def _time_the_request(self) -> None:
        """Arm the deadlines of the request under way (or about to begin); disarm the
        headers' once they are in, and both once the request has arrived whole."""
        if self.transport.is_closing():
            return
        state = self.conn.their_state
        if state is h11.IDLE and (self.cycle is None or self.cycle.response_complete):
            if self.cycle is not None and self.timeout_keep_alive_task is not None:
                return  # idle between requests: uvicorn's keep-alive timeout closes it
            if self._headers_deadline is None:
                self._headers_deadline = self.loop.call_later(
                    self.guard.limits.header_seconds, self._too_slow
                )
            if self._deadline is None:
                self._deadline = self.loop.call_later(self.guard.limits.request_seconds, self._too_slow)
            return
        if self._headers_deadline is not None:
            self._headers_deadline.cancel()
            self._headers_deadline = None
        if state is not h11.SEND_BODY:
            self._untimed()  # the request is in (or the connection is done)

    def _untimed(self) -> None:
        for handle in (self._deadline, self._headers_deadline):
            if handle is not None:
                handle.cancel()
        self._deadline = self._headers_deadline = None

    def _too_slow(self) -> None:
        self._untimed()
        if self.transport.is_closing():
            return
        self.guard.timed_out += 1
        text = b"the request did not arrive in time\n"
        if self.cycle is None or self.cycle.response_complete:
            self.transport.write(TIMEOUT % (len(text), text))
        self.transport.close()


def guarded(limits: ConnectionLimits | None = None) -> type[GuardedProtocol]:
    """The protocol class for one server's ``uvicorn.Config(http=...)``: its own guard."""
    guard = Guard(limits or LIMITS or ConnectionLimits())
    return type("GuardedConnection", (GuardedProtocol,), {"guard": guard})


def guarded_options() -> dict[str, Any]:
    """What every HTTP server of ours passes ``uvicorn.Config``: the guarded protocol and
    the accept batch its cap leaves room for."""
    return {"http": guarded(), "backlog": ACCEPT_BATCH}
