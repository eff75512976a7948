"""The team set-up, end to end: one PostgreSQL, two HTTP servers on it (as on two machines),
agents connected to either (SDK clients over streamable HTTP), two operators, each with a token of
their own, answering each agent's escalation on the console of the other server, and a
remote agent's hooks posted over HTTP (Claude Code's http hooks) instead of a process per
tool call."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from console_support import form_values
from hooks_support import PYTEST_FAIL, bash_failure, every_repeat, stop
from http_support import AGENT_TOKEN, http_client, start_http, stop_http, token_digest


async def _agent(url: str, task: str, paused: Callable[[int], object]) -> dict[str, Any]:
    """An agent on its own connection: it repeats one error until it is paused, says so
    (``paused``), waits for the human's answer (get_escalation), acknowledges it, and gives
    back what it was told."""
    async with http_client(url, AGENT_TOKEN) as agent:
        await agent.call("start_task", title=f"Agent on {task}", task_id=task, agent_id=task)
        for _ in range(3):
            told = await agent.call(
                "record_failure",
                task_id=task,
                message="ImportError: cannot import name 'Retry' from 'http_lib'",
            )
        escalation_id = int(told["escalation"]["escalation_id"])
        paused(escalation_id)
        while True:
            waited = await agent.call("get_escalation", escalation_id=escalation_id, wait_seconds=30)
            if waited["escalation"]["response"]:
                break
        acknowledged = await agent.call("acknowledge_response", escalation_id=escalation_id)
    return {"answer": waited, "after": acknowledged}


# One token per person: the agents' hosts share one, each operator has their own.
PEOPLE = {"alice": "alice-" + "1" * 40, "bob": "bob-" + "2" * 40}
OPERATOR_OF = {"a": "bob", "b": "alice"}  # who answers the agent of each server, elsewhere


def _tokens_file(folder: Path) -> Path:
    entries = [("agents", "agent", AGENT_TOKEN), *((name, "operator", t) for name, t in PEOPLE.items())]
    path = folder / "tokens.toml"
    digest = {name: token_digest(token) for name, _, token in entries}
    path.write_text(
        "".join(
            f'[[tokens]]\nname = "{name}"\nrole = "{role}"\nsha256 = "{digest[name]}"\n'
            for name, role, _ in entries
        ),
        encoding="utf-8",
    )
    return path


def _answer_on_console(base: str, escalation_id: int, guidance: str, token: str) -> int:
    with httpx2.Client(base_url=base, headers={"Origin": base}) as operator:
        assert operator.post("/login", data={"token": token}).status_code == 303
        page = operator.get(f"/escalations/{escalation_id}")
        assert page.status_code == 200, page.text
        shown = form_values(page.text)
        data = {"response_type": "guidance", "content": guidance, **shown}
        return operator.post(f"/escalations/{escalation_id}/answer", data=data).status_code


@pytest.fixture
def servers(tmp_path: Path, pg_url: str) -> Iterator[dict[str, str]]:
    """Two HTTP servers on one PostgreSQL database, with one token per person."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ESCALATION_")}
    env["ESCALATION_TOKENS_FILE"] = str(_tokens_file(tmp_path))
    env["ESCALATION_CONFIG"] = every_repeat(tmp_path)  # the remote agent's loop pauses from its first calls
    first, first_port, first_log = start_http(tmp_path, "--db", pg_url, env=env)
    try:
        second, second_port, second_log = start_http(tmp_path, "--db", pg_url, env=env)
        try:
            yield {"a": f"http://127.0.0.1:{first_port}", "b": f"http://127.0.0.1:{second_port}"}
        finally:
            stop_http(second)
    finally:
        stop_http(first)
    assert "Traceback" not in first_log.read_text() + second_log.read_text()


async def test_two_servers_on_one_postgresql_answer_each_others_agents(servers: dict[str, str]) -> None:
    told: dict[str, dict[str, Any]] = {}
    with anyio.fail_after(120):
        async with anyio.create_task_group() as tg:
            for name, base in servers.items():
                tg.start_soon(_agent_answered_elsewhere, name, base, servers, told)

    for name in servers:
        answer = json.dumps(told[name]["answer"])
        assert f"Pin http_lib below 2 (for {name})" in answer
        assert f'"responder": "console:{OPERATOR_OF[name]}"' in answer
        assert told[name]["after"]["directive"] == "proceed"


def _hook(base: str, event: dict[str, object]) -> dict[str, object]:
    """One event as a remote agent's Claude Code posts it; the decision it reads back."""
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {AGENT_TOKEN}"}
    with httpx2.Client(timeout=60) as client:
        answer = client.post(f"{base}/hooks/claude-code", content=json.dumps(event), headers=headers)
    assert answer.status_code == 200, answer.text
    return json.loads(answer.text) if answer.text else {}


async def test_a_remote_agents_hooks_posted_to_one_server_are_answered_from_the_other(
    servers: dict[str, str],
) -> None:
    events = [bash_failure("python -m pytest -q", PYTEST_FAIL, f"toolu_remote_{n}") for n in range(3)]
    told = [_hook(servers["a"], event) for event in events]
    escalated = json.dumps(told[-1])
    assert "escalation 1" in escalated
    status = await anyio.to_thread.run_sync(
        _answer_on_console, servers["b"], 1, "Use Decimal for money.", PEOPLE["alice"]
    )
    held = _hook(servers["a"], stop())

    assert status == 303
    assert held["decision"] == "block"
    assert "Use Decimal for money." in str(held["reason"])


async def _agent_answered_elsewhere(
    name: str, base: str, servers: dict[str, str], told: dict[str, dict[str, Any]]
) -> None:
    other = servers["b" if name == "a" else "a"]
    person = OPERATOR_OF[name]

    async def answer(escalation_id: int) -> None:
        status = await anyio.to_thread.run_sync(
            _answer_on_console, other, escalation_id, f"Pin http_lib below 2 (for {name})", PEOPLE[person]
        )
        assert status == 303

    async with anyio.create_task_group() as tg:
        # The operator answers while the agent waits on its server for the answer.
        told[name] = await _agent(
            f"{base}/mcp", f"team-{name}", lambda escalation_id: tg.start_soon(answer, escalation_id)
        )
