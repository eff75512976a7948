"""The console's live streams (``/events``): one reader of the change feed, fanned out.

Each open page follows the change feed to refresh itself. A reader per stream polled the
store four times a second each (a thousand streams cost more than half a core), so the
process keeps one reader and hands each batch to every stream. A session holds at most
``STREAMS_PER_SESSION`` streams (a few tabs; a loop of ``EventSource`` calls is refused), and a
stream lives no longer than its session: logging out closes its streams at once, and a
session dropped otherwise (expired, or the oldest of too many) is noticed at the stream's
next keep-alive, within ``KEEPALIVE_SECONDS``.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ...models.operator import EscalationChange
from ...rules.bounds.token_scope import Scope
from ...services.changes import ChangeFeed
from ...services.runtime import Runtime
from ...services.scope import projects_of

STREAMS_PER_SESSION = 8
# Between two messages a stream sends a comment line: proxies keep it open, and the
# session is looked at again.
KEEPALIVE_SECONDS = 5.0
# Batches a stream may have waiting: a page refreshes whole, so a slow one loses nothing by
# skipping the ones beyond.
WAITING_BATCHES = 4

Ids = list[int]


class LiveStreams:
    """Every open ``/events`` stream of this process, by session."""

    def __init__(self, is_live: Callable[[str], bool], scope_of: Callable[[str], Scope | None]) -> None:
        self._is_live = is_live
        self._scope_of = scope_of  # a session's token scope: its streams hear of its tasks only
        self._streams: dict[str, dict[int, MemoryObjectSendStream[Ids]]] = {}

    def count(self, session_id: str) -> int:
        """The streams ``session_id`` holds open."""
        return len(self._streams.get(session_id, {}))

    def open(self, session_id: str) -> MemoryObjectReceiveStream[Ids] | None:
        """A new stream for the session, or None when it holds its share already."""
        held = self._streams.setdefault(session_id, {})
        if len(held) >= STREAMS_PER_SESSION:
            return None
        send, receive = anyio.create_memory_object_stream[Ids](WAITING_BATCHES)
        held[id(receive)] = send
        return receive

    def end_session(self, session_id: str) -> None:
        """Close every stream of the session (its pages stop hearing of changes)."""
        for send in self._streams.pop(session_id, {}).values():
            send.close()

    def _close(self, session_id: str, receive: MemoryObjectReceiveStream[Ids]) -> None:
        held = self._streams.get(session_id, {})
        send = held.pop(id(receive), None)
        if send is not None:
            send.close()
        if not held:
            self._streams.pop(session_id, None)
        receive.close()

    async def publish(self, rt: Runtime, batch: list[EscalationChange]) -> None:
        """Hand one batch of the change feed to every stream (never waiting on a slow one); a
        scoped session's streams get only the changes of its scope's tasks."""
        ids = sorted({change.escalation_id for change in batch})
        scopes = {session_id: self._scope_of(session_id) for session_id in self._streams}
        projects = {}
        if any(scope is not None for scope in scopes.values()):
            projects = await projects_of(rt, {change.task_id for change in batch})
        for session_id, held in list(self._streams.items()):
            scope = scopes.get(session_id)
            seen = ids if scope is None else _within(scope, batch, projects)
            for send in list(held.values()):
                # Full: a refresh is on its way already. Closed: its reader is leaving.
                with contextlib.suppress(anyio.WouldBlock, anyio.ClosedResourceError):
                    send.send_nowait(seen)

    async def follow(self, rt: Runtime) -> None:
        """The one reader of the change feed, until cancelled."""
        await ChangeFeed(rt).follow(lambda batch: self.publish(rt, batch))

    async def messages(self, session_id: str, receive: MemoryObjectReceiveStream[Ids]) -> AsyncIterator[Ids]:
        """The batches for one stream, and an empty one at each keep-alive; ends with the session."""
        try:
            while self._is_live(session_id):
                ids: Ids = []
                with anyio.move_on_after(KEEPALIVE_SECONDS):
                    ids = await receive.receive()
                yield ids
        except anyio.EndOfStream:
            return
        finally:
            self._close(session_id, receive)


def _within(scope: Scope, batch: list[EscalationChange], projects: dict[str, str | None]) -> Ids:
    """The escalations of ``batch`` whose task ``scope`` admits (``Scope.admits``, as every
    scoped list): an empty list is a keep-alive, which tells a page nothing."""
    return sorted({c.escalation_id for c in batch if scope.admits(c.task_id, projects.get(c.task_id))})
