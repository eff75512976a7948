"""A task that ended (terminated by a human, completed, abandoned) answers every agent write
with a normal result: directive ``stop`` and its message, and nothing stored.

A model reads an ``isError`` result as a call to retry differently, so the contract is a
plain result that says stop. Each test drives the real SDK client in memory against a real
SQLite file, and compares a dump of the whole store before and after the call.
"""

from __future__ import annotations

from typing import Any

import pytest

from conftest import Agent, connect
from store_contents import contents

pytestmark = pytest.mark.both_backends

TASK = "ended-1"
ENDINGS = ["terminated_by_human", "completed", "abandoned"]

# Every agent-facing tool that writes for a task, with arguments that would store something
# on a live task. update_failure is not here: it revises a failure record, which guidance
# shares across the tasks of a project, so it stays open after its task ended.
WRITES: list[tuple[str, dict[str, Any]]] = [
    ("record_failure", {"message": "TypeError: callback is not a function", "line": 7}),
    ("report_progress", {"files_modified": ["src/a.py"], "tests_passed": 3, "tests_failed": 1}),
    ("check_edit", {"paths": ["src/a.py"]}),
    ("raise_escalation", {"reason": "May I go on?", "question": "Go on?"}),
    ("record_attempt", {"step": "gen_patch", "status": "rejected", "feedback": "patch does not apply"}),
    ("report_review", {"stage": "ci", "status": "fail", "failure_reason": "lint failed"}),
    ("end_task", {"outcome": "completed", "note": "done after all"}),
    ("end_task", {"outcome": "abandoned", "note": "giving up twice"}),
    ("start_task", {"title": "Try once more", "agent_id": "agent"}),
]


def _store(db_path: str) -> list[Any]:
    return contents(db_path)


async def _end(agent: Agent, db_path: str, ending: str) -> int:
    """Start the task, leave an unanswered non-blocking question, end the task as ``ending``
    (a termination is the operator's, on a session of their own).

    Returns the question's id: ending the task closed it without an answer.
    """
    await agent.call("start_task", task_id=TASK, title="Port the client", agent_id="agent")
    question = await agent.call("raise_escalation", task_id=TASK, reason="Which API version?", blocking=False)
    if ending == "terminated_by_human":
        held = await agent.call("raise_escalation", task_id=TASK, reason="Should I rewrite the module?")
        async with connect(db_path, role="operator") as operator:
            await operator.call(
                "resolve_escalation",
                escalation_id=held["escalation"]["escalation_id"],
                response_type="terminate",
                content="requirements changed",
            )
    else:
        await agent.call("end_task", task_id=TASK, outcome=ending)
    assert (await agent.call("get_task", task_id=TASK))["task"]["status"] == ending
    return int(question["escalation"]["escalation_id"])


# How the model reads each status: in words, never the store's key.
SAID = {"terminated_by_human": "terminated by a human", "completed": "completed", "abandoned": "abandoned"}


def _stop_message(ending: str) -> str:
    return f"Task {TASK} is {SAID[ending]}: stop all work on it and make no further changes."


@pytest.mark.parametrize("ending", ENDINGS)
@pytest.mark.parametrize(("tool", "arguments"), WRITES, ids=[t + a.get("outcome", "") for t, a in WRITES])
async def test_a_write_on_an_ended_task_says_stop_as_a_normal_result_and_stores_nothing(
    db_path: str, ending: str, tool: str, arguments: dict[str, Any]
) -> None:
    async with connect(db_path) as agent:
        await _end(agent, db_path, ending)
        before = _store(db_path)
        result = await agent.client.call_tool(tool, {"task_id": TASK, **arguments})
        after = _store(db_path)

    assert result.is_error is False, result.content
    answer = result.structured_content
    assert answer is not None
    assert answer["directive"] == "stop"
    assert answer["message"] == _stop_message(ending)
    assert after == before


@pytest.mark.parametrize("ending", ENDINGS)
async def test_acknowledging_a_question_its_ended_task_closed_says_stop_and_stores_nothing(
    db_path: str, ending: str
) -> None:
    async with connect(db_path) as agent:
        question = await _end(agent, db_path, ending)
        before = _store(db_path)
        result = await agent.client.call_tool("acknowledge_response", {"escalation_id": question})
        after = _store(db_path)

    assert result.is_error is False, result.content
    answer = result.structured_content
    assert answer is not None
    assert answer["directive"] == "stop"
    assert answer["message"] == _stop_message(ending)
    assert answer["task_status"] == ending
    assert after == before


async def test_nothing_recorded_on_an_ended_task_shows_as_null_records(db_path: str) -> None:
    async with connect(db_path) as agent:
        await _end(agent, db_path, "abandoned")
        failure = await agent.call("record_failure", task_id=TASK, message="ValueError: bad")
        raised = await agent.call("raise_escalation", task_id=TASK, reason="Help?")
        attempt = await agent.call("record_attempt", task_id=TASK, step="s", status="accepted")
        review = await agent.call("report_review", task_id=TASK, stage="ci", status="fail")
        ended = await agent.call("end_task", task_id=TASK, outcome="completed")

    assert (failure["failure"], failure["escalation"]) == (None, None)
    assert raised["escalation"] is None
    assert (attempt["attempt_number"], attempt["escalation"]) == (None, None)
    assert (review["finding"], review["cleared"]) == (None, 0)
    assert (ended["status"], ended["closed_escalations"]) == ("abandoned", [])
