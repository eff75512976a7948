"""The operator side of an MCP server, wired in one place for the composition root.

``build_server`` creates one ``OperatorSide`` and gives the ``MCPServer`` its middleware and
subscription bus; the lifespan runs ``side.running(runtime)`` around the session, which
starts the change feed (client notifications) and the notification outbox in the
background and stops them when the session ends.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mcp.server.context import ServerMiddleware
from mcp.server.subscriptions import InMemorySubscriptionBus

from ...prompts import PromptBook
from ...services.background import Background, operator_side
from ...services.runtime import Runtime
from ...settings import Settings
from ..mcp.client_notifications import ConnectedClients
from ..mcp.elicitation import AskInClient


class OperatorSide:
    """Client notifications, elicitation and operator notifiers of one server."""

    def __init__(self, settings: Settings, prompts: PromptBook, *, http: bool) -> None:
        # Our own bus (the SDK's default kind) so that changes noticed in the background,
        # outside any request, can reach 2026-07-28 clients' subscriptions/listen streams.
        self.bus = InMemorySubscriptionBus()
        self.clients = ConnectedClients(prompts, self.bus)
        self.asker = AskInClient(
            prompts, settings.elicitation.mode, http=http, console_url=settings.elicitation.console_url
        )
        self.middleware: list[ServerMiddleware[Any]] = [self.clients.middleware, self.asker]

    @asynccontextmanager
    async def running(self, runtime: Runtime) -> AsyncIterator[Background]:
        """The background work of one session (one process on stdio)."""
        try:
            async with operator_side(runtime, self.clients.handler(runtime)) as background:
                yield background
        finally:
            self.clients.forget(runtime)
