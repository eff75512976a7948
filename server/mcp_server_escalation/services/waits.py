"""A client's wait for a human's answer, run as an MCP task (adapters/mcp/task_waits.py).

The wait is a row of its own, so a client polls it from any connection, and from a server
started since. Its state is the escalation's: working while the escalation is pending and the
caller's wait has not run its length, complete once it has or the escalation is no longer
pending (the adapter then keeps ``get_escalation``'s result with it, once);
cancelled when the client stops waiting, which leaves the escalation as it is, like a wait
that timed out. Only the caller that started a wait reads it (``owner``). Waits are kept for
``WAIT_KEPT_SECONDS`` from their start and then deleted, by age, as new ones start; an
escalation keeps its newest ``WAITS_PER_ESCALATION_MAX`` (a client polls one wait at a time:
one that starts waits in a loop leaves no more rows than that, each at most a result's size).
"""

from __future__ import annotations

import secrets
from datetime import timedelta
from typing import Any

from ..clock import iso
from ..errors import NotFound
from ..models.escalations import Escalation
from ..models.limits import WAITS_PER_ESCALATION_MAX
from ..models.waits import Asking, Wait
from ..store import waits as wait_store
from ..store.sql import Conn
from .escalations import load_escalation
from .runtime import Runtime

WAIT_KEPT_SECONDS = 7 * 24 * 3600  # a week: a human may answer after a weekend
WAIT_ID_BYTES = 24  # the id is the only key to the wait: unguessable


def _cutoff(rt: Runtime) -> str:
    return iso(rt.clock() - timedelta(seconds=WAIT_KEPT_SECONDS))


def _load(conn: Conn, wait_id: str, owner: str, cutoff: str) -> Wait:
    """The wait, or a NotFound that says no more than that to any other caller."""
    wait = wait_store.get(conn, wait_id)
    if wait is None or wait.owner != owner or wait.created_at < cutoff:
        raise NotFound("taskId", wait_id, "the task is unknown, expired, or another caller's")
    return wait


async def start_wait(
    rt: Runtime,
    escalation_id: int,
    owner: str,
    asking: Asking,
    *,
    seconds: float,
    known_revision: int | None = None,
) -> Wait:
    """A new wait on the escalation for ``seconds``, stored before it is returned (a poll
    finds it at once); ``known_revision`` is the one the caller named, read when it ends."""
    started, cutoff = rt.clock(), _cutoff(rt)
    wait = Wait(
        wait_id=secrets.token_urlsafe(WAIT_ID_BYTES),
        escalation_id=escalation_id,
        owner=owner,
        asking=asking,
        status="working",
        result=None,
        created_at=iso(started),
        updated_at=iso(started),
        ends_at=iso(started + timedelta(seconds=seconds)),
        known_revision=known_revision,
    )

    def work(conn: Conn) -> Wait:
        wait_store.forget_before(conn, cutoff)
        load_escalation(conn, escalation_id)
        wait_store.insert(conn, wait)
        wait_store.keep_newest(conn, wait.escalation_id, WAITS_PER_ESCALATION_MAX)
        return _load(conn, wait.wait_id, owner, cutoff)

    return await rt.db.write(work)


def wait_over(rt: Runtime, wait: Wait) -> bool:
    """Has the caller's wait run its length (a wait stored without one never does)?"""
    return wait.ends_at is not None and rt.now() >= wait.ends_at


async def read_wait(rt: Runtime, wait_id: str, owner: str) -> tuple[Wait, Escalation]:
    """The wait and its escalation as they are now."""
    cutoff = _cutoff(rt)

    def read(conn: Conn) -> tuple[Wait, Escalation]:
        wait = _load(conn, wait_id, owner, cutoff)
        return wait, load_escalation(conn, wait.escalation_id)

    return await rt.db.read(read)


async def escalation_of(rt: Runtime, wait_id: str) -> int | None:
    """The escalation a wait waits on, whoever started it (None: no such wait), for the scope
    check, which must not depend on who asks."""
    wait = await rt.db.read(lambda conn: wait_store.get(conn, wait_id))
    return None if wait is None else wait.escalation_id


async def complete_wait(rt: Runtime, wait: Wait, result: dict[str, Any]) -> Wait:
    """The wait ends with ``result`` (a wait cancelled or completed meanwhile keeps its own)."""
    now, cutoff = rt.now(), _cutoff(rt)

    def work(conn: Conn) -> Wait:
        wait_store.complete(conn, wait.wait_id, result, now)
        return _load(conn, wait.wait_id, wait.owner, cutoff)

    return await rt.db.write(work)


async def stop_asking(rt: Runtime, wait: Wait) -> None:
    """The person at the client is not asked again during this wait."""
    now = rt.now()
    await rt.db.write(lambda conn: wait_store.stop_asking(conn, wait.wait_id, now))


async def cancel_wait(rt: Runtime, wait_id: str, owner: str) -> None:
    """The client stops waiting; the escalation stays as it is."""
    now, cutoff = rt.now(), _cutoff(rt)

    def work(conn: Conn) -> None:
        _load(conn, wait_id, owner, cutoff)
        wait_store.cancel(conn, wait_id, now)

    await rt.db.write(work)
