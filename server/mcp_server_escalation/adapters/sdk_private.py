"""The three parts of the ``mcp`` SDK we rely on that it does not publish, each in one function.

None has a public equivalent in mcp 2.3, and each is what a behaviour or a measured cost of
ours stands on (``tests/test_sdk_private.py`` fails when an SDK upgrade moves one, before any
user sees it):

- the low-level ``Server`` of an ``MCPServer``: serving it on streams of our own (the loop
  transport, and answering every request read before stdin ends) and the handshake-era
  methods the high-level server does not route (``logging/setLevel``,
  ``resources/subscribe``) both need it; the SDK's own transports reach it the same way;
- the connection behind a request's session: one connection, many per-request sessions.
  Without it each request counts as a connection of its own, which only de-duplicates less;
- a resource template built once, added to each server: the SDK adds templates only by
  building them from a function, which derives a pydantic model and a validator each time
  (~40% of building a server, which every in-memory test session does; see
  ``adapters/mcp/surfaces.py``).

What the SDK publishes but documents as provisional (hand-built ``FuncMetadata``,
middleware) is used where it is needed, not here.
"""

from __future__ import annotations

from typing import Any

from mcp.server.lowlevel import Server
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.resources import ResourceTemplate
from mcp.server.session import ServerSession


def lowlevel_server(server: MCPServer[Any]) -> Server[Any]:
    """The low-level ``Server`` that ``server`` wraps (``run_stdio_async`` reads the same)."""
    lowlevel: Server[Any] = server._lowlevel_server
    return lowlevel


def connection_of(session: ServerSession) -> object:
    """The connection a per-request ``session`` belongs to; the session itself if unknown."""
    return getattr(session, "_connection", session)


def add_resource_template(server: MCPServer[Any], template: ResourceTemplate) -> None:
    """Serve ``template`` on ``server``, as ``server.resource(...)`` would after building it."""
    server._resource_manager._templates[template.uri_template] = template
