"""The server as the client packages people use see it, with their default settings.

Each client runs in an environment of its own (tests/client_envs.py: pinned releases from
PyPI, installed once into a cache folder) and drives the installed console script over stdio
through its own session objects, as its tool wrappers do; no model is called.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from client_envs import drive, drive_node
from operator_support import SCRIPT

pytestmark = pytest.mark.interop


def _nodes(schema: Any) -> list[dict[str, Any]]:
    """Every schema object inside ``schema``, itself included."""
    if isinstance(schema, list):
        return [node for item in schema for node in _nodes(item)]
    if not isinstance(schema, dict):
        return []
    return [schema, *(node for value in schema.values() for node in _nodes(value))]


def test_every_input_schema_converts_to_openai_strict_mode(tmp_path: Path) -> None:
    converted = drive("openai-agents", "strict_schemas.py", str(SCRIPT), str(tmp_path / "strict.db"))

    assert len(converted) == 16
    assert [name for name, tool in converted.items() if not tool["strict"]] == []
    for name, tool in converted.items():
        nodes = _nodes(tool["schema"])
        assert not [node for node in nodes if "$ref" in node or "$defs" in node], name
        objects = [node for node in nodes if "object" in (node.get("type") or [])]
        # No object open to any key: each says which keys it takes, and only those.
        assert all(node.get("additionalProperties") is False for node in objects), name
        assert all(node.get("properties") for node in objects), name


def _loop_steps(seen: dict[str, Any]) -> list[dict[str, Any]]:
    """The loop's steps, after checking that none raised and none stopped it."""
    steps: list[dict[str, Any]] = seen["steps"]
    assert [step for step in steps if "raised" in step or "stopped" in step] == []
    return steps


def _check_the_loop(steps: list[dict[str, Any]], tasks: int) -> None:
    """Each task went through the whole loop and every result said what it should."""
    calls = [step for step in steps if "tool" in step]
    starts = [n for n, step in enumerate(calls) if step["tool"] == "start_task"]
    assert len(starts) == tasks
    for begin, end in zip(starts, [*starts[1:], len(calls)], strict=True):
        one = calls[begin:end]
        tools = [step["tool"] for step in one]
        polls = [step["result"] for step in one if step["tool"] == "get_escalation"]
        assert tools[:4] == ["start_task", "record_failure", "record_failure", "record_failure"]
        assert tools[4 + len(polls) : 4 + len(polls) + 4] == [
            "acknowledge_response", "report_progress", "raise_escalation", "resolve_escalation"
        ]  # fmt: skip
        assert one[3]["result"]["directive"] == "pause"
        assert [poll["status"] for poll in polls][-1] == "resolved"
        assert all(poll["status"] == "pending" for poll in polls[:-1])
        assert polls[-1]["escalation"]["response"]["content"] == "Cast the input with int() first"
        acknowledged, progressed = one[4 + len(polls)], one[5 + len(polls)]
        assert acknowledged["result"]["directive"] == "proceed"  # the task resumes
        assert progressed["result"]["directive"] == "proceed"
        assert one[-1]["tool"] == "resolve_escalation"
        assert one[-1]["result"]["escalation"]["status"] == "withdrawn"
    assert [step["operator"] for step in steps if "operator" in step] == [0] * tasks


def test_openai_agents_with_its_defaults_follows_every_message_of_the_loop(tmp_path: Path) -> None:
    # MCPServerStdio's default request timeout is 5 s: a wait the messages asked for beyond
    # it ended the call with "Request 'tools/call' timed out", and the agent learned nothing.
    seen = drive("openai-agents", "agents_loop.py", str(SCRIPT), str(tmp_path / "agents.db"), "1")

    assert seen["timeout"] == 5  # the library's default, untouched
    steps = _loop_steps(seen)
    _check_the_loop(steps, tasks=1)
    # One connection throughout: it holds its task, and the plain withdrawal is accepted.
    assert [step for step in steps if "refused" in step] == []


def test_langchain_mcp_adapters_with_a_session_per_call_runs_the_whole_loop(tmp_path: Path) -> None:
    # Its default mode opens a session, a new server process, per tool call, and closes it on
    # the result: a notification written after that result broke its reader
    # (BrokenResourceError) on most calls that opened or answered an escalation, and no
    # connection ever held the task, so the agent could not withdraw its own question.
    seen = drive("langchain-mcp-adapters", "langchain_loop.py", str(SCRIPT), str(tmp_path / "lc.db"), "1")

    steps = _loop_steps(seen)
    _check_the_loop(steps, tasks=1)
    # No connection holds the task: the plain withdrawal is refused, and the refusal's advice
    # (name the agent_id given to start_task) is what works.
    (refused,) = [step["refused"] for step in steps if "refused" in step]
    assert "agent_id" in refused
    assert steps[-1]["arguments"]["agent_id"] == "agent-7"


def test_fastmcp_with_its_defaults_runs_the_whole_loop(tmp_path: Path) -> None:
    seen = drive("fastmcp", "fastmcp_loop.py", str(SCRIPT), str(tmp_path / "fastmcp.db"), "1")

    assert seen["protocol"] == "2026-07-28"  # its default: the modern protocol
    steps = _loop_steps(seen)
    _check_the_loop(steps, tasks=1)
    # Without fastmcp-tasks the client declares no tasks extension: the wait runs in the call.
    assert [step for step in steps if "task" in step] == []


def test_fastmcp_with_tasks_takes_the_wait_for_the_human_as_a_task(tmp_path: Path) -> None:
    # Its call_tool_task refused our waits ("did not run as a task"): the server declared no
    # tasks extension. Now the wait is a task, and the operator's CLI answer completes it.
    db = str(tmp_path / "fastmcp-tasks.db")
    seen = drive("fastmcp-tasks", "fastmcp_loop.py", str(SCRIPT), db, "1", "--tasks")

    steps = _loop_steps(seen)
    _check_the_loop(steps, tasks=1)
    (waited,) = [step for step in steps if step.get("tool") == "get_escalation"]
    assert waited["task"]["first"] == "working"  # returned at once, before the answer
    assert waited["task"]["last"] == "completed"
    assert waited["result"]["escalation"]["response"]["responder"].startswith("cli:")


def test_the_typescript_sdk_with_its_defaults_runs_the_whole_loop(tmp_path: Path) -> None:
    # @modelcontextprotocol/sdk's Client: a 60 s request timeout, no progress handler, every
    # structured result validated against the tool's output schema. The waits the messages
    # ask for ([waiting] seconds, 4 by default) fit well inside its timeout.
    seen = drive_node("typescript-sdk", "ts_loop.cjs", str(SCRIPT), str(tmp_path / "ts.db"))

    assert seen["timeout_ms"] == 60_000  # the library's default, untouched
    assert seen["tools"] == seen["with_output_schema"] == 16
    steps = _loop_steps(seen)
    _check_the_loop(steps, tasks=1)
    polls = [step["arguments"]["wait_seconds"] for step in steps if step.get("tool") == "get_escalation"]
    assert max(polls) * 1000 < seen["timeout_ms"]
    # One connection throughout: it holds its task, and the plain withdrawal is accepted.
    assert [step for step in steps if "refused" in step] == []


def test_a_client_declaring_tasks_on_every_call_waits_no_longer_than_it_asked(tmp_path: Path) -> None:
    # fastmcp-tasks declares the tasks extension on every call, so the plain wait every pause
    # message asks for became a task that only an answer completed: the call ran on for as
    # long as nobody answered. The wait asked for bounds it, task or not, and it ends as the
    # plain call's does: pending, with the same message to keep waiting.
    tasked = drive(
        "fastmcp-tasks", "fastmcp_wait.py", str(SCRIPT), str(tmp_path / "tasks.db"), "4", "--tasks"
    )
    plain = drive("fastmcp-tasks", "fastmcp_wait.py", str(SCRIPT), str(tmp_path / "plain.db"), "4")

    assert tasked["hung"] is False, tasked
    assert 3.5 <= tasked["seconds"] <= 4 + 3  # the wait, and at most a poll interval or two more
    assert 3.5 <= plain["seconds"] <= 4 + 3
    for seen in (tasked, plain):
        assert seen["result"]["status"] == "pending"
        assert seen["result"]["directive"] == "pause"
        assert "get_escalation(1, wait_seconds=4" in seen["raised_message"]

    def worded(seen: dict[str, Any]) -> str:
        return str(seen["result"]["message"]).replace(seen["result"]["escalation"]["task_id"], "TASK")

    assert worded(tasked) == worded(plain)
    assert "keep waiting with get_escalation(1, wait_seconds=4" in worded(tasked)
