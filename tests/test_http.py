"""Streamable HTTP: the bearer token, never a request argument, decides the caller's role."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx2
import pytest

from console_support import create_store
from http_support import (
    AGENT_TOKEN,
    OPERATOR_TOKEN,
    SCRIPT,
    TEST_TOKENS,
    free_port,
    http_client,
    start_http,
    stop_http,
    wait_until_listening,
)


@pytest.fixture(scope="module")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One server for the module's tests: none changes its configuration, and each works
    on tasks of its own."""
    process, port, _ = start_http(tmp_path_factory.mktemp("http"), "--role", "operator")
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_http(process)


async def test_agent_token_cannot_answer_even_on_a_server_started_as_operator(http_server: str) -> None:
    with anyio.fail_after(30):
        async with http_client(http_server, AGENT_TOKEN) as agent:
            await agent.call("start_task", title="t", task_id="h1")
            for _ in range(3):
                result = await agent.call("record_failure", task_id="h1", message="boom")
            escalation_id = result["escalation"]["escalation_id"]
            refused = await agent.error(
                "resolve_escalation",
                escalation_id=escalation_id,
                response_type="guidance",
                content="do it",
                responder="operator",
            )
        async with http_client(http_server, OPERATOR_TOKEN) as operator:
            answered = await operator.call(
                "resolve_escalation",
                escalation_id=escalation_id,
                response_type="guidance",
                content="try again differently",
            )
    assert "agent role" in refused
    assert answered["escalation"]["status"] == "resolved"


async def test_a_request_without_a_valid_token_is_rejected(http_server: str) -> None:
    async with httpx2.AsyncClient() as http:
        response = await http.post(
            http_server,
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={"Content-Type": "application/json", "Authorization": "Bearer wrong"},
        )
    assert response.status_code == 401


def test_the_http_server_refuses_to_start_without_any_token(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ESCALATION_")}
    done = subprocess.run(
        [
            SCRIPT,
            "serve",
            "--transport",
            "http",
            "--port",
            str(free_port()),
            "--db",
            str(tmp_path / "esc.db"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 1
    assert "ESCALATION_OPERATOR_TOKEN" in done.stderr


async def test_over_http_an_agent_session_withdraws_only_questions_of_tasks_it_holds(
    http_server: str,
) -> None:
    with anyio.fail_after(30):
        async with (
            http_client(http_server, AGENT_TOKEN, mode="legacy") as asker,
            http_client(http_server, AGENT_TOKEN, mode="legacy") as other,
        ):
            await asker.call("start_task", title="t", task_id="h2")
            asked = await asker.call("raise_escalation", task_id="h2", reason="Which cache?")
            escalation_id = asked["escalation"]["escalation_id"]
            await other.call("start_task", title="another", task_id="h3")

            refused = await other.error(
                "resolve_escalation", escalation_id=escalation_id, response_type="withdraw"
            )
            withdrawn = await asker.call(
                "resolve_escalation",
                escalation_id=escalation_id,
                response_type="withdraw",
                responder="operator:carol",
            )

    assert "does not hold" in refused
    assert withdrawn["escalation"]["status"] == "withdrawn"
    assert withdrawn["escalation"]["response"]["responder"] == "agent:operator:carol"


async def test_a_sessionless_http_agent_holds_no_task_and_cannot_withdraw(http_server: str) -> None:
    with anyio.fail_after(30):
        async with http_client(http_server, AGENT_TOKEN) as agent:  # 2026-07-28: no session
            await agent.call("start_task", title="t", task_id="h4")
            asked = await agent.call("raise_escalation", task_id="h4", reason="Which cache?")

            refused = await agent.error(
                "resolve_escalation",
                escalation_id=asked["escalation"]["escalation_id"],
                response_type="withdraw",
            )

    assert "without an MCP session" in refused
    assert "escalations respond" in refused


# What a terminal gives the process: Ctrl-C raises KeyboardInterrupt. (A suite started in the
# background has SIGINT ignored, and would pass that on to every process it starts.)
FROM_A_TERMINAL = (
    "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "from mcp_server_escalation.cli import main; sys.exit(main())"
)


@pytest.mark.parametrize("command", [["serve", "--transport", "http"], ["console"]], ids=["serve", "console"])
def test_ctrl_c_stops_the_http_server_and_the_console_with_exit_0(tmp_path: Path, command: list[str]) -> None:
    store = tmp_path / "esc.db"
    create_store(str(store))  # the console serves only a store a server made
    port = free_port()
    env = {**os.environ, **TEST_TOKENS}
    process = subprocess.Popen(
        [sys.executable, "-c", FROM_A_TERMINAL, *command, "--port", str(port), "--db", str(store)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        assert wait_until_listening(port, process), "it never listened"
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, err.decode()
    assert b"Traceback" not in err
