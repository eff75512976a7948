"""Every tool answers a refusal of the service as a tool error the model reads.

The registry does it once for all tools (``adapters/mcp/registry.py``); these tests call every
served tool through the real in-memory SDK client, so a tool served some other way, without
that handling, shows here as a crash whose text the SDK hides from the model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conftest import Agent, connect
from store_faults import read_only

pytestmark = pytest.mark.both_backends

# One call per tool that its service refuses, and the words of the refusal.
REFUSED: dict[str, tuple[dict[str, Any], str]] = {
    "end_task": ({"task_id": "nope", "outcome": "abandoned"}, "no task with id 'nope'"),
    "get_task": ({"task_id": "nope"}, "no task with id 'nope'"),
    "record_failure": ({"task_id": "nope", "message": "boom"}, "no task with id 'nope'"),
    "report_progress": ({"task_id": "nope"}, "no task with id 'nope'"),
    "check_edit": ({"task_id": "nope", "paths": ["a.py"]}, "no task with id 'nope'"),
    "raise_escalation": ({"task_id": "nope", "reason": "why"}, "no task with id 'nope'"),
    "get_escalation": ({"escalation_id": 99}, "99"),
    "acknowledge_response": ({"escalation_id": 99}, "99"),
    "resolve_escalation": ({"escalation_id": 99, "response_type": "withdraw"}, "99"),
    "record_attempt": ({"task_id": "nope", "step": "s", "status": "accepted"}, "no task with id 'nope'"),
    "report_review": ({"task_id": "nope", "stage": "s", "status": "success"}, "no task with id 'nope'"),
    "get_feedback": ({"task_id": "nope"}, "no task with id 'nope'"),
    "get_guidance": ({"task_id": "nope"}, "no task with id 'nope'"),
    "update_failure": ({"failure_id": "F-99", "status": "resolved"}, "F-99"),
}
# Tools whose service accepts every valid call: starting (or resuming) a task, and listing.
NEVER_REFUSED = {"start_task", "list_escalations"}


async def _served(agent: Agent) -> set[str]:
    return {tool.name for tool in (await agent.client.list_tools()).tools}


async def test_every_tools_refusal_reaches_the_model_as_a_tool_error_with_its_words(db_path: str) -> None:
    async with connect(db_path) as agent:
        assert set(REFUSED) | NEVER_REFUSED == await _served(agent)
        for tool, (arguments, words) in REFUSED.items():
            text = await agent.error(tool, **arguments)
            assert text.startswith(f"Error executing tool {tool}: "), text
            assert words in text, (tool, text)


# What a call needs beyond its required arguments to reach the store.
REACHING_THE_STORE: dict[str, dict[str, Any]] = {
    "update_failure": {"failure_id": "F-1", "status": "resolved"},
    "resolve_escalation": {"escalation_id": 2, "response_type": "guidance", "content": "Go left"},
    "end_task": {"outcome": "abandoned"},
    # a paused task's edit is refused without writing; an active task's is counted
    "check_edit": {"task_id": "b"},
}


def _minimal(schema: dict[str, Any]) -> Any:
    """The simplest value a (flattened) argument schema accepts."""
    if "enum" in schema:
        return schema["enum"][0]
    if "anyOf" in schema:
        return _minimal(next(s for s in schema["anyOf"] if s.get("type") != "null"))
    kind = schema.get("type")
    if kind == "array":
        return ["a.py"]
    if kind in ("integer", "number"):
        return max(1, schema.get("minimum", 1))
    if kind == "boolean":
        return True
    if kind == "object":
        return {}
    return "a"


@pytest.mark.sqlite_only  # makes the SQLite file refuse writes
async def test_a_store_refusal_in_any_writing_tool_reaches_the_model_as_a_tool_error(db_path: str) -> None:
    async with connect(db_path) as agent:
        tools = (await agent.client.list_tools()).tools
        # What the calls name exists and is in the state the call needs, so each gets as
        # far as writing: escalation 1 answered (to acknowledge), task b active (to check an
        # edit), escalation 2 pending (for the operator to answer).
        await agent.call("start_task", title="Refused", task_id="a")
        await agent.call("record_failure", task_id="a", message="boom")
        await agent.call("raise_escalation", task_id="a", reason="why")
        await agent.call("start_task", title="Active", task_id="b")
        await agent.call("start_task", title="Asking", task_id="c")
        await agent.call("raise_escalation", task_id="c", reason="which way?")
    async with connect(db_path, role="operator") as operator:
        await operator.call("resolve_escalation", escalation_id=1, response_type="guidance", content="Go on")
    writing = [t for t in tools if not (t.annotations and t.annotations.read_only_hint)]
    assert len(writing) >= 10
    # The store's file refuses writes (a read-only file system): every writing tool meets
    # the store's refusal.
    answered: dict[str, str] = {}
    with read_only(Path(db_path)):
        async with connect(db_path) as agent, connect(db_path, role="operator") as operator:
            for tool in writing:
                properties = tool.input_schema.get("properties", {})
                required = tool.input_schema.get("required", [])
                arguments = {name: _minimal(properties[name]) for name in required}
                arguments |= REACHING_THE_STORE.get(tool.name, {})
                caller = operator if tool.name == "resolve_escalation" else agent
                result = await caller.client.call_tool(tool.name, arguments)
                text = result.content[0].text  # type: ignore[union-attr]
                answered[tool.name] = text if result.is_error else "(no error)"
    for tool_name, text in answered.items():
        assert text.startswith(f"Error executing tool {tool_name}: "), text
        assert "is read-only" in text, (tool_name, text)
