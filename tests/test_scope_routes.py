"""Every route the server serves passes the one scope check (docs/security.md, "Every route").

Over HTTP, with the installed application in a thread: a person's token scoped to tasks
starting ``a-`` reaches no task ``b-1`` by any JSON-RPC method (the tasks extension and the
in-client answer included), and the routes the server serves are exactly those the security
page lists, so a new route cannot be added without saying which check it passes.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, MCPError, types
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from conftest import Agent, make_settings
from http_support import http_in_thread, token_digest
from mcp_server_escalation.adapters.composition.server import build_server
from mcp_server_escalation.adapters.http.auth import StaticTokenVerifier, load_tokens
from mcp_server_escalation.adapters.http.hooks import build_hook_app
from mcp_server_escalation.adapters.http.serving import Listen, transport_security
from mcp_server_escalation.adapters.sdk_private import lowlevel_server
from mcp_server_escalation.cli.serve import console_beside_mcp
from task_client import CreatedTask, TasksClient, call_as_task, cancel_task, get_task, update_task
from test_elicitation_modern import GUIDANCE, Human
from test_http_tokens_file import team_env

DOCS = Path(__file__).resolve().parents[1] / "docs" / "security.md"
OWNER = "owner-" + "5" * 40  # an agent's token without a scope
WIDE = "ag-a-wide-" + "6" * 40  # ag-a's first token, before the scope was set
NARROW = "ag-a-" + "7" * 40  # ag-a's token scoped to tasks starting a-

TEAM = f"""
[[tokens]]
name = "owner"
role = "agent"
sha256 = "{token_digest(OWNER)}"

[[tokens]]
name = "ag-a"
role = "agent"
sha256 = "{token_digest(WIDE)}"

[[tokens]]
name = "ag-a"
role = "agent"
sha256 = "{token_digest(NARROW)}"
task_prefixes = ["a-"]
"""
OPERATOR = "lead-" + "8" * 40  # an operator's: the console is mounted next to /mcp

TEAM += f"""
[[tokens]]
name = "lead"
role = "operator"
sha256 = "{token_digest(OPERATOR)}"
"""
OUTSIDE = "task b-1 is outside this token's scope: it may report on tasks starting with a-"


@asynccontextmanager
async def connected(
    url: str, token: str, *, tasks: bool = False, human: Human | None = None, mode: str = "auto"
) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
        Client(
            streamable_http_client(url, http_client=http),
            extensions=[TasksClient()] if tasks else None,
            elicitation_callback=human,  # type: ignore[arg-type]
            mode=mode,  # type: ignore[arg-type]
        ) as client,
    ):
        yield client


async def b_question(url: str) -> int:
    """Task b-1, paused by a blocking question of its owner: the question's id."""
    async with connected(url, OWNER) as client:
        owner = Agent(client)
        await owner.call("start_task", title="Pick the billing provider", task_id="b-1")
        raised = await owner.call(
            "raise_escalation", task_id="b-1", reason="Which provider?", question="Stripe or Adyen?"
        )
    return int(raised["escalation"]["escalation_id"])


def elicitation_on(tmp_path: Path) -> str:
    config = tmp_path / "config.toml"
    config.write_text('[elicitation]\nmode = "on"\n', encoding="utf-8")
    return str(config)


async def refused(call: Any) -> str:
    try:
        await call
    except MCPError as exc:
        return exc.error.message
    return "answered"


async def test_a_scoped_wait_through_the_tasks_extension_is_refused_naming_the_scope(tmp_path: Path) -> None:
    """The token scoped to a- may not turn a wait on b-1's question into a task, nor read,
    answer or cancel a task on it that its holder started before the scope was set."""
    with http_in_thread(tmp_path, "--config", elicitation_on(tmp_path), env=team_env(tmp_path, TEAM)) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        with anyio.fail_after(60):
            escalation_id = await b_question(url)
            async with connected(url, WIDE, tasks=True, human=Human()) as wide:
                before = await call_as_task(
                    wide, "get_escalation", escalation_id=escalation_id, wait_seconds=30
                )
                assert isinstance(before, CreatedTask), before
                asked = await get_task(wide, before.task_id)
            assert asked.input_requests is not None
            (key,) = asked.input_requests
            async with connected(url, NARROW, tasks=True, human=Human()) as narrow:
                waited = await call_as_task(
                    narrow, "get_escalation", escalation_id=escalation_id, wait_seconds=30
                )
                reads = [
                    await refused(get_task(narrow, before.task_id)),
                    await refused(
                        update_task(narrow, before.task_id, {key: {"action": "accept", "content": GUIDANCE}})
                    ),
                    await refused(cancel_task(narrow, before.task_id)),
                ]
            async with connected(url, OWNER) as client:
                after = await Agent(client).call("get_escalation", escalation_id=escalation_id)
                task = await Agent(client).call("get_task", task_id="b-1")

    assert isinstance(waited, CallToolResult), waited  # no task was made
    assert waited.is_error
    assert waited.content[0].text == f"Error executing tool get_escalation: {OUTSIDE}"  # type: ignore[union-attr]
    assert reads == [OUTSIDE] * 3
    assert after["status"] == "pending"  # nobody answered b-1's question
    assert after["escalation"]["response"] is None
    assert task["task"]["status"] == "paused"


async def test_a_scoped_wait_never_shows_another_scopes_question_in_the_client(tmp_path: Path) -> None:
    """With elicitation on, a client of the token scoped to a- that can show a form is
    neither asked b-1's question nor able to answer it."""
    human = Human(content=GUIDANCE)
    with http_in_thread(tmp_path, "--config", elicitation_on(tmp_path), env=team_env(tmp_path, TEAM)) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        with anyio.fail_after(60):
            escalation_id = await b_question(url)
            async with connected(url, NARROW, human=human) as narrow:
                waited = await Agent(narrow).error(
                    "get_escalation", escalation_id=escalation_id, wait_seconds=5
                )
            async with connected(url, OWNER) as client:
                after = await Agent(client).call("get_escalation", escalation_id=escalation_id)

    assert waited == f"Error executing tool get_escalation: {OUTSIDE}"
    assert human.asked == []
    assert after["status"] == "pending"


async def test_a_scoped_token_subscribes_to_no_update_of_another_scopes_escalation(tmp_path: Path) -> None:
    with http_in_thread(tmp_path, env=team_env(tmp_path, TEAM)) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        with anyio.fail_after(60):
            escalation_id = await b_question(url)
            uri = f"escalation://{escalation_id}"
            async with connected(url, NARROW, mode="legacy") as legacy:
                subscribe = types.SubscribeRequest(params=types.SubscribeRequestParams(uri=uri))
                subscribed = await refused(legacy.session.send_request(subscribe, types.EmptyResult))
            async with connected(url, NARROW) as narrow:
                listened = await refused(listen(narrow, uri))

    assert [subscribed, listened] == [f"{uri}: {OUTSIDE}"] * 2


async def listen(client: Client, uri: str) -> None:
    """Listen to ``uri``'s updates (2026-07-28) and stop once the server agrees."""
    async with client.listen(resource_subscriptions=[uri]):
        pass


async def test_every_tool_resource_and_prompt_naming_another_scopes_task_is_refused(tmp_path: Path) -> None:
    """Each tool, by each argument that names a task (whatever the other arguments), each
    resource template and each prompt, asked about b-1 with the token scoped to a-."""
    with http_in_thread(tmp_path, env=team_env(tmp_path, TEAM)) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        with anyio.fail_after(120):
            escalation_id = await b_question(url)
            async with connected(url, OWNER) as client:
                recorded = await Agent(client).call(
                    "record_failure", task_id="b-1", step="test", message="AssertionError: 3 != 4"
                )
            failure_id = recorded["failure"]["failure_id"]
            naming = {
                "task_id": "b-1",
                "escalation_id": escalation_id,
                "follow_up_of": escalation_id,
                "failure_id": failure_id,
                "superseded_by": failure_id,
            }
            async with connected(url, NARROW) as narrow:
                tools = await narrow.list_tools()
                texts: dict[str, str] = {}
                for tool in tools.tools:
                    for argument in sorted(set(tool.input_schema.get("properties", {})) & set(naming)):
                        result = await narrow.call_tool(tool.name, {argument: naming[argument]})
                        texts[f"{tool.name}({argument})"] = result.content[0].text  # type: ignore[union-attr]
                # Raw arguments of a type no tool takes are left to the tool's own words.
                typed = await narrow.call_tool("start_task", {"title": "t", "task_id": "a-1", "project": 5})
                uris = [
                    f"escalation://{escalation_id}",
                    "task://b-1",
                    "task://b-1/feedback/test",
                    f"failure://{failure_id}",
                ]
                reads = {uri: await refused(narrow.read_resource(uri)) for uri in uris}
                prompts = {
                    "retry_with_feedback": {"task_id": "b-1", "step": "test"},
                    "fix_review_findings": {"task_id": "b-1"},
                    "escalation_briefing": {"escalation_id": str(escalation_id)},
                    "resume_after_response": {"escalation_id": str(escalation_id)},
                }
                given = {name: await refused(narrow.get_prompt(name, args)) for name, args in prompts.items()}
                served_prompts = {p.name for p in (await narrow.list_prompts()).prompts}

    assert len(texts) >= 16
    assert typed.content[0].text.startswith("Error executing tool start_task: project")  # type: ignore[union-attr]
    assert {name: text for name, text in texts.items() if not text.endswith(OUTSIDE)} == {}
    assert reads == {uri: f"{uri}: {OUTSIDE}" for uri in uris}
    assert set(prompts) == served_prompts
    assert given == dict.fromkeys(prompts, OUTSIDE)


def listed_routes() -> dict[str, str]:
    """The routes docs/security.md lists in its table under "Every route", with the check of each."""
    text = DOCS.read_text(encoding="utf-8")
    section = text.split("## Every route", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([^`]+)` \| ([^|]+) \|", section, flags=re.MULTILINE)
    return {route: check.strip() for route, check in rows}


async def served_routes(tmp_path: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> set[str]:
    """Every route the HTTP server serves, read from the server objects themselves: the
    JSON-RPC methods handled, the tools, resources and prompts registered, the hook and
    console routes."""
    for name, value in env.items():
        if name.startswith("ESCALATION_"):
            monkeypatch.setenv(name, value)
    settings = make_settings(str(tmp_path / "esc.db"))
    tokens = load_tokens()
    server = build_server(settings, http=True, tokens=tokens)
    # The SDK's session answers the handshake era's initialize itself, past the handlers.
    routes = {"method initialize", *(f"method {m}" for m in lowlevel_server(server)._request_handlers)}
    routes |= {f"tool {t.name}" for t in await server.list_tools()}
    routes |= {f"resource {r.uri}" for r in await server.list_resources()}
    routes |= {f"resource {r.uri_template}" for r in await server.list_resource_templates()}
    routes |= {f"prompt {p.name}" for p in await server.list_prompts()}
    security = transport_security(Listen())
    console = console_beside_mcp(settings, tokens, security)
    assert console is not None
    apps = (
        server.streamable_http_app(transport_security=security),
        build_hook_app(settings, StaticTokenVerifier(tokens), security),
        console.app,
    )
    for app in apps:
        for route in app.routes:
            methods = getattr(route, "methods", None) or {"ANY"}  # a mount, or /mcp: every method
            routes |= {f"http {method} {route.path}" for method in sorted(methods - {"HEAD"})}
    return routes


async def test_every_route_the_server_serves_is_listed_with_its_scope_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new tool, resource, prompt, JSON-RPC method or HTTP route fails this test until
    docs/security.md says which scope check it passes, and the gate knows the method."""
    from mcp_server_escalation.adapters.mcp.scope_gate import ROUTES

    served = await served_routes(tmp_path, team_env(tmp_path, TEAM), monkeypatch)
    listed = listed_routes()

    assert sorted(served - set(listed)) == []
    assert sorted(set(listed) - served) == []
    methods = {route.removeprefix("method ") for route in served if route.startswith("method ")}
    assert methods == set(ROUTES)
    assert all(listed[route] for route in listed)
