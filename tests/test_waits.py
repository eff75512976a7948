"""The wait fits the client (adapters/mcp/waits.py).

A pause message asks for ``get_escalation(N, wait_seconds=W)``. W is under the shortest
request timeout of the clients people use by default (openai-agents: 5 s), longer for a
client that can ask its person (it declared elicitation); a connection that cut a wait short
is asked for shorter ones, and a longer wait it asks for ends before its timeout; a client
that sent a progress token hears how the wait goes.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp.types import ElicitResult

from conftest import make_settings
from mcp_server_escalation.adapters.composition.server import build_server
from mcp_server_escalation.settings import Settings
from operator_support import SCRIPT

ASKED = re.compile(r"wait_seconds=(\d+)")


async def _decline(context: Any, params: Any) -> ElicitResult:
    return ElicitResult(action="decline")


async def _pause(client: Client, task_id: str) -> tuple[int, str]:
    """An ask_human question that pauses the task: its id, and the message that said so."""
    await client.call_tool("start_task", {"title": "Wire the API", "task_id": task_id})
    raised = await client.call_tool("raise_escalation", {"task_id": task_id, "reason": "Which scheme?"})
    structured = raised.structured_content
    assert structured is not None
    return structured["escalation"]["escalation_id"], structured["message"]


async def test_messages_ask_for_a_wait_under_the_shortest_default_client_timeout(db_path: str) -> None:
    async with Client(build_server(make_settings(db_path))) as client:
        escalation_id, message = await _pause(client, "w-default")
        polled = await client.call_tool("get_escalation", {"escalation_id": escalation_id})
        task = await client.call_tool("get_task", {"task_id": "w-default"})

    assert polled.structured_content is not None
    assert task.structured_content is not None
    said = [message, polled.structured_content["message"], task.structured_content["message"]]
    assert [ASKED.findall(text) for text in said] == [["4"], ["4"], ["4"]]


async def test_a_client_that_can_ask_its_person_is_asked_for_the_longer_wait(db_path: str) -> None:
    server = build_server(make_settings(db_path))
    async with Client(server, mode="legacy", elicitation_callback=_decline) as client:  # type: ignore[arg-type]
        _, message = await _pause(client, "w-form")

    assert ASKED.findall(message) == ["30"]


async def test_the_operator_sets_the_waits(db_path: str, tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[waiting]\nseconds = 2\nform_seconds = 9\n", encoding="utf-8")
    settings = Settings.from_sources(db=db_path, config=str(config), env={})
    server = build_server(settings)
    async with Client(server) as plain:
        _, plain_message = await _pause(plain, "w-plain")
    async with Client(server, mode="legacy", elicitation_callback=_decline) as asking:  # type: ignore[arg-type]
        _, asking_message = await _pause(asking, "w-asking")

    assert ASKED.findall(plain_message) == ["2"]
    assert ASKED.findall(asking_message) == ["9"]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_client_that_sent_a_progress_token_hears_the_wait_go_on(db_path: str, mode: str) -> None:
    heard: list[tuple[float, float | None, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        heard.append((done, total, message))

    async with Client(build_server(make_settings(db_path)), mode=mode) as client:  # type: ignore[arg-type]
        escalation_id, _ = await _pause(client, "w-progress")
        arguments = {"escalation_id": escalation_id, "wait_seconds": 2.5}
        waited = await client.call_tool("get_escalation", arguments, progress_callback=progress)

    assert waited.structured_content is not None
    assert waited.structured_content["status"] == "pending"
    assert len(heard) >= 2
    assert all(total == 2.5 and 0 < done < 2.5 for done, total, _ in heard)
    assert [done for done, _, _ in heard] == sorted(done for done, _, _ in heard)
    assert heard[0][2] == f"Waiting for a human's answer to escalation {escalation_id}."


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_connection_that_cut_a_wait_short_is_asked_for_shorter_ones(db_path: str, mode: str) -> None:
    # Over the real stdio, as openai-agents' MCPServerStdio runs us: the mcp 2.x client's
    # timeout ends the call and sends notifications/cancelled.
    params = StdioServerParameters(command=str(SCRIPT), args=["--db", db_path])
    async with Client(params, read_timeout_seconds=6, mode=mode) as client:  # type: ignore[arg-type]
        escalation_id, _ = await _pause(client, "w-cut")
        arguments = {"escalation_id": escalation_id, "wait_seconds": 20}
        with pytest.raises(MCPError, match="timed out"):
            await client.call_tool("get_escalation", arguments)
        # The same wait again: the server ends it before the client's timeout, and says so.
        again = await client.call_tool("get_escalation", arguments)
        task = await client.call_tool("get_task", {"task_id": "w-cut"})

    assert again.structured_content is not None
    assert task.structured_content is not None
    assert again.structured_content["status"] == "pending"
    (asked,) = ASKED.findall(again.structured_content["message"])
    assert 1 <= int(asked) < 6  # under the client's timeout
    assert ASKED.findall(task.structured_content["message"]) == [asked]
