"""URL elicitation (issue 17): a client that can open a link is pointed at the console page.

With ``[elicitation] console_url`` set, a handshake-era client declaring ``elicitation.url``
(the SDK client declares it, with form, once it has an elicitation callback) is sent
``<console_url>/escalations/<id>`` while its agent waits on a blocking escalation; the human
answers in the console (here: the operator CLI in another process, the same service), and
the client hears ``notifications/elicitation/complete`` for the link it accepted.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import ElicitCompleteNotification, ElicitRequestFormParams, ElicitRequestURLParams

from bounds import HUNG_AFTER
from conftest import Agent, make_settings
from http_support import AGENT_TOKEN, http_in_thread
from mcp_server_escalation.adapters.composition.server import build_server
from mcp_server_escalation.settings import ElicitationConfig
from operator_support import SCRIPT, eventually, run_cli
from test_elicitation import Human, _blocking_question

CONSOLE = "http://127.0.0.1:8766"


class Completions:
    """A message handler recording the elicitation ids the server said are complete."""

    def __init__(self) -> None:
        self.ids: list[str] = []

    async def __call__(self, message: Any) -> None:
        if isinstance(message, ElicitCompleteNotification):
            self.ids.append(message.params.elicitation_id)


def _client(db_path: str, human: Human | None, heard: Completions, **elicitation: Any) -> Client:
    server = build_server(make_settings(db_path, elicitation=ElicitationConfig(**elicitation)))
    if human is None:
        return Client(server, mode="legacy", message_handler=heard)
    return Client(server, mode="legacy", elicitation_callback=human, message_handler=heard)  # type: ignore[arg-type]


async def test_a_url_capable_client_is_sent_the_console_page_and_told_when_it_was_answered(
    db_path: str, tmp_path: Path
) -> None:
    human, heard = Human(action="accept"), Completions()
    home = tmp_path / "home"
    home.mkdir()
    with anyio.fail_after(30):
        async with _client(db_path, human, heard, console_url=CONSOLE + "/") as client:
            agent = Agent(client)
            escalation_id = await _blocking_question(agent, "u-accept")
            async with anyio.create_task_group() as tg:
                results: list[dict[str, Any]] = []

                async def wait() -> None:
                    results.append(
                        await agent.call("get_escalation", escalation_id=escalation_id, wait_seconds=30)
                    )

                tg.start_soon(wait)
                await eventually(lambda: human.asked, 60, "the link was sent")
                answer = ["escalations", "respond", str(escalation_id), "--guidance", "Use OAuth"]
                code, _, err = await run_cli("--db", db_path, *answer, home=home)
            await eventually(lambda: heard.ids, 60, "the link was completed")
            again = await agent.call("get_escalation", escalation_id=escalation_id, wait_seconds=0.3)

    assert code == 0, err
    (link,) = human.asked
    assert isinstance(link, ElicitRequestURLParams)
    assert link.mode == "url"
    assert link.url == f"{CONSOLE}/escalations/{escalation_id}"
    assert "token" not in link.url
    assert f"Escalation {escalation_id} (question from the agent) on task u-accept" in link.message
    assert "OAuth or API keys?" in link.message
    assert "operator console" in link.message
    assert heard.ids == [link.elicitation_id]  # completed once, for the link it accepted
    (waited,) = results
    assert waited["escalation"]["status"] == "resolved"
    assert again["escalation"]["status"] == "resolved"


@pytest.mark.parametrize("action", ["accept", "decline", "cancel"])
async def test_the_console_link_is_sent_once_per_escalation_and_never_completed_while_pending(
    db_path: str, action: str
) -> None:
    human, heard = Human(action=action), Completions()
    with anyio.fail_after(HUNG_AFTER):
        async with _client(db_path, human, heard, console_url=CONSOLE) as client:
            agent = Agent(client)
            escalation_id = await _blocking_question(agent, f"u-{action}")
            first = await agent.call("get_escalation", escalation_id=escalation_id, wait_seconds=0.3)
            second = await agent.call("get_escalation", escalation_id=escalation_id, wait_seconds=0.3)

    assert len(human.asked) == 1
    assert heard.ids == []
    assert first["escalation"]["status"] == second["escalation"]["status"] == "pending"


async def test_a_client_without_elicitation_gets_no_link(db_path: str) -> None:
    heard = Completions()
    with anyio.fail_after(HUNG_AFTER):
        async with _client(db_path, None, heard, console_url=CONSOLE) as client:
            agent = Agent(client)
            escalation_id = await _blocking_question(agent, "u-none")
            waited = await agent.call("get_escalation", escalation_id=escalation_id, wait_seconds=0.3)

    assert waited["escalation"]["status"] == "pending"
    assert heard.ids == []


async def test_without_console_url_no_link_is_sent_and_the_form_is_asked_as_before(db_path: str) -> None:
    human, heard = Human(action="decline"), Completions()
    with anyio.fail_after(HUNG_AFTER):
        async with _client(db_path, human, heard) as client:
            agent = Agent(client)
            escalation_id = await _blocking_question(agent, "u-unset")
            await agent.call("get_escalation", escalation_id=escalation_id, wait_seconds=0.3)

    (asked,) = human.asked
    assert isinstance(asked, ElicitRequestFormParams)


async def test_mode_off_sends_no_link_even_with_console_url(db_path: str) -> None:
    human, heard = Human(action="accept"), Completions()
    with anyio.fail_after(HUNG_AFTER):
        async with _client(db_path, human, heard, console_url=CONSOLE, mode="off") as client:
            agent = Agent(client)
            escalation_id = await _blocking_question(agent, "u-off")
            await agent.call("get_escalation", escalation_id=escalation_id, wait_seconds=0.3)

    assert human.asked == []


def test_console_url_must_be_an_http_address_without_query() -> None:
    for bad in ("ftp://x", "127.0.0.1:8766", "http://x/?token=abc", "http://x/#frag"):
        with pytest.raises(ValueError, match="console_url"):
            ElicitationConfig.model_validate({"console_url": bad})
    assert ElicitationConfig.model_validate({"console_url": CONSOLE}).console_url == CONSOLE


async def test_serve_over_http_with_the_console_points_the_link_at_its_own_address(tmp_path: Path) -> None:
    # No console_url in the config: the mounted console's address is the default, and the
    # link is sent over HTTP although "auto" keeps forms off it (the console asks for the
    # operator's login itself, whoever's token the agent's client holds).
    human = Human(action="decline")
    with http_in_thread(tmp_path) as port, anyio.fail_after(30):
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {AGENT_TOKEN}"}) as http,
            Client(
                streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http),
                mode="legacy",
                elicitation_callback=human,  # type: ignore[arg-type]
            ) as client,
        ):
            agent = Agent(client)
            escalation_id = await _blocking_question(agent, "u-http")
            await agent.call("get_escalation", escalation_id=escalation_id, wait_seconds=0.3)
    (link,) = human.asked
    assert isinstance(link, ElicitRequestURLParams)
    assert link.url == f"http://127.0.0.1:{port}/escalations/{escalation_id}"


class RawClient:
    """A client speaking JSON-RPC lines to the installed script, declaring what it is told."""

    def __init__(self, process: Any) -> None:
        self.process = process
        self.buffer = b""
        self.asked: list[dict[str, Any]] = []  # the elicitation requests, answered "decline"

    async def send(self, message: dict[str, Any]) -> None:
        await self.process.stdin.send(json.dumps(message).encode() + b"\n")

    async def _line(self) -> dict[str, Any]:
        while b"\n" not in self.buffer:
            self.buffer += await self.process.stdout.receive()
        line, self.buffer = self.buffer.split(b"\n", 1)
        return dict(json.loads(line))

    async def call(self, request_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        await self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        while True:
            message = await self._line()
            if message.get("method") == "elicitation/create":
                self.asked.append(message["params"])
                await self.send({"jsonrpc": "2.0", "id": message["id"], "result": {"action": "decline"}})
            elif message.get("id") == request_id and "method" not in message:
                return message


@pytest.mark.parametrize(("declared", "mode"), [({"form": {}}, "form"), ({"url": {}}, "url"), ({}, "form")])
async def test_a_client_is_asked_in_the_one_mode_it_declared(
    db_path: str, tmp_path: Path, declared: dict[str, Any], mode: str
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f'[elicitation]\nconsole_url = "{CONSOLE}"\n', encoding="utf-8")
    hello = {
        "protocolVersion": "2025-11-25",
        "capabilities": {"elicitation": declared},
        "clientInfo": {"name": "raw", "version": "1"},
    }
    with anyio.fail_after(30):
        process = await anyio.open_process([str(SCRIPT), "--db", db_path, "--config", str(config)])
        try:
            client = RawClient(process)
            await client.call(1, "initialize", hello)
            await client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            calls = [
                ("start_task", {"title": "Wire the API", "task_id": "raw"}),
                ("raise_escalation", {"task_id": "raw", "reason": "Which auth?", "question": "OAuth?"}),
            ]
            for n, (tool, arguments) in enumerate(calls, start=2):
                await client.call(n, "tools/call", {"name": tool, "arguments": arguments})
            wait = {"escalation_id": 1, "wait_seconds": 0.5}
            waited = await client.call(9, "tools/call", {"name": "get_escalation", "arguments": wait})
        finally:
            process.kill()
            await process.wait()
    assert waited["result"]["structuredContent"]["escalation"]["status"] == "pending"
    (asked,) = client.asked
    assert asked.get("mode", "form") == mode
    assert ("url" in asked) == (mode == "url")
    if mode == "url":
        assert asked["url"] == f"{CONSOLE}/escalations/1"
        assert asked["elicitationId"]
