"""The installed console script as a real stdio subprocess, driven by the SDK client.

Every test launches ``mcp-server-escalation --db PATH`` from the interpreter's own
``bin`` folder (so CI's fresh venv is what runs) on a temp-file store. The operator's CLI
runs as another process on the same file, which is how a human answers in practice.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from conftest import INITIALIZE, INITIALIZED, Agent, connect, start_task_request
from in_process import run_main
from mcp_server_escalation.adapters.mcp.registry import JSON_TEXT_MAX
from mcp_server_escalation.models.limits import WAIT_MAX_SECONDS

SCRIPT = Path(sys.executable).parent / "mcp-server-escalation"

# Every agent tool; each one has a pydantic result, so each has an output schema.
AGENT_TOOLS = {
    "start_task",
    "end_task",
    "get_task",
    "record_failure",
    "report_progress",
    "check_edit",
    "raise_escalation",
    "get_escalation",
    "acknowledge_response",
    "list_escalations",
    "resolve_escalation",
}
DIRECTED_TOOLS = AGENT_TOOLS - {"list_escalations", "resolve_escalation"}


@asynccontextmanager
async def stdio_agent(db_path: str, mode: str = "legacy", cwd: str | None = None) -> AsyncIterator[Agent]:
    """The console script as a stdio subprocess on ``db_path``, connected through the SDK."""
    params = StdioServerParameters(command=str(SCRIPT), args=["--db", db_path], cwd=cwd)
    async with Client(params, mode=mode) as client:  # type: ignore[arg-type]
        yield Agent(client)


async def _three_identical_failures(agent: Agent, task_id: str) -> list[dict[str, Any]]:
    results = []
    for line in (10, 20, 30):
        results.append(
            await agent.call(
                "record_failure",
                task_id=task_id,
                message="TypeError: unsupported operand type(s) for +: 'int' and 'str'",
                error_type="TypeError",
                file="src/calc.py",
                line=line,
                attempted_action=f"cast the operand at line {line}",
            )
        )
    return results


async def test_from_any_directory_the_console_script_declares_its_notifications_and_lists_every_tool(
    db_path: str, tmp_path: Path
) -> None:
    # Prompts and schemas travel in the wheel: nothing may depend on the repository checkout.
    elsewhere = tmp_path / "some" / "project"
    elsewhere.mkdir(parents=True)
    with anyio.fail_after(30):
        async with stdio_agent(db_path, mode="legacy", cwd=str(elsewhere)) as agent:
            listed = await agent.client.list_tools()
            capabilities = agent.client.server_capabilities
            await agent.client.set_logging_level("notice")
            await agent.client.subscribe_resource("escalation://pending")
            started = await agent.call("start_task", title="from elsewhere", task_id="cwd-1")
    assert started["task"]["project"] == str(elsewhere)
    assert started["directive"] == "proceed"
    # It sends log messages and resource updates, so it declares both (and serves them).
    assert capabilities is not None
    assert capabilities.logging is not None
    assert capabilities.resources is not None
    assert capabilities.resources.subscribe is True
    tools = {tool.name: tool for tool in listed.tools}
    assert set(tools) >= AGENT_TOOLS, f"missing tools: {AGENT_TOOLS - set(tools)}"
    for name in AGENT_TOOLS:
        schema = tools[name].output_schema
        assert schema is not None, f"{name} has no output schema"
        assert schema.get("type") == "object"
        assert tools[name].annotations is not None, f"{name} has no annotations"
    for name in DIRECTED_TOOLS:
        properties = tools[name].output_schema["properties"]  # type: ignore[index]
        assert {"directive", "message"} <= set(properties), name
    assert tools["get_task"].annotations.read_only_hint is True  # type: ignore[union-attr]
    assert tools["record_failure"].annotations.read_only_hint is False  # type: ignore[union-attr]


async def test_third_identical_failure_over_stdio_escalates_and_pauses(db_path: str) -> None:
    with anyio.fail_after(30):
        # The default (auto) mode: what the SDK's own client negotiates.
        async with stdio_agent(db_path, mode="auto") as agent:
            started = await agent.call(
                "start_task", title="Fix the adder", task_id="stdio-loop", scope=["src/**"]
            )
            failures = await _three_identical_failures(agent, "stdio-loop")
            task = await agent.call("get_task", task_id="stdio-loop")

    assert started["status"] == "active"
    assert started["directive"] == "proceed"
    first, second, third = failures
    assert [f["failure"]["occurrence_count"] for f in failures] == [1, 2, 3]
    assert [f["failure"]["consecutive_count"] for f in failures] == [1, 2, 3]
    assert len({f["failure"]["fingerprint"] for f in failures}) == 1  # line is not in it
    assert first["escalation"] is None
    assert second["escalation"] is None
    assert first["directive"] == second["directive"] == "proceed"
    escalation = third["escalation"]
    assert escalation is not None
    assert escalation["type"] == "repeated_error"
    assert escalation["status"] == "pending"
    assert escalation["triggers"][0]["criteria"]
    assert third["directive"] == "pause"
    assert str(escalation["escalation_id"]) in third["message"]
    assert task["task"]["status"] == "paused"
    assert task["directive"] == "pause"
    assert task["pending_escalation"]["escalation_id"] == escalation["escalation_id"]


async def test_cli_answer_wakes_an_agent_waiting_over_stdio(db_path: str) -> None:
    """An answer written by another process ends the agent's wait: the call waits up to the
    longest wait there is, and returns, answered, well before it (the bound below is only a
    hang guard, shorter than that wait, so a wait that missed the answer fails the test)."""
    timings: dict[str, bool] = {}
    with anyio.fail_after(WAIT_MAX_SECONDS - 5):
        async with stdio_agent(db_path, mode="legacy") as agent:
            await agent.call("start_task", title="Waiting agent", task_id="sc-006")
            raised = await agent.call(
                "raise_escalation", task_id="sc-006", reason="Which database should I migrate?"
            )
            escalation_id = raised["escalation"]["escalation_id"]
            before = await agent.call("get_escalation", escalation_id=escalation_id)
            waited: dict[str, Any] = {}

            async def wait_for_answer() -> None:
                waited.update(
                    await agent.call(
                        "get_escalation", escalation_id=escalation_id, wait_seconds=WAIT_MAX_SECONDS
                    )
                )
                timings["answered"] = True

            async with anyio.create_task_group() as tg:
                tg.start_soon(wait_for_answer)
                # Every other task blocked: the request is on the server's stdin.
                await anyio.wait_all_tasks_blocked()
                assert "answered" not in timings
                # The operator's command, in this process: another one than the server's.
                code, _, err = await run_main(
                    [
                        "--db",
                        db_path,
                        "escalations",
                        "respond",
                        str(escalation_id),
                        "--guidance",
                        "Migrate the staging database only.",
                    ],
                    env=os.environ,
                )

    assert code == 0, err.decode()
    assert before["escalation"]["status"] == "pending"
    assert before["directive"] == "pause"
    # The call was already outstanding when the CLI started (checked inside the task group),
    # so the answer it returned was written while it waited, and it returned before its wait
    # ran out (the hang guard is shorter): the answer itself woke it.
    assert timings["answered"]
    answered = waited["escalation"]
    assert answered["status"] == "resolved"
    assert answered["response"]["response_type"] == "guidance"
    assert answered["response"]["content"] == "Migrate the staging database only."
    assert answered["delivered_at"] is not None
    assert waited["directive"] == "pause"  # answered, not yet acknowledged


async def test_fresh_server_process_sees_everything_an_earlier_process_wrote(db_path: str) -> None:
    with anyio.fail_after(45):
        # The earlier process is this one (a server in memory), closed before the next starts.
        async with connect(db_path, mode="legacy") as first:
            await first.call(
                "start_task",
                title="Persist me",
                specification="All of it survives a restart",
                task_id="durable",
                scope=["src/**"],
                baseline_pass_rate=0.5,
            )
            await first.call(
                "report_progress",
                task_id="durable",
                files_modified=["src/a.py", "src/b.py"],
                tests_passed=6,
                tests_failed=4,
                note="first attempt",
            )
            await first.call("report_progress", task_id="durable", note="read the logs")
            await _three_identical_failures(first, "durable")
            await first.call("start_task", title="Second task", task_id="durable-2")
            await first.call("raise_escalation", task_id="durable-2", reason="Need a decision")
            task_before = await first.call("get_task", task_id="durable")
            other_before = await first.call("get_task", task_id="durable-2")
            listed_before = await first.call("list_escalations", status="all")
        async with stdio_agent(db_path, mode="auto") as second:
            task_after = await second.call("get_task", task_id="durable")
            other_after = await second.call("get_task", task_id="durable-2")
            listed_after = await second.call("list_escalations", status="all")

    # The first process wrote what the test meant it to write...
    counters = task_before["counters"]
    assert counters["consecutive_same_error"] == 3
    assert counters["attempts_without_file_change"] == 1
    assert counters["verification_attempts"] == 1
    assert counters["files_modified"] == 2
    assert task_before["failure_occurrences"] == 3
    assert task_before["modified_files"] == ["src/a.py", "src/b.py"]
    assert len(task_before["test_history"]) == 1
    assert listed_before["total"] == 2
    # ...and a fresh process on the same file sees exactly that.
    assert task_after == task_before
    assert other_after == other_before
    assert listed_after == listed_before


async def test_stdout_carries_protocol_messages_only(db_path: str) -> None:
    with anyio.fail_after(30):
        # Closed stdin: the server starts, opens the store, and leaves without a word on stdout.
        idle = await anyio.run_process([str(SCRIPT), "--db", db_path], stdin=subprocess.DEVNULL, check=False)
        # A raw handshake-era session: every stdout line must be a JSON-RPC message.
        requests = [INITIALIZE, INITIALIZED, start_task_request(2, "raw")]
        lines: list[bytes] = []
        # stderr goes to the test's own stderr (captured by pytest), never into this pipe.
        async with await anyio.open_process([str(SCRIPT), "--db", db_path], stderr=None) as process:
            assert process.stdin is not None
            assert process.stdout is not None
            for request in requests:
                await process.stdin.send(json.dumps(request).encode() + b"\n")
            buffer = b""
            # Read until the answer to the tool call (id 2) has arrived, then close stdin.
            while not any(json.loads(line).get("id") == 2 for line in lines if line.strip()):
                buffer += await process.stdout.receive()
                *complete, buffer = buffer.split(b"\n")
                lines.extend(complete)
            await process.stdin.aclose()
            async for chunk in process.stdout:
                buffer += chunk
            lines.extend(buffer.split(b"\n"))
            returncode = await process.wait()

    assert idle.returncode == 0, idle.stderr.decode()
    assert idle.stdout.strip() == b"", f"non-protocol output on stdout: {idle.stdout!r}"
    assert returncode == 0
    messages = [json.loads(line) for line in lines if line.strip()]
    assert all(m.get("jsonrpc") == "2.0" for m in messages), messages
    by_id = {m["id"]: m for m in messages if "id" in m}
    assert set(by_id) == {1, 2}
    assert by_id[1]["result"]["serverInfo"]["name"] == "mcp-server-escalation"
    assert by_id[2]["result"]["structuredContent"]["task_id"] == "raw"
    assert by_id[2]["result"].get("isError") is not True


def test_serving_an_unusable_store_is_a_one_line_error(tmp_path: Path) -> None:
    garbage = tmp_path / "not-a-store.db"
    garbage.write_bytes(b"not sqlite" * 100)
    done = subprocess.run(
        [str(SCRIPT), "--db", str(garbage)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert done.stdout == ""
    # After the start-up log lines, the one error (wrapped to the width, behind "error: ").
    error = done.stderr[("\n" + done.stderr).index("\nerror: ") :]
    assert " ".join(error.split()) == f"error: store {garbage}: file is not a database"
    assert "Traceback" not in done.stderr


async def test_feedback_and_guidance_are_read_as_rendered_text_and_every_other_result_as_compact_json(
    db_path: str,
) -> None:
    """The model reads feedback and guidance as written; clients get every field structured.
    The model reads every other result as the client gets it, without indentation (fewer tokens)."""
    with anyio.fail_after(45):
        async with stdio_agent(db_path) as agent:
            await agent.call("start_task", title="Read me", task_id="reads")
            await _three_identical_failures(agent, "reads")
            await agent.call(
                "record_attempt", task_id="reads", step="main", status="rejected", feedback="a\nb"
            )
            rendered_results = {
                tool: await agent.client.call_tool(tool, {"task_id": "reads"})
                for tool in ("get_feedback", "get_guidance")
            }
            await agent.call("start_task", title="Compact ünïcode", task_id="compact", scope=["src/**"])
            results = [
                await agent.client.call_tool(
                    "record_failure", {"task_id": "compact", "message": "ValueError: bad input"}
                ),
                await agent.client.call_tool(
                    "report_progress", {"task_id": "compact", "files_modified": ["src/a.py"]}
                ),
                await agent.client.call_tool("check_edit", {"task_id": "compact", "paths": ["src/b.py"]}),
                await agent.client.call_tool("get_task", {"task_id": "compact"}),
            ]
    for tool, result in rendered_results.items():
        assert not result.is_error, tool
        assert result.structured_content is not None
        rendered = result.structured_content["rendered"]
        assert "TypeError: unsupported operand" in rendered, tool
        assert [block.text for block in result.content] == [rendered], tool  # type: ignore[union-attr]
    for result in results:
        assert not result.is_error
        [block] = result.content
        text = block.text  # type: ignore[union-attr]
        assert result.structured_content is not None
        whole = json.dumps(result.structured_content, ensure_ascii=False, separators=(",", ":"))
        if len(whole) <= JSON_TEXT_MAX:
            assert text == whole
        else:  # a long result travels once, as the structured content the text points to
            assert text.startswith(result.structured_content["message"])
    get_task = results[-1].structured_content
    assert get_task is not None
    assert get_task["task"]["title"] == "Compact ünïcode"
