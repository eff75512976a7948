"""The team set-up, end to end: one PostgreSQL, two HTTP servers on it (as on two machines),
agents in processes of their own connected to either, and an operator answering each
agent's escalation on the console of the other server."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import httpx2
from anyio.streams.buffered import BufferedByteReceiveStream

from console_support import form_values
from http_support import AGENT_TOKEN, OPERATOR_TOKEN, start_http, stop_http

# An agent in a process of its own: it repeats one error until it is paused, waits for the
# human's answer (get_escalation), acknowledges it, and prints what it was told as JSON.
_AGENT = """
import json, sys, anyio, httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

url, token, task = sys.argv[1:4]

async def call(client, tool, **arguments):
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    return result.structured_content

async def main():
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            await call(client, "start_task", title=f"Agent on {task}", task_id=task, agent_id=task)
            for _ in range(3):
                told = await call(client, "record_failure", task_id=task,
                                  message="ImportError: cannot import name 'Retry' from 'http_lib'")
            escalation_id = told["escalation"]["escalation_id"]
            print(json.dumps({"escalation_id": escalation_id}), flush=True)
            while True:
                waited = await call(client, "get_escalation", escalation_id=escalation_id, wait_seconds=30)
                if waited.get("response") or waited.get("escalation", {}).get("response"):
                    break
            acknowledged = await call(client, "acknowledge_response", escalation_id=escalation_id)
            print(json.dumps({"answer": waited, "after": acknowledged}), flush=True)

anyio.run(main)
"""


def _answer_on_console(base: str, escalation_id: int, guidance: str) -> int:
    with httpx2.Client(base_url=base, headers={"Origin": base}) as operator:
        assert operator.post("/login", data={"token": OPERATOR_TOKEN}).status_code == 303
        page = operator.get(f"/escalations/{escalation_id}")
        assert page.status_code == 200, page.text
        shown = form_values(page.text)
        data = {"response_type": "guidance", "content": guidance, **shown}
        return operator.post(f"/escalations/{escalation_id}/answer", data=data).status_code


async def _next_line(lines: BufferedByteReceiveStream) -> dict[str, object]:
    return json.loads(await lines.receive_until(b"\n", 1_000_000))


async def test_two_servers_on_one_postgresql_answer_each_others_agents(tmp_path: Path, pg_url: str) -> None:
    first, first_port, first_log = start_http(tmp_path, "--db", pg_url)
    second, second_port, second_log = start_http(tmp_path, "--db", pg_url)
    servers = {"a": f"http://127.0.0.1:{first_port}", "b": f"http://127.0.0.1:{second_port}"}
    told: dict[str, list[dict[str, object]]] = {}
    try:
        with anyio.fail_after(120):
            async with anyio.create_task_group() as tg:
                for name, base in servers.items():
                    tg.start_soon(_agent_answered_elsewhere, name, base, servers, told)
    finally:
        stop_http(first)
        stop_http(second)

    for name in servers:
        answer = told[name][1]["answer"]
        assert "Pin http_lib" in json.dumps(answer)
        assert told[name][1]["after"]["directive"] == "proceed"
    assert "Traceback" not in first_log.read_text() + second_log.read_text()


async def _agent_answered_elsewhere(
    name: str, base: str, servers: dict[str, str], told: dict[str, list[dict[str, object]]]
) -> None:
    other = servers["b" if name == "a" else "a"]
    command = [sys.executable, "-c", _AGENT, f"{base}/mcp", AGENT_TOKEN, f"team-{name}"]
    async with await anyio.open_process(command, stderr=subprocess.PIPE) as agent:
        assert agent.stdout is not None
        lines = BufferedByteReceiveStream(agent.stdout)
        paused = await _next_line(lines)
        escalation_id = int(paused["escalation_id"])  # type: ignore[call-overload]
        status = await anyio.to_thread.run_sync(
            _answer_on_console, other, escalation_id, f"Pin http_lib below 2 (for {name})"
        )
        assert status == 303
        done = await _next_line(lines)
        await agent.wait()
    told[name] = [paused, done]
