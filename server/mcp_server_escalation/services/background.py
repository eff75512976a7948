"""The operator side's background work in one process: the change feed and the outbox.

A server runs both for its whole life (started in the lifespan); ``escalations watch`` runs
both while it watches; every other CLI command makes one delivery pass next to its own
work, so an announcement left behind by a killed process goes out with the next command
that opens the store. Nothing here runs inside a tool call: the only link is a listener
that wakes the feed after this process commits an escalation change.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from ..errors import StoreUnavailable
from ..models.operator import EscalationChange
from ..settings import NotifyConfig
from .changes import ChangeFeed, ChangeHandler
from .runtime import Runtime

if TYPE_CHECKING:
    from .notify import Outbox, Outcome

log = logging.getLogger(__name__)

CLI_PASS_SECONDS = 5.0
# How long a CLI command waits for its delivery pass once its own work is done: a webhook
# that answers does so in well under a second; a hanging one must not hold up the operator.
CLI_AFTER_WORK_SECONDS = 0.5
CUT_SHORT = "cut short by a CLI command after {seconds:g} s; a server or `escalations watch` retries it"


@dataclass
class Background:
    """What runs behind one process's requests or commands."""

    feed: ChangeFeed
    outbox: Outbox | None


@asynccontextmanager
async def operator_side(rt: Runtime, on_changes: ChangeHandler | None = None) -> AsyncIterator[Background]:
    """Follow the change feed (calling ``on_changes``) and deliver notifications until exit."""
    outbox = _outbox(rt)
    feed = ChangeFeed(rt)
    await feed.start()
    if outbox is not None:
        log.info("notifiers: %s", ", ".join(n.key for n in outbox.notifiers))
    else:
        log.info("notifiers: none (no [notify] table in the config)")

    async def handle(batch: list[EscalationChange]) -> None:
        if outbox is not None and any(c.event == "created" for c in batch):
            outbox.wake()
        if on_changes is not None:
            await on_changes(batch)

    work: list[Callable[[], Coroutine[Any, Any, object]]] = [
        functools.partial(feed.follow, handle),
        functools.partial(rt.db.listen_for_changes, rt.signal_change),
    ]
    if outbox is not None:
        work.append(outbox.run)
    async with alongside(*work):
        yield Background(feed, outbox)


@asynccontextmanager
async def alongside(*work: Callable[[], Coroutine[Any, Any, object]]) -> AsyncIterator[None]:
    """Run ``work`` in the background while the body runs, and cancel it when the body ends.

    An error of the body comes out as itself: raised inside the task group it would come out
    wrapped in an exception group (callers catch EscalationError and KeyboardInterrupt).
    """
    error: Exception | KeyboardInterrupt | None = None
    async with anyio.create_task_group() as tg:
        for fn in work:
            tg.start_soon(fn)
        try:
            yield
        except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 (re-raised unchanged below)
            error = exc
        tg.cancel_scope.cancel()
    if error is not None:
        raise error


async def deliver_pending(rt: Runtime) -> list[Outcome]:
    """One delivery pass for a short-lived process (a CLI command); [] without notifiers.

    It runs next to the command for at most ``CLI_PASS_SECONDS`` (the command may end it
    sooner), so a hanging webhook cannot make every CLI command slow; an attempt cut short
    is recorded as failed, due again after its retry time (a server or ``watch`` has no
    such limit, and hands an interrupted attempt back at once).
    """
    outbox = _outbox(rt, cut_short=CUT_SHORT.format(seconds=CLI_AFTER_WORK_SECONDS))
    if outbox is None:
        return []
    # The top of a background task next to the command: a failing pass is logged, and the
    # command's own outcome stands.
    try:
        with anyio.move_on_after(min(outbox.lease_seconds, CLI_PASS_SECONDS)):
            return await outbox.deliver_due()
    except StoreUnavailable:
        pass  # the command's own call has said so
    except Exception:
        log.exception("notification outbox: delivery pass failed")
    return []


def has_notifiers(config: NotifyConfig) -> bool:
    """Does the ``[notify]`` table name a command or a webhook?"""
    return bool((config.command or "").strip() or config.webhook_url)


def _outbox(rt: Runtime, cut_short: str | None = None) -> Outbox | None:
    if not has_notifiers(rt.settings.notify):
        return None
    # Loaded only here: a process without notifiers never imports the sending machinery
    # (subprocesses, signals, the outbox), which keeps a plain server's start-up short.
    from .notifiers import configured  # noqa: PLC0415
    from .notify import Outbox  # noqa: PLC0415

    return Outbox(rt, configured(rt.settings.notify), cut_short=cut_short)
