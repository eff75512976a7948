"""Following escalation changes made by any process (the change feed of migration 4).

Every insert and update of an escalation appends a row to ``escalation_changes`` in the
writer's own transaction. A follower keeps the id of the last change it has seen and reads
what came after it: at once when this process published a change (``Runtime.changed``; a
repeat that only refreshed a trigger is not published, ``firing.publish_fired``), otherwise
every ``poll_seconds``, which is how an answer given in the operator's CLI reaches a
server's connected client, and a server's new escalation reaches ``escalations watch``. A
PostgreSQL store also announces every committed change (``listen_for_changes``): the feeds of every
server wake at once, and polling is what is left when that connection is lost.
A poll is one indexed read of a few rows (tens of microseconds); nothing is written.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import anyio

from ..errors import StoreUnavailable
from ..models.operator import EscalationChange, WatchLine
from ..store import changes as change_store
from ..store import escalation_lists
from ..store import escalations as escalation_store
from ..store.sql import Conn
from .runtime import Runtime

log = logging.getLogger(__name__)

POLL_SECONDS = 0.25
BATCH = 200

ChangeHandler = Callable[[list[EscalationChange]], Awaitable[None]]


class ChangeFeed:
    """A cursor on the change feed that waits for news."""

    def __init__(self, rt: Runtime, *, poll_seconds: float = POLL_SECONDS, after: int | None = None):
        self.rt = rt
        self.poll_seconds = poll_seconds
        self.cursor = after

    async def start(self) -> int:
        """Begin after the newest change (unless a starting point was given); returns the cursor."""
        if self.cursor is None:
            self.cursor = await self.rt.db.read(change_store.latest_change_id)
        return self.cursor

    async def next_changes(self) -> list[EscalationChange]:
        """The changes after the cursor, waiting (poll or wake) until there is at least one."""
        cursor = await self.start()
        while True:
            # Taken before the read: a change committed after it sets this very event.
            changed = self.rt.changed()
            found = await self.rt.db.read(lambda conn: change_store.changes_after(conn, cursor, BATCH))
            if found:
                self.cursor = found[-1].change_id
                return found
            with anyio.move_on_after(self.poll_seconds):
                await changed.wait()

    async def follow(self, handler: ChangeHandler) -> None:
        """Hand every batch of changes to ``handler`` until cancelled.

        The top of a background task: a failing read or handler is logged and the feed
        carries on (the batch is not retried), so no subscriber can stop the server.
        """
        while True:
            try:
                batch = await self.next_changes()
                await handler(batch)
            except StoreUnavailable:
                # The store logs its outage once; the cursor stays, so nothing is missed.
                await anyio.sleep(self.poll_seconds)
            except Exception:
                log.exception("escalation change feed: a batch failed; continuing")
                await anyio.sleep(self.poll_seconds)


async def describe(rt: Runtime, change: EscalationChange) -> WatchLine:
    """The change with the escalation's current summary (what ``watch`` prints)."""

    def read(conn: Conn) -> WatchLine:
        escalation = escalation_store.get(conn, change.escalation_id)
        if escalation is None:  # pragma: no cover (escalations are never deleted)
            raise RuntimeError(f"escalation {change.escalation_id} vanished")
        return WatchLine(
            change_id=change.change_id,
            event=change.event,
            at=change.at,
            escalation=escalation_lists.summary(escalation),
        )

    return await rt.db.read(read)
