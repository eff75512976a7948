"""Telling connected MCP clients that one of their escalations changed.

When an escalation is created, updated, answered or closed, by this process or by any other
one (the operator's CLI, another server), clients hear of it: a log message worded from
prompts/operator.toml, and ``notifications/resources/updated`` for ``escalation://{id}``
(and ``escalation://pending`` when the pending list changed). Changes arrive from the
store's change feed (services/changes.py), never from the tool call itself, so the tool call
pays nothing for them.

Protocol eras (reference section 6). The server declares what it sends and serves what it
declares:
- Handshake era (Claude Code, Cursor, the Inspector): ``logging`` is declared and
  ``logging/setLevel`` honoured per connection: the log message goes to the connections that
  worked on the task (a middleware remembers the tasks each one touched: tool arguments and
  results, resources it read), at or above the level each set (every level until it sets
  one). ``resources.subscribe`` is declared: an update goes to the connections subscribed
  (``resources/subscribe``) to that URI, and only to them, as the protocol says; a client
  that never subscribes learns of its escalations from the log message alone.
- 2026-07-28: unsolicited notifications are not allowed. The change is published on the
  server's subscription bus instead, and reaches clients that opened a
  ``subscriptions/listen`` stream for the URI. No log message is sent in this era, so
  ``logging`` is not declared to it.

A connection is not told about a change its own call caused and reports in its result
(the escalation and revision in ``escalation``, ``holding`` or the result itself): it knows
already, and a client that opens a session per call closes it on that result, so a message
written after it broke the client's reader (``BrokenResourceError`` in the client, although
the call was recorded). While a connection's call runs, changes for it wait; when the call
returns, those its result reports are dropped and the rest are written before the result.

The SDK hands a middleware a per-request ``ServerSession``; the connection behind it has no
public handle in mcp 2.3 (``adapters/sdk_private.py``: ``connection_of``).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, get_args

import anyio
from mcp import MCPError
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.session import ServerSession
from mcp.server.subscriptions import ResourceUpdated, SubscriptionBus
from mcp.types import (
    INVALID_PARAMS,
    DiscoverResult,
    EmptyResult,
    LoggingLevel,
    LoggingMessageNotification,
    LoggingMessageNotificationParams,
    SetLevelRequestParams,
    SubscribeRequestParams,
    UnsubscribeRequestParams,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel

from ...errors import NotFound
from ...models.escalations import Escalation
from ...models.operator import EscalationChange
from ...prompts import PromptBook
from ...rules.operators.announce import client_message
from ...services import escalations
from ...services.runtime import Runtime
from ..sdk_private import connection_of, lowlevel_server
from .context import AppContext

log = logging.getLogger(__name__)

MAX_CONNECTIONS = 256
MAX_SUBSCRIPTIONS = 256  # per connection: an escalation id per subscription at most
# Per connection: the latest revision of each escalation its results reported. Forgetting
# one costs a redundant message, never a lost one.
MAX_REPORTED = 256
LOGGER_NAME = "escalation"
PENDING_URI = "escalation://pending"
# RFC 5424 severities in ascending order: the order of the protocol's LoggingLevel literal.
_SEVERITY: tuple[LoggingLevel, ...] = get_args(LoggingLevel)
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
    return id(connection_of(session))


def subscription_problem(uri: str) -> str | None:
    """Why ``uri`` cannot be subscribed to (no update is ever sent for it), or None."""
    if uri == PENDING_URI or (
        uri.startswith("escalation://") and uri.removeprefix("escalation://").isdigit()
    ):
        return None
    return f"uri: {uri!r} never sends updates; subscribe to {PENDING_URI} or escalation://{{escalation_id}}"


@dataclass
class Client:
    """One handshake-era connection and what it is interested in."""

    session: ServerSession
    tasks: set[str] = field(default_factory=set)
    escalations: set[int] = field(default_factory=set)
    subscriptions: set[str] = field(default_factory=set)
    log_level: LoggingLevel | None = None  # None until logging/setLevel: every level
    reported: OrderedDict[int, int] = field(default_factory=OrderedDict)  # escalation -> revision
    calls: int = 0  # tool calls of this connection running now
    held: list[EscalationChange] = field(default_factory=list)  # changes waiting for them

    def wants(self, change: EscalationChange) -> bool:
        """Is this change about a task or escalation this client has worked on?"""
        return change.task_id in self.tasks or change.escalation_id in self.escalations

    def knows(self, change: EscalationChange) -> bool:
        """Did one of this client's own results already report this change?"""
        return self.reported.get(change.escalation_id, 0) >= change.revision

    def report(self, revisions: Mapping[int, int]) -> None:
        """A result of this client's call named these escalations at these revisions."""
        for escalation_id, revision in revisions.items():
            known = self.reported.pop(escalation_id, 0)
            self.reported[escalation_id] = max(known, revision)
        while len(self.reported) > MAX_REPORTED:
            self.reported.popitem(last=False)

    def hears(self, level: LoggingLevel) -> bool:
        """Is ``level`` at or above the level this client asked for?"""
        return self.log_level is None or _SEVERITY.index(level) >= _SEVERITY.index(self.log_level)


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

    def install(self, server: MCPServer[AppContext]) -> None:
        """Serve logging/setLevel and resources/(un)subscribe, which declares both capabilities.

        The SDK has no public hook for these handshake-era methods; its documented way is the
        low-level server's ``add_request_handler``. The 2026-07-28 era never routes them here.
        """
        lowlevel = lowlevel_server(server)
        lowlevel.add_request_handler("logging/setLevel", SetLevelRequestParams, self.set_level)
        lowlevel.add_request_handler("resources/subscribe", SubscribeRequestParams, self.subscribe)
        lowlevel.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, self.unsubscribe)
        discover = lowlevel.get_request_handler("server/discover")
        if discover is not None:
            sdk_discover = discover.handler

            async def without_logging(
                ctx: ServerRequestContext[Any, Any], params: BaseModel
            ) -> BaseModel | dict[str, Any] | None:
                # Only handshake-era connections get log messages (module docstring).
                found = await sdk_discover(ctx, params)
                if not isinstance(found, DiscoverResult):
                    return found
                capabilities = found.capabilities.model_copy(update={"logging": None})
                return found.model_copy(update={"capabilities": capabilities})

            lowlevel.add_request_handler("server/discover", discover.params_type, without_logging)

    async def set_level(
        self, ctx: ServerRequestContext[AppContext, Any], params: SetLevelRequestParams
    ) -> EmptyResult:
        """logging/setLevel: this connection hears log messages at ``params.level`` and above."""
        self._client(ctx.lifespan_context.runtime, ctx.session).log_level = params.level
        return EmptyResult()

    async def subscribe(
        self, ctx: ServerRequestContext[AppContext, Any], params: SubscribeRequestParams
    ) -> EmptyResult:
        """resources/subscribe: updates of ``params.uri`` go to this connection."""
        problem = subscription_problem(params.uri)
        if problem is not None:
            raise MCPError(code=INVALID_PARAMS, message=problem)
        client = self._client(ctx.lifespan_context.runtime, ctx.session)
        if params.uri not in client.subscriptions and len(client.subscriptions) >= MAX_SUBSCRIPTIONS:
            raise MCPError(
                code=INVALID_PARAMS,
                message=f"uri: a connection holds at most {MAX_SUBSCRIPTIONS} subscriptions; "
                "unsubscribe from one first",
            )
        client.subscriptions.add(params.uri)
        return EmptyResult()

    async def unsubscribe(
        self, ctx: ServerRequestContext[AppContext, Any], params: UnsubscribeRequestParams
    ) -> EmptyResult:
        """resources/unsubscribe: no more updates of ``params.uri`` to this connection."""
        self._client(ctx.lifespan_context.runtime, ctx.session).subscriptions.discard(params.uri)
        return EmptyResult()

    async def middleware(
        self, ctx: ServerRequestContext[AppContext, Any], call_next: CallNext
    ) -> HandlerResult:
        """Remember which tasks a handshake-era connection works on (a few dict operations),
        and hold back what its own tool call is about to report (module docstring)."""
        modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        if modern or ctx.method not in ("tools/call", "resources/read"):
            return await call_next(ctx)
        rt = ctx.lifespan_context.runtime
        if ctx.method != "tools/call":
            result = await call_next(ctx)
            self._note_interests(rt, ctx.session, ctx.params or {}, result)
            return result
        client = self._client(rt, ctx.session)
        client.calls += 1
        try:
            result = await call_next(ctx)
        finally:
            client.calls -= 1
        client = self._note_interests(rt, ctx.session, ctx.params or {}, result) or client
        await self._release(rt, client)
        return result

    def _note_interests(
        self, rt: Runtime, session: ServerSession, params: Mapping[str, Any], result: HandlerResult
    ) -> Client | None:
        tasks, escalation_ids, reported = _interests(params, result)
        if not (tasks or escalation_ids or reported):
            return None
        client = self._client(rt, session)
        client.tasks.update(tasks)
        client.escalations.update(escalation_ids)
        client.report(reported)
        return client

    async def _release(self, rt: Runtime, client: Client) -> None:
        """Tell the changes held back during the client's calls, once none is running, except
        those its results reported; written before the result that ends the last call."""
        if client.calls or not client.held:
            return
        held, client.held = client.held, []
        await self._tell(rt, client, [change for change in held if not client.knows(change)], {})

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
        for change in batch:
            for uri in _uris(change):
                await self.bus.publish(ResourceUpdated(uri=uri))
        loaded: dict[int, Escalation | None] = {}
        for client in self.clients(rt):
            news = [change for change in batch if not client.knows(change)]
            if client.calls:  # its call may be about to report them: wait for its result
                client.held.extend(news)
                continue
            await self._tell(rt, client, news, loaded)

    async def _tell(
        self,
        rt: Runtime,
        client: Client,
        changes: list[EscalationChange],
        loaded: dict[int, Escalation | None],
    ) -> None:
        """The notifications ``client`` asked for about ``changes``."""
        for change in changes:
            uris = _uris(change)
            level = _LEVELS.get(change.event, "info")
            updated = [uri for uri in uris if uri in client.subscriptions]
            told = client.wants(change) and client.hears(level)
            if not (updated or told):
                continue
            message = None
            if told:
                if change.escalation_id not in loaded:
                    loaded[change.escalation_id] = await _load(rt, change.escalation_id)
                escalation = loaded[change.escalation_id]
                message = client_message(self.prompts, escalation, change.event) if escalation else None
            await _send(client.session, updated, level, message)


def _uris(change: EscalationChange) -> list[str]:
    """The resources a change updates."""
    uris = [f"escalation://{change.escalation_id}"]
    if change.event in _PENDING_LIST_EVENTS:
        uris.append(PENDING_URI)
    return uris


async def _load(rt: Runtime, escalation_id: int) -> Escalation | None:
    try:
        return await escalations.show_escalation(rt, escalation_id)
    except NotFound:  # pragma: no cover (escalations are never deleted)
        return None


async def _send(session: ServerSession, uris: list[str], level: LoggingLevel, message: str | None) -> None:
    # Best effort, like every server-initiated notification: a client that went away is
    # simply not told. The SDK already drops (and debug-logs) sends on a closed channel.
    try:
        for uri in uris:
            await session.send_resource_updated(uri)
        if message is not None:
            # The typed notification, not send_log_message: that helper is deprecated for the
            # 2026-07-28 era, and only handshake-era sessions ever get here.
            await session.send_notification(
                LoggingMessageNotification(
                    params=LoggingMessageNotificationParams(level=level, logger=LOGGER_NAME, data=message)
                )
            )
    except (anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
        log.debug("client notification for %s not sent: %s", uris, exc)


def _interests(params: Mapping[str, Any], result: HandlerResult) -> tuple[set[str], set[int], dict[int, int]]:
    """Task ids and escalation ids a request names, in its arguments or its result, and the
    revision of each escalation its result reports."""
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
    if not isinstance(structured, dict):
        return tasks, escalation_ids, {}
    for holder in (structured, structured.get("escalation"), structured.get("task")):
        if isinstance(holder, dict) and isinstance(holder.get("task_id"), str):
            tasks.add(holder["task_id"])
    return tasks, escalation_ids, _reported(structured)


def _reported(structured: Mapping[str, Any]) -> dict[int, int]:
    """Escalation id -> revision, of each escalation a tool result names with its revision."""
    reported: dict[int, int] = {}
    for named in (structured, structured.get("escalation"), structured.get("holding")):
        if isinstance(named, dict):
            escalation_id, revision = named.get("escalation_id"), named.get("revision")
            if isinstance(escalation_id, int) and isinstance(revision, int):
                reported[escalation_id] = max(revision, reported.get(escalation_id, 0))
    return reported
