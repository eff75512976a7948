"""Everything ``serve --transport http`` answers, on one port.

Each path goes to the app that owns it: ``/hooks/...`` to the hook routes (remote agents'
host hooks, ``adapters/http/hooks.py``), the console's paths to the console when it is
mounted, everything else to the SDK's app, which keeps its own bearer-token checks on
``/mcp``. Every app's lifespan runs for the server's lifetime.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

from starlette.applications import Starlette
from starlette.types import ASGIApp, Receive, Scope, Send

from ..console.guard import Guard
from ..console.routes import is_console_path
from ..http.hooks import is_hook_path


class OnePort:
    """One ASGI app: hook paths to the hook routes, the console's to the console, the rest to MCP."""

    def __init__(self, mcp_app: Starlette, hooks: Starlette, console: Guard | None) -> None:
        self.mcp_app = mcp_app
        self.hooks = hooks
        self.console = console
        apps = [mcp_app, hooks, *([console.app] if console is not None else [])]

        @asynccontextmanager
        async def every(_app: Starlette) -> AsyncIterator[None]:
            async with AsyncExitStack() as stack:
                for app in apps:
                    await stack.enter_async_context(app.router.lifespan_context(app))
                yield

        self.lifespans = Starlette(lifespan=every)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Dispatch one connection by its path."""
        if scope["type"] == "lifespan":
            await self.lifespans(scope, receive, send)
        elif scope["type"] == "http" and is_hook_path(scope["path"]):
            await self.hooks(scope, receive, send)
        elif scope["type"] == "http" and self.console is not None and is_console_path(scope["path"]):
            await self.console(scope, receive, send)
        else:
            await self.mcp_app(scope, receive, send)


def one_port(mcp_app: Starlette, hooks: Starlette, console: Guard | None) -> ASGIApp:
    """The MCP app with the hook routes and, when given, the console next to it."""
    return OnePort(mcp_app, hooks, console)
