"""The wait for a human's answer as an MCP task (adapters/mcp/task_waits.py), through the
SDK's own client in memory with the tasks extension declared (tests/task_client.py); the
task's store on both backends where it is what is tested."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, closing
from typing import Any

import anyio
import httpx2
import psycopg
import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from conftest import Agent, FakeClock, make_settings
from http_support import AGENT_TOKEN, OPERATOR_TOKEN, http_in_thread
from mcp_server_escalation.adapters.composition.server import build_server
from mcp_server_escalation.locations import is_database_url
from mcp_server_escalation.models.limits import WAITS_PER_ESCALATION_MAX
from mcp_server_escalation.services.waits import WAIT_KEPT_SECONDS
from operator_support import SCRIPT, run_cli
from task_client import CreatedTask, TasksClient, call_as_task, cancel_task, get_task, update_task
from test_elicitation_modern import GUIDANCE, Human


def _client(db_path: str, human: Human | None = None, *, tasks: bool = True) -> Client:
    return Client(
        build_server(make_settings(db_path)),
        elicitation_callback=human,  # type: ignore[arg-type]
        extensions=[TasksClient()] if tasks else None,
    )


async def _question(agent: Agent, task_id: str) -> int:
    await agent.call("start_task", title="Wire the API", task_id=task_id)
    raised = await agent.call(
        "raise_escalation", task_id=task_id, reason="Which auth scheme?", question="OAuth or API keys?"
    )
    return int(raised["escalation"]["escalation_id"])


async def _wait_as_task(client: Client, escalation_id: int) -> CreatedTask:
    created = await call_as_task(client, "get_escalation", escalation_id=escalation_id, wait_seconds=30)
    assert isinstance(created, CreatedTask), created
    return created


@pytest.mark.both_backends
async def test_a_wait_becomes_a_task_that_completes_with_the_cli_answer(db_path: str, tmp_path: Any) -> None:
    home = tmp_path / "home"
    home.mkdir()
    with anyio.fail_after(60):
        async with _client(db_path) as client:
            agent = Agent(client)
            escalation_id = await _question(agent, "t-cli")
            created = await _wait_as_task(client, escalation_id)
            working = await get_task(client, created.task_id)
            code, _, err = await run_cli(
                "--db", db_path, "escalations", "respond", str(escalation_id), "--guidance", "API keys",
                home=home,
            )  # fmt: skip
            assert code == 0, err
            done = await get_task(client, created.task_id)
            again = await get_task(client, created.task_id)

    assert created.status == "working"
    assert created.poll_interval_ms == 1000
    assert working.status == "working"  # no elicitation declared: the task asks nothing
    assert working.input_requests is None
    assert done.status == "completed"
    assert done.result is not None
    assert done.result == again.result  # kept: every later poll returns the same
    structured = done.result["structuredContent"]
    assert structured["status"] == "resolved"
    assert structured["escalation"]["response"]["content"] == "API keys"
    assert structured["escalation"]["delivered_at"] is not None  # delivered to the agent
    assert len(json.dumps(done.model_dump(by_alias=True))) < 16 * 1024


@pytest.mark.both_backends
async def test_a_task_nobody_answers_completes_pending_when_its_wait_ends(db_path: str) -> None:
    # The caller asked to wait 1 s: the task is its wait, so it ends then, as the plain call's
    # wait does, pending, with the message to keep waiting (for the revision it named, too).
    with anyio.fail_after(60):
        async with _client(db_path) as client:
            agent = Agent(client)
            escalation_id = await _question(agent, "t-short")
            created = await call_as_task(
                client, "get_escalation", escalation_id=escalation_id, wait_seconds=1
            )
            assert isinstance(created, CreatedTask), created
            first = await get_task(client, created.task_id)
            await anyio.sleep(1.2)
            ended = await get_task(client, created.task_id)
            known = await call_as_task(
                client, "get_escalation", escalation_id=escalation_id, wait_seconds=1, known_revision=1
            )
            assert isinstance(known, CreatedTask), known
            await anyio.sleep(1.2)
            compact = await get_task(client, known.task_id)
            plain = await agent.call("get_escalation", escalation_id=escalation_id)

    assert first.status == "working"
    assert ended.status == "completed"
    assert ended.result is not None
    structured = ended.result["structuredContent"]
    assert structured["status"] == "pending"
    assert structured["directive"] == "pause"
    assert structured["message"] == plain["message"]
    assert f"get_escalation({escalation_id}, wait_seconds=4" in structured["message"]
    assert compact.result is not None
    assert compact.result["structuredContent"]["unchanged"] is True
    assert compact.result["structuredContent"]["escalation"] is None


async def test_a_client_without_the_extension_waits_inside_the_call(db_path: str) -> None:
    with anyio.fail_after(60):
        async with _client(db_path, tasks=False) as client:
            agent = Agent(client)
            escalation_id = await _question(agent, "t-plain")
            waited = await agent.call("get_escalation", escalation_id=escalation_id, wait_seconds=0.5)
            with pytest.raises(MCPError) as refused:
                await get_task(client, "whatever")

    assert waited["status"] == "pending"
    assert refused.value.error.code == -32021  # the extension is the client's to declare


async def test_no_task_for_an_answered_escalation_or_a_call_without_a_wait(db_path: str) -> None:
    with anyio.fail_after(60):
        async with _client(db_path) as client:
            agent = Agent(client)
            escalation_id = await _question(agent, "t-none")
            quick = await call_as_task(client, "get_escalation", escalation_id=escalation_id)
            await agent.call("resolve_escalation", escalation_id=escalation_id, response_type="withdraw")
            closed = await call_as_task(client, "get_escalation", escalation_id=escalation_id, wait_seconds=5)

    assert isinstance(quick, CallToolResult)
    assert isinstance(closed, CallToolResult)
    assert closed.structured_content is not None
    assert closed.structured_content["status"] == "withdrawn"


async def test_the_person_at_the_client_answers_through_tasks_update(db_path: str) -> None:
    with anyio.fail_after(60):
        async with _client(db_path, Human()) as client:
            agent = Agent(client)
            escalation_id = await _question(agent, "t-update")
            created = await _wait_as_task(client, escalation_id)
            asking = await get_task(client, created.task_id)
            assert asking.input_requests is not None
            (key,) = asking.input_requests
            await update_task(client, created.task_id, {key: {"action": "accept", "content": GUIDANCE}})
            done = await get_task(client, created.task_id)

    assert asking.status == "input_required"
    question = asking.input_requests[key]
    assert question["method"] == "elicitation/create"
    assert f"Escalation {escalation_id} (question from the agent)" in question["params"]["message"]
    assert set(question["params"]["requestedSchema"]["properties"]) == {"response_type", "text"}
    assert done.status == "completed"
    assert done.result is not None
    response = done.result["structuredContent"]["escalation"]["response"]
    assert response["content"] == "Use OAuth with PKCE."
    assert response["responder"].startswith("elicitation:")


async def test_the_cli_answering_first_wins_over_a_task_answer(db_path: str, tmp_path: Any) -> None:
    home = tmp_path / "home"
    home.mkdir()
    with anyio.fail_after(60):
        async with _client(db_path, Human()) as client:
            agent = Agent(client)
            escalation_id = await _question(agent, "t-first")
            created = await _wait_as_task(client, escalation_id)
            asking = await get_task(client, created.task_id)
            assert asking.input_requests is not None
            code, _, err = await run_cli(
                "--db", db_path, "escalations", "respond", str(escalation_id), "--guidance", "API keys",
                home=home,
            )  # fmt: skip
            assert code == 0, err
            (key,) = asking.input_requests
            await update_task(client, created.task_id, {key: {"action": "accept", "content": GUIDANCE}})
            done = await get_task(client, created.task_id)

    assert done.result is not None
    response = done.result["structuredContent"]["escalation"]["response"]
    assert response["content"] == "API keys"
    assert response["responder"].startswith("cli:")


async def test_an_answer_to_a_revision_that_changed_is_refused(db_path: str) -> None:
    failure = {"task_id": "t-stale", "message": "TypeError: bad operand", "file": "a.py", "line": 3}
    with anyio.fail_after(60):
        async with _client(db_path, Human()) as client:
            agent = Agent(client)
            await agent.call("start_task", title="Fix the adder", task_id="t-stale")
            fired = [await agent.call("record_failure", **failure) for _ in range(3)][-1]
            escalation_id = fired["escalation"]["escalation_id"]
            created = await _wait_as_task(client, escalation_id)
            asking = await get_task(client, created.task_id)
            assert asking.input_requests is not None
            await agent.call("record_failure", **failure)  # new evidence: a new revision
            (stale,) = asking.input_requests
            await update_task(client, created.task_id, {stale: {"action": "accept", "content": GUIDANCE}})
            after = await get_task(client, created.task_id)
            shown = await agent.call("get_escalation", escalation_id=escalation_id)

    assert shown["status"] == "pending"  # the stale answer was not recorded
    assert after.status == "input_required"
    assert after.input_requests is not None
    assert set(after.input_requests) != {stale}  # asked again, under a key of its own


async def test_a_decline_is_remembered_and_cancel_leaves_the_escalation_pending(db_path: str) -> None:
    with anyio.fail_after(60):
        async with _client(db_path, Human()) as client:
            agent = Agent(client)
            escalation_id = await _question(agent, "t-decline")
            created = await _wait_as_task(client, escalation_id)
            asking = await get_task(client, created.task_id)
            assert asking.input_requests is not None
            (key,) = asking.input_requests
            await update_task(client, created.task_id, {key: {"action": "decline"}})
            declined = await get_task(client, created.task_id)
            second = await _wait_as_task(client, escalation_id)
            not_asked = await get_task(client, second.task_id)
            await cancel_task(client, second.task_id)
            cancelled = await get_task(client, second.task_id)
            shown = await agent.call("get_escalation", escalation_id=escalation_id)
            with pytest.raises(MCPError) as unknown:
                await get_task(client, created.task_id + "x")

    assert declined.status == "working"
    assert declined.input_requests is None
    assert not_asked.status == "working"  # the decline holds for later waits too
    assert cancelled.status == "cancelled"
    assert shown["status"] == "pending"
    assert unknown.value.error.code == -32602


def _stdio(db_path: str) -> Client:
    params = StdioServerParameters(command=str(SCRIPT), args=["--db", db_path])
    return Client(params, extensions=[TasksClient()])


@pytest.mark.both_backends
async def test_a_restarted_server_serves_a_task_started_before(db_path: str, tmp_path: Any) -> None:
    home = tmp_path / "home"
    home.mkdir()
    with anyio.fail_after(120):
        async with _stdio(db_path) as first:
            agent = Agent(first)
            escalation_id = await _question(agent, "t-restart")
            created = await _wait_as_task(first, escalation_id)
        # The first server process has exited; another one is started on the same store.
        async with _stdio(db_path) as second:
            working = await get_task(second, created.task_id)
            code, _, err = await run_cli(
                "--db", db_path, "escalations", "respond", str(escalation_id), "--guidance", "API keys",
                home=home,
            )  # fmt: skip
            assert code == 0, err
            done = await get_task(second, created.task_id)

    assert working.status == "working"
    assert working.created_at == created.created_at
    assert done.status == "completed"
    assert done.result is not None
    assert done.result["structuredContent"]["escalation"]["response"]["content"] == "API keys"


@asynccontextmanager
async def _http(url: str, token: str) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http,
        Client(streamable_http_client(url, http_client=http), extensions=[TasksClient()]) as client,
    ):
        yield client


async def test_over_http_a_task_is_read_only_by_the_caller_that_started_it(tmp_path: Any) -> None:
    with http_in_thread(tmp_path) as port, anyio.fail_after(60):
        url = f"http://127.0.0.1:{port}/mcp"
        async with _http(url, AGENT_TOKEN) as agent_client:
            escalation_id = await _question(Agent(agent_client), "t-http")
            created = await _wait_as_task(agent_client, escalation_id)
            mine = await get_task(agent_client, created.task_id)
        async with _http(url, OPERATOR_TOKEN) as operator_client:
            with pytest.raises(MCPError) as refused:
                await get_task(operator_client, created.task_id)
            with pytest.raises(MCPError) as not_cancelled:
                await cancel_task(operator_client, created.task_id)
        async with _http(url, AGENT_TOKEN) as agent_again:
            still = await get_task(agent_again, created.task_id)

    assert mine.status == "working"
    assert refused.value.error.code == -32602
    assert not_cancelled.value.error.code == -32602
    assert still.status == "working"


async def test_a_task_completed_with_an_escalation_at_its_input_limits_stays_bounded(db_path: str) -> None:
    long = "é" * (64 * 1024)  # every text at its limit, two bytes a character
    with anyio.fail_after(60):
        async with _client(db_path) as client:
            agent = Agent(client)
            await agent.call("start_task", title="Wire the API", task_id="t-big")
            raised = await agent.call("raise_escalation", task_id="t-big", reason=long, question=long)
            escalation_id = raised["escalation"]["escalation_id"]
            created = await _wait_as_task(client, escalation_id)
            await agent.call("resolve_escalation", escalation_id=escalation_id, response_type="withdraw")
            done = await get_task(client, created.task_id)

    assert done.status == "completed"
    assert done.result is not None
    assert done.result["structuredContent"]["status"] == "withdrawn"
    on_the_wire = json.dumps(done.model_dump(by_alias=True), ensure_ascii=False, separators=(",", ":"))
    assert len(on_the_wire.encode()) < 16 * 1024


async def test_the_server_declares_the_tasks_extension(db_path: str) -> None:
    async with _client(db_path, tasks=False) as client:
        capabilities = client.server_capabilities

    assert capabilities is not None
    assert capabilities.extensions == {"io.modelcontextprotocol/tasks": {}}


def _waits_of(db_path: str, escalation_id: int) -> int:
    """The rows ``escalation_waits`` holds for the escalation, read from the store itself."""
    query = "SELECT COUNT(*) FROM escalation_waits WHERE escalation_id = "
    if is_database_url(db_path):
        with psycopg.connect(db_path) as pg_conn:
            row = pg_conn.execute(query + "%s", (escalation_id,)).fetchone()
    else:
        with closing(sqlite3.connect(db_path)) as conn:
            row = conn.execute(query + "?", (escalation_id,)).fetchone()
    assert row is not None
    return int(row[0])


@pytest.mark.both_backends
async def test_two_hundred_waits_on_one_escalation_leave_at_most_the_bound(db_path: str) -> None:
    """A client that turns waits into tasks in a loop left a row per wait (2,000 rows, 5 MB):
    an escalation keeps its newest WAITS_PER_ESCALATION_MAX, and the newest still answers.
    Every new wait trims the escalation's to the bound, so 25 times the bound is the loop."""
    with anyio.fail_after(300):
        async with _client(db_path) as client:
            escalation_id = await _question(Agent(client), "t-many")
            looped = 25 * WAITS_PER_ESCALATION_MAX
            created = [await _wait_as_task(client, escalation_id) for _ in range(looped)]
            newest = await get_task(client, created[-1].task_id)
            with pytest.raises(MCPError) as forgotten:
                await get_task(client, created[0].task_id)

    assert _waits_of(db_path, escalation_id) == WAITS_PER_ESCALATION_MAX
    assert newest.status == "working"
    assert forgotten.value.error.code == -32602  # unknown, expired, or another caller's


@pytest.mark.both_backends
async def test_a_wait_older_than_its_lifetime_is_gone_once_another_starts(db_path: str) -> None:
    clock = FakeClock()
    with anyio.fail_after(60):
        async with Client(build_server(make_settings(db_path), clock), extensions=[TasksClient()]) as client:
            first = await _question(Agent(client), "t-old")
            second = await _question(Agent(client), "t-new")
            await _wait_as_task(client, first)
            clock.advance(seconds=WAIT_KEPT_SECONDS + 1)
            await _wait_as_task(client, second)

    assert (_waits_of(db_path, first), _waits_of(db_path, second)) == (0, 1)


async def test_over_stdio_a_task_is_served_to_stdio_callers_with_its_id_and_an_http_task_is_not(
    tmp_path: Any,
) -> None:
    """What a task id protects over stdio (docs/security.md): a second stdio process of the
    store serves a stdio task given its id, and no stdio process serves a task an HTTP token
    started, nor an id one character off."""
    db_path = str(tmp_path / "esc.db")
    with http_in_thread(tmp_path) as port, anyio.fail_after(120):
        async with _http(f"http://127.0.0.1:{port}/mcp", AGENT_TOKEN) as over_http:
            http_task = await _wait_as_task(over_http, await _question(Agent(over_http), "t-http-owned"))
        async with _stdio(db_path) as first:
            stdio_task = await _wait_as_task(first, await _question(Agent(first), "t-stdio-owned"))
        async with _stdio(db_path) as second:
            served = await get_task(second, stdio_task.task_id)
            with pytest.raises(MCPError) as http_owned:
                await get_task(second, http_task.task_id)
            with pytest.raises(MCPError) as off_by_one:
                await get_task(
                    second, stdio_task.task_id[:-1] + ("A" if stdio_task.task_id[-1] != "A" else "B")
                )

    assert served.status == "working"
    assert http_owned.value.error.code == off_by_one.value.error.code == -32602
