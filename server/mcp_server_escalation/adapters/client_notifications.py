"""Telling connected MCP clients that one of their escalations changed (SPEC 6).

When an escalation of a task a client works on is created, updated, answered or closed,
by this process or by any other one (the operator's CLI, another server), the client gets
``notifications/resources/updated`` for ``escalation://{id}`` and a log message worded from
prompts/operator.toml. Changes arrive from the store's change feed (services/changes.py),
never from the tool call itself, so the tool call pays nothing for them.

Protocol eras (reference section 6):
- Handshake era (Claude Code, Cursor, the Inspector): the connection's standalone channel
  carries both notifications, unsolicited, as those clients expect. A middleware remembers,
  per connection, the tasks it touched (tool arguments and results, resources it read).
- 2026-07-28: unsolicited notifications are not allowed. The change is published on the
  server's subscription bus instead, and reaches clients that opened a
  ``subscriptions/listen`` stream for the URI (``escalation://{id}``, ``escalation://pending``).

The SDK hands a middleware a per-request ``ServerSession``; the connection behind it has no
public handle in mcp 2.3, so connections are told apart by that session's private
``_connection`` (falling back to the session itself, which only means less de-duplication).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.session import ServerSession
from mcp.server.subscriptions import ResourceUpdated, SubscriptionBus
from mcp.types import LoggingLevel, LoggingMessageNotification, LoggingMessageNotificationParams
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ..errors import NotFound
from ..models.escalations import Escalation
from ..models.operator import EscalationChange
from ..prompts import PromptBook
from ..rules.announce import client_message
from ..services import escalations
from ..services.runtime import Runtime
from .app_context import AppContext

log = logging.getLogger(__name__)

MAX_CONNECTIONS = 256
LOGGER_NAME = "escalation"
_LEVELS: dict[str, LoggingLevel] = {
    "created": "warning",
    "updated": "info",
    "answered": "notice",
    "closed": "info",
}
# Events after which the pending list (escalation://pending) looks different.
_PENDING_LIST_EVENTS = frozenset({"created", "answered", "closed"})


def connection_key(session: ServerSession) -> int:
    """Identity of the connection behind a per-request session (see the module docstring)."""
    return id(getattr(session, "_connection", session))


@dataclass
class Client:
    """One handshake-era connection and what it is interested in."""

    session: ServerSession
    tasks: set[str] = field(default_factory=set)
    escalations: set[int] = field(default_factory=set)

    def wants(self, change: EscalationChange) -> bool:
        """Is this change about a task or escalation this client has worked on?"""
        return change.task_id in self.tasks or change.escalation_id in self.escalations


class ConnectedClients:
    """The handshake-era connections of one server, per open runtime (lifespan)."""

    def __init__(self, prompts: PromptBook, bus: SubscriptionBus) -> None:
        self.prompts = prompts
        self.bus = bus
        self._by_runtime: dict[int, OrderedDict[int, Client]] = {}

    def clients(self, rt: Runtime) -> list[Client]:
        """The connections of this runtime, oldest first."""
        return list(self._by_runtime.get(id(rt), {}).values())

    def forget(self, rt: Runtime) -> None:
        """The runtime's lifespan ended: drop its connections."""
        self._by_runtime.pop(id(rt), None)

    async def middleware(
        self, ctx: ServerRequestContext[AppContext, Any], call_next: CallNext
    ) -> HandlerResult:
        """Remember which tasks a handshake-era connection works on (a few dict operations)."""
        result = await call_next(ctx)
        if (
            ctx.method in ("tools/call", "resources/read")
            and ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS
        ):
            tasks, escalation_ids = _interests(ctx.params or {}, result)
            if tasks or escalation_ids:
                client = self._client(ctx.lifespan_context.runtime, ctx.session)
                client.tasks.update(tasks)
                client.escalations.update(escalation_ids)
        return result

    def _client(self, rt: Runtime, session: ServerSession) -> Client:
        connections = self._by_runtime.setdefault(id(rt), OrderedDict())
        key = connection_key(session)
        client = connections.get(key)
        if client is None:
            client = connections[key] = Client(session)
            while len(connections) > MAX_CONNECTIONS:
                connections.popitem(last=False)
        else:
            client.session = session
            connections.move_to_end(key)
        return client

    def handler(self, rt: Runtime) -> Callable[[list[EscalationChange]], Awaitable[None]]:
        """The change-feed handler for one runtime."""

        async def handle(batch: list[EscalationChange]) -> None:
            await self.notify(rt, batch)

        return handle

    async def notify(self, rt: Runtime, batch: list[EscalationChange]) -> None:
        """Resource-updated notifications and log messages for a batch of changes."""
        loaded: dict[int, Escalation | None] = {}
        for change in batch:
            uri = f"escalation://{change.escalation_id}"
            await self.bus.publish(ResourceUpdated(uri=uri))
            if change.event in _PENDING_LIST_EVENTS:
                await self.bus.publish(ResourceUpdated(uri="escalation://pending"))
            targets = [c for c in self.clients(rt) if c.wants(change)]
            if not targets:
                continue
            if change.escalation_id not in loaded:
                loaded[change.escalation_id] = await _load(rt, change.escalation_id)
            escalation = loaded[change.escalation_id]
            message = client_message(self.prompts, escalation, change.event) if escalation else None
            for client in targets:
                await _send(client.session, uri, change.event, message)


async def _load(rt: Runtime, escalation_id: int) -> Escalation | None:
    try:
        return await escalations.show_escalation(rt, escalation_id)
    except NotFound:  # pragma: no cover (escalations are never deleted)
        return None


async def _send(session: ServerSession, uri: str, event: str, message: str | None) -> None:
    # Best effort, like every server-initiated notification: a client that went away is
    # simply not told. The SDK already drops (and debug-logs) sends on a closed channel.
    try:
        await session.send_resource_updated(uri)
        if message is not None:
            # The typed notification, not send_log_message: that helper is deprecated for the
            # 2026-07-28 era, and only handshake-era sessions ever get here.
            await session.send_notification(
                LoggingMessageNotification(
                    params=LoggingMessageNotificationParams(
                        level=_LEVELS.get(event, "info"), logger=LOGGER_NAME, data=message
                    )
                )
            )
    except (anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
        log.debug("client notification for %s not sent: %s", uri, exc)


def _interests(params: Mapping[str, Any], result: HandlerResult) -> tuple[set[str], set[int]]:
    """Task ids and escalation ids a request names, in its arguments or its result."""
    tasks: set[str] = set()
    escalation_ids: set[int] = set()
    uri = params.get("uri")
    if isinstance(uri, str):
        if uri.startswith("task://"):
            tasks.add(uri.removeprefix("task://").split("/", 1)[0])
        elif uri.removeprefix("escalation://").isdigit():
            escalation_ids.add(int(uri.removeprefix("escalation://")))
    arguments = params.get("arguments")
    if isinstance(arguments, dict) and isinstance(arguments.get("task_id"), str):
        tasks.add(arguments["task_id"])
    structured = result.get("structuredContent") if isinstance(result, dict) else None
    if isinstance(structured, dict):
        for holder in (structured, structured.get("escalation"), structured.get("task")):
            if isinstance(holder, dict) and isinstance(holder.get("task_id"), str):
                tasks.add(holder["task_id"])
    return tasks, escalation_ids
