"""Every tool answers a refusal of the service as a tool error the model reads.

The registry does it once for all tools (``adapters/registry.py``); these tests call every
served tool through the real in-memory SDK client, so a tool served some other way, without
that handling, shows here as a crash whose text the SDK hides from the model.
"""

from __future__ import annotations

from typing import Any

import pytest

from conftest import Agent, connect
from mcp_server_escalation.errors import StoreUnwritable
from mcp_server_escalation.store.db import Database

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
REACHING_THE_STORE: dict[str, dict[str, Any]] = {"update_failure": {"status": "resolved"}}


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


async def test_a_store_refusal_in_any_tool_reaches_the_model_as_a_tool_error(
    db_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    refusal = "the disk is full: the store cannot grow"

    async def refuse(*_: Any) -> Any:
        raise StoreUnwritable(refusal)

    async with connect(db_path) as agent:
        tools = (await agent.client.list_tools()).tools
        # As a full disk would, from now on: every read and write of the store is refused.
        monkeypatch.setattr(Database, "read", refuse)
        monkeypatch.setattr(Database, "write", refuse)
        for tool in tools:
            properties = tool.input_schema.get("properties", {})
            arguments = {name: _minimal(properties[name]) for name in tool.input_schema.get("required", [])}
            arguments |= REACHING_THE_STORE.get(tool.name, {})
            result = await agent.client.call_tool(tool.name, arguments)
            assert result.is_error, tool.name
            assert result.content[0].text == f"Error executing tool {tool.name}: {refusal}"  # type: ignore[union-attr]
