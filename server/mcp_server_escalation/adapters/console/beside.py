"""The console next to ``/mcp`` on one port (``serve --transport http``).

The console's own paths go to the console, everything else to the SDK's app, which keeps its
own bearer-token checks on ``/mcp``. Both apps' lifespans run for the server's lifetime.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.types import ASGIApp, Receive, Scope, Send

from .app import Guard

CONSOLE_PATHS = frozenset({"/", "/login", "/logout", "/events", "/answered", "/stats"})
CONSOLE_PREFIXES = ("/escalations/", "/tasks/", "/static/")


def is_console_path(path: str) -> bool:
    """Is this path one of the console's (never ``/mcp`` or the SDK's other routes)?"""
    return path in CONSOLE_PATHS or path.startswith(CONSOLE_PREFIXES)


class Beside:
    """One ASGI app: the console's paths to the console, the rest to the MCP app."""

    def __init__(self, mcp_app: Starlette, console: Guard) -> None:
        self.mcp_app = mcp_app
        self.console = console
        inner = console.app

        @asynccontextmanager
        async def both(_app: Starlette) -> AsyncIterator[None]:
            async with (
                mcp_app.router.lifespan_context(mcp_app),
                inner.router.lifespan_context(inner),
            ):
                yield

        self.lifespans = Starlette(lifespan=both)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Dispatch one connection by its path."""
        if scope["type"] == "lifespan":
            await self.lifespans(scope, receive, send)
        elif scope["type"] == "http" and is_console_path(scope["path"]):
            await self.console(scope, receive, send)
        else:
            await self.mcp_app(scope, receive, send)


def beside_mcp(mcp_app: Starlette, console: Guard) -> ASGIApp:
    """The MCP app with the console next to it."""
    return Beside(mcp_app, console)
