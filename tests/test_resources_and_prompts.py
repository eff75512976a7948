"""MCP resources and prompts: read-only views on the store, unknown ids are not found."""

from __future__ import annotations

import json

import pytest
from mcp import MCPError

from conftest import connect

pytestmark = pytest.mark.both_backends


async def _escalated(db_path: str) -> int:
    async with connect(db_path) as agent:
        await agent.call("start_task", title="t", task_id="res-1")
        for _ in range(3):
            result = await agent.call("record_failure", task_id="res-1", message="boom")
    return int(result["escalation"]["escalation_id"])


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_resources_show_pending_escalations_tasks_and_feedback(db_path: str, mode: str) -> None:
    escalation_id = await _escalated(db_path)
    async with connect(db_path, mode=mode) as agent:
        listed = await agent.client.list_resources()
        templates = await agent.client.list_resource_templates()
        pending = await agent.client.read_resource("escalation://pending")
        one = await agent.client.read_resource(f"escalation://{escalation_id}")
        task = await agent.client.read_resource("task://res-1")
        feedback = await agent.client.read_resource("task://res-1/feedback/main")
    assert [str(r.uri) for r in listed.resources] == ["escalation://pending"]
    assert {t.uri_template for t in templates.resource_templates} == {
        "escalation://{escalation_id}",
        "task://{task_id}",
        "task://{task_id}/feedback/{step}",
        "failure://{failure_id}",
    }
    summaries = json.loads(pending.contents[0].text)["escalations"]  # type: ignore[union-attr]
    assert [s["escalation_id"] for s in summaries] == [escalation_id]
    assert json.loads(one.contents[0].text)["type"] == "repeated_error"  # type: ignore[union-attr]
    assert json.loads(task.contents[0].text)["task"]["status"] == "paused"  # type: ignore[union-attr]
    assert "HUMAN RESPONSES" not in feedback.contents[0].text  # type: ignore[union-attr]


@pytest.mark.parametrize("uri", ["escalation://999", "task://nope", "task://nope/feedback/main"])
async def test_an_unknown_id_is_resource_not_found(db_path: str, uri: str) -> None:
    async with connect(db_path, mode="legacy") as agent:
        with pytest.raises(MCPError) as caught:
            await agent.client.read_resource(uri)
    assert caught.value.error.code == -32602
    assert "no " in caught.value.error.message


async def test_prompts_are_listed_with_their_described_arguments(db_path: str) -> None:
    async with connect(db_path, mode="legacy") as agent:
        listed = await agent.client.list_prompts()
    described = {p.name: {a.name: bool(a.description) for a in p.arguments or []} for p in listed.prompts}
    assert described == {
        "retry_with_feedback": {"task_id": True, "step": True},
        "fix_review_findings": {"task_id": True},
        "escalation_briefing": {"escalation_id": True},
        "resume_after_response": {"escalation_id": True},
    }
    assert all(p.description for p in listed.prompts)


async def test_a_prompt_for_an_unknown_escalation_is_an_error_naming_it(db_path: str) -> None:
    async with connect(db_path, mode="legacy") as agent:
        with pytest.raises(MCPError) as caught:
            await agent.client.get_prompt("escalation_briefing", {"escalation_id": "4242"})
    assert "4242" in caught.value.error.message


async def test_resume_prompt_before_any_answer_says_to_wait(db_path: str) -> None:
    escalation_id = await _escalated(db_path)
    async with connect(db_path, mode="legacy") as agent:
        prompt = await agent.client.get_prompt("resume_after_response", {"escalation_id": str(escalation_id)})
    text = prompt.messages[0].content.text  # type: ignore[union-attr]
    assert "has no human response" in text
    assert f"get_escalation({escalation_id}" in text


@pytest.mark.parametrize("value", ["abc", "0", "-3", ""])
async def test_a_prompt_with_a_malformed_escalation_id_says_so(db_path: str, value: str) -> None:
    async with connect(db_path, mode="legacy") as agent:
        with pytest.raises(MCPError) as caught:
            await agent.client.get_prompt("resume_after_response", {"escalation_id": value})
    assert "escalation_id" in caught.value.error.message
