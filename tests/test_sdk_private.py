"""What we rely on of the ``mcp`` SDK beyond what it publishes: fails when an upgrade moves it.

``adapters/sdk_private.py`` holds the three private attributes we use; ``adapters/mcp/registry.py``
hands the SDK's ``Tool`` a ``FuncMetadata`` of our own, which ``Tool.run`` must call. Each test
drives the real SDK (an in-memory ``Client``), so a changed SDK fails here, by name, rather
than as a stdio server that cannot start or a client that is never told of its escalation.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcp import Client
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import MCPServer
from mcp.server.session import ServerSession
from mcp.types import ToolAnnotations
from pydantic import BaseModel

import mcp_server_escalation
from conftest import make_settings
from mcp_server_escalation.adapters.composition.server import build_server
from mcp_server_escalation.adapters.mcp.registry import ArgumentMetadata, structured_tool
from mcp_server_escalation.adapters.mcp.surfaces import TEMPLATES
from mcp_server_escalation.adapters.sdk_private import connection_of, lowlevel_server


class Echoed(BaseModel):
    """What the probe tool received, as validated."""

    note: str | None
    paths: list[str]


async def echo(call: object, paths: list[str], note: str | None = None) -> Echoed:
    """Echo the arguments as validated."""
    return Echoed(note=note, paths=paths)


def test_the_lowlevel_server_is_the_one_that_serves_the_mcp_server(db_path: str) -> None:
    server = build_server(make_settings(db_path))
    lowlevel = lowlevel_server(server)
    assert isinstance(lowlevel, Server)
    # The public middleware list is the low-level server's own: the same object, not a copy.
    assert lowlevel.middleware is server.middleware
    assert lowlevel.name == server.name
    # What the stdio transport calls, and what client notifications add handlers through.
    assert callable(lowlevel.run)
    assert callable(lowlevel.create_initialization_options)
    assert lowlevel.get_request_handler("tools/call") is not None
    assert lowlevel.get_request_handler("logging/setLevel") is not None  # ours, installed


async def test_requests_of_one_connection_share_it_while_each_has_its_own_session() -> None:
    sessions: list[ServerSession] = []

    async def remember(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method == "tools/call":
            sessions.append(ctx.session)
        return await call_next(ctx)

    server: MCPServer[Any] = MCPServer("probe", tools=[_probe_tool()])
    server.middleware.append(remember)
    async with Client(server, mode="legacy") as client:
        await client.call_tool("echo", {"paths": ["a.py"]})
        await client.call_tool("echo", {"paths": ["b.py"]})
    async with Client(server, mode="legacy") as other:
        await other.call_tool("echo", {"paths": ["c.py"]})
    first, second, third = sessions
    assert connection_of(first) is not first  # the SDK still has a connection behind its sessions
    assert connection_of(first) is connection_of(second)
    assert connection_of(third) is not connection_of(first)


def test_a_session_without_a_connection_stands_for_itself() -> None:
    session = object()
    assert connection_of(session) is session  # type: ignore[arg-type]


async def test_the_sdk_validates_a_call_through_our_argument_metadata() -> None:
    tool = _probe_tool()
    assert isinstance(tool.fn_metadata, ArgumentMetadata)
    async with Client(MCPServer("probe", tools=[tool])) as client:
        result = await client.call_tool("echo", {"paths": '["a.py"]', "note": '{"status": 500}'})
    assert not result.is_error, result.content
    # The SDK called our validate_arguments: the list sent as a JSON string is unpacked, the
    # text that looks like JSON is kept as sent (the SDK's own rule would have parsed it into
    # an object and failed the call).
    assert result.structured_content == {"note": '{"status": 500}', "paths": ["a.py"]}


def _probe_tool() -> Any:
    return structured_tool(
        echo, ToolAnnotations(readOnlyHint=True), bind=lambda _ctx: None, use_published=False
    )


# Private names of the SDK and of CPython, and the one module allowed to read each.
_PRIVATE_READS = {
    "_lowlevel_server": "adapters/sdk_private.py",
    '"_connection"': "adapters/sdk_private.py",
    "mcp.shared._": None,
    "re._parser": None,
    "re._constants": None,
}


def test_private_parts_of_the_sdk_and_cpython_are_read_in_their_one_place_only() -> None:
    package = Path(mcp_server_escalation.__file__).parent
    found = sorted(
        (name, str(path.relative_to(package)))
        for path in package.rglob("*.py")
        for name in _PRIVATE_READS
        if name in path.read_text(encoding="utf-8")
    )
    assert found == sorted((name, place) for name, place in _PRIVATE_READS.items() if place)


async def test_templates_built_once_are_listed_and_read_by_every_server_they_were_added_to(
    tmp_path: Path,
) -> None:
    # Two servers on two stores share the four templates; each lists them and reads its own.
    served = []
    for name in ("one", "two"):
        async with Client(build_server(make_settings(str(tmp_path / f"{name}.db"))), mode="legacy") as client:
            listed = await client.list_resource_templates()
            await client.call_tool("start_task", {"title": f"Task of {name}", "task_id": name})
            read = await client.read_resource(f"task://{name}")
            served.append(({t.uri_template for t in listed.resource_templates}, read.contents[0].text))  # type: ignore[union-attr]
    for (uris, text), name in zip(served, ("one", "two"), strict=True):
        assert uris == set(TEMPLATES)
        assert f'"title":"Task of {name}"' in text
