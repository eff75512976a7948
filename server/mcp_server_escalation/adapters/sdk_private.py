"""The two parts of the ``mcp`` SDK we rely on that it does not publish, each in one function.

Neither has a public equivalent in mcp 2.3, and each is what a behaviour of ours stands on
(``tests/test_sdk_private.py`` fails when an SDK upgrade moves one, before any user sees it):

- the low-level ``Server`` of an ``MCPServer``: serving it on streams of our own (the loop
  transport, and answering every request read before stdin ends) and the handshake-era
  methods the high-level server does not route (``logging/setLevel``,
  ``resources/subscribe``) both need it; the SDK's own transports reach it the same way;
- the connection behind a request's session: one connection, many per-request sessions.
  Without it each request counts as a connection of its own, which only de-duplicates less.

What the SDK publishes but documents as provisional (hand-built ``FuncMetadata``,
middleware) is used where it is needed, not here.
"""

from __future__ import annotations

from typing import Any

from mcp.server.lowlevel import Server
from mcp.server.mcpserver import MCPServer
from mcp.server.session import ServerSession


def lowlevel_server(server: MCPServer[Any]) -> Server[Any]:
    """The low-level ``Server`` that ``server`` wraps (``run_stdio_async`` reads the same)."""
    lowlevel: Server[Any] = server._lowlevel_server
    return lowlevel


def connection_of(session: ServerSession) -> object:
    """The connection a per-request ``session`` belongs to; the session itself if unknown."""
    return getattr(session, "_connection", session)
