"""Who may answer an escalation.

An agent-role server may only withdraw its own ask_human question; approving, overriding,
guiding and terminating are for a human, through the CLI or an operator-role server. A
refused answer changes nothing: the escalation stays pending and the task as it was.
"""

from __future__ import annotations

from typing import Any

import pytest

from conftest import Agent, connect

pytestmark = pytest.mark.both_backends

ANSWERS: dict[str, dict[str, Any]] = {
    "guidance": {"content": "Retry with a smaller batch"},
    "override": {"content": "Drop the cache layer and call the API directly"},
    "terminate": {"content": "no longer needed"},
    "approve": {"new_file_limit": 50, "content": "go ahead"},
    "withdraw": {},
}


async def ask_human(agent: Agent, task_id: str = "t1") -> dict[str, Any]:
    """The agent's own blocking question."""
    await agent.call("start_task", task_id=task_id, title="Migrate the cache", agent_id="agent-7")
    result = await agent.call(
        "raise_escalation",
        task_id=task_id,
        reason="The spec does not say whether stale entries may be served",
        question="May the cache serve stale entries during the migration?",
        options=["yes", "no"],
    )
    return result["escalation"]


async def repeated_error(agent: Agent, task_id: str = "t1") -> dict[str, Any]:
    """A trigger-raised escalation: the same error three times in a row."""
    await agent.call("start_task", task_id=task_id, title="Migrate the cache", agent_id="agent-7")
    result: dict[str, Any] = {}
    for _ in range(3):
        result = await agent.call(
            "record_failure", task_id=task_id, message="KeyError: 'ttl'", file="cache.py", line=12
        )
    return result["escalation"]


async def file_limit(agent: Agent, task_id: str = "t1") -> dict[str, Any]:
    """A trigger-raised escalation that may be approved: one file over a limit of 1."""
    await agent.call(
        "start_task",
        task_id=task_id,
        title="Migrate the cache",
        agent_id="agent-7",
        thresholds={"files_modified_exceeds": 1},
    )
    assert (await agent.call("check_edit", task_id=task_id, paths=["cache.py"]))["allowed"] is True
    return (await agent.call("check_edit", task_id=task_id, paths=["store.py"]))["escalation"]


RAISERS = {"ask_human": ask_human, "repeated_error": repeated_error, "file_limit": file_limit}


@pytest.mark.parametrize("kind", list(RAISERS))
@pytest.mark.parametrize("response_type", ["guidance", "override", "terminate", "approve"])
async def test_agent_role_cannot_answer_any_escalation_not_even_its_own(
    db_path: str, kind: str, response_type: str
) -> None:
    async with connect(db_path) as agent:
        escalation = await RAISERS[kind](agent)
        assert escalation["type"] == kind
        before = await agent.call("get_task", task_id="t1")

        text = await agent.error(
            "resolve_escalation",
            escalation_id=escalation["escalation_id"],
            response_type=response_type,
            **ANSWERS[response_type],
        )

        assert "agent role" in text
        assert "escalations respond" in text, "the error must say how a human answers"
        assert "--role operator" in text
        after = await agent.call("get_task", task_id="t1")
        assert after["task"] == before["task"]
        assert after["directive"] == "pause"
        kept = (await agent.call("get_escalation", escalation_id=escalation["escalation_id"]))["escalation"]
        assert kept["status"] == "pending"
        assert kept["response"] is None
        assert kept["revision"] == escalation["revision"]


async def test_agent_role_withdraws_its_own_question_and_the_task_resumes(db_path: str) -> None:
    async with connect(db_path) as agent:
        escalation = await ask_human(agent)
        assert (await agent.call("get_task", task_id="t1"))["directive"] == "pause"

        withdrawn = await agent.call(
            "resolve_escalation",
            escalation_id=escalation["escalation_id"],
            response_type="withdraw",
            content="found the answer in the ADR",
        )

        assert withdrawn["escalation"]["status"] == "withdrawn"
        assert withdrawn["escalation"]["response"]["response_type"] == "withdraw"
        assert withdrawn["task_status"] == "active"
        view = await agent.call("get_task", task_id="t1")
        assert view["directive"] == "proceed"
        assert view["pending_escalation"] is None
        assert (await agent.call("check_edit", task_id="t1", paths=["cache.py"]))["allowed"] is True


async def test_agent_role_cannot_withdraw_a_triggered_escalation(db_path: str) -> None:
    async with connect(db_path) as agent:
        escalation = await repeated_error(agent)
        before = await agent.call("get_task", task_id="t1")

        text = await agent.error(
            "resolve_escalation", escalation_id=escalation["escalation_id"], response_type="withdraw"
        )

        assert "agent role" in text
        assert "repeated_error" in text
        assert (await agent.call("get_task", task_id="t1"))["task"] == before["task"]
        kept = (await agent.call("get_escalation", escalation_id=escalation["escalation_id"]))["escalation"]
        assert kept["status"] == "pending"
        assert kept["response"] is None


@pytest.mark.parametrize(
    ("response_type", "status", "task_status"),
    [
        ("guidance", "resolved", "paused"),
        ("override", "resolved_with_override", "paused"),
        ("terminate", "resolved_with_termination", "terminated_by_human"),
        ("approve", "resolved_with_approval", "paused"),
        ("withdraw", "withdrawn", "active"),
    ],
)
async def test_operator_role_can_give_every_response_type(
    db_path: str, response_type: str, status: str, task_status: str
) -> None:
    async with connect(db_path) as agent, connect(db_path, role="operator") as operator:
        escalation = await ask_human(agent)
        assert escalation["response_options"] == ["approve", "guidance", "override", "terminate", "withdraw"]

        answered = await operator.call(
            "resolve_escalation",
            escalation_id=escalation["escalation_id"],
            response_type=response_type,
            responder="ops-on-call",
            **ANSWERS[response_type],
        )

        assert answered["escalation"]["status"] == status
        assert answered["escalation"]["response"]["response_type"] == response_type
        assert answered["escalation"]["response"]["responder"] == "ops-on-call"
        # Paused until the agent acknowledges the answer; a withdrawn question needs no reply.
        assert answered["task_status"] == task_status
        view = await agent.call("get_task", task_id="t1")
        assert view["task"]["status"] == task_status


@pytest.mark.parametrize("response_type", ["approve", "withdraw"])
async def test_response_types_the_escalation_does_not_offer_are_refused(
    db_path: str, response_type: str
) -> None:
    async with connect(db_path) as agent, connect(db_path, role="operator") as operator:
        escalation = await repeated_error(agent)
        assert response_type not in escalation["response_options"]
        before = await agent.call("get_task", task_id="t1")

        text = await operator.error(
            "resolve_escalation",
            escalation_id=escalation["escalation_id"],
            response_type=response_type,
            **ANSWERS[response_type],
        )

        assert "response_type:" in text
        assert "repeated_error" in text
        assert "guidance" in text, "the error must list the options there are"
        assert (await agent.call("get_task", task_id="t1"))["task"] == before["task"]
        kept = (await operator.call("get_escalation", escalation_id=escalation["escalation_id"]))[
            "escalation"
        ]
        assert kept["status"] == "pending"
        assert kept["response"] is None


async def test_operator_reading_an_answer_does_not_mark_it_delivered_to_the_agent(db_path: str) -> None:
    async with connect(db_path) as agent, connect(db_path, role="operator") as operator:
        escalation_id = (await ask_human(agent))["escalation_id"]
        await operator.call(
            "resolve_escalation", escalation_id=escalation_id, response_type="guidance", content="Serve stale"
        )

        seen = await operator.call("get_escalation", escalation_id=escalation_id)
        assert seen["escalation"]["response"]["content"] == "Serve stale"
        assert seen["escalation"]["delivered_at"] is None

        received = await agent.call("get_escalation", escalation_id=escalation_id)
        assert received["escalation"]["delivered_at"] is not None


async def test_an_agent_cannot_withdraw_the_question_of_a_task_it_does_not_hold(db_path: str) -> None:
    async with connect(db_path) as asker, connect(db_path) as other:
        escalation = await ask_human(asker)
        await other.call("start_task", task_id="t2", title="Another task", agent_id="agent-9")

        text = await other.error(
            "resolve_escalation", escalation_id=escalation["escalation_id"], response_type="withdraw"
        )

        assert "does not hold" in text
        assert "'t1'" in text
        assert "start_task" in text, "the error must say how an agent comes to hold its task"
        kept = (await asker.call("get_escalation", escalation_id=escalation["escalation_id"]))["escalation"]
        assert kept["status"] == "pending"
        assert (await asker.call("get_task", task_id="t1"))["directive"] == "pause"


async def test_an_agent_resuming_its_task_in_a_new_connection_may_withdraw_its_question(db_path: str) -> None:
    async with connect(db_path) as before_restart:
        escalation = await ask_human(before_restart)

    async with connect(db_path) as after_restart:
        refused = await after_restart.error(
            "resolve_escalation", escalation_id=escalation["escalation_id"], response_type="withdraw"
        )
        await after_restart.call("start_task", task_id="t1", title="Migrate the cache", agent_id="agent-7")
        withdrawn = await after_restart.call(
            "resolve_escalation", escalation_id=escalation["escalation_id"], response_type="withdraw"
        )

    assert "does not hold" in refused
    assert withdrawn["escalation"]["status"] == "withdrawn"


async def test_an_agent_with_a_session_per_call_withdraws_its_question_by_its_agent_id(db_path: str) -> None:
    # Clients such as langchain-mcp-adapters open a new session (a new server process on
    # stdio) for every call: no connection ever holds the task.
    async with connect(db_path) as asking:
        escalation = await ask_human(asking)
    async with connect(db_path) as someone:
        wrong = await someone.error(
            "resolve_escalation",
            escalation_id=escalation["escalation_id"],
            response_type="withdraw",
            agent_id="agent-8",
        )
    async with connect(db_path) as withdrawing:
        withdrawn = await withdrawing.call(
            "resolve_escalation",
            escalation_id=escalation["escalation_id"],
            response_type="withdraw",
            agent_id="agent-7",
        )
    async with connect(db_path) as after:
        task = await after.call("get_task", task_id="t1")

    assert "agent_id" in wrong
    assert withdrawn["escalation"]["status"] == "withdrawn"
    assert withdrawn["escalation"]["response"]["responder"] == "agent"
    assert task["directive"] == "proceed"


async def test_an_agent_whose_task_was_taken_over_no_longer_holds_it(db_path: str) -> None:
    async with connect(db_path) as first, connect(db_path) as successor:
        escalation = await ask_human(first)
        taken = await successor.call(
            "start_task", task_id="t1", title="Migrate the cache", agent_id="agent-8"
        )
        assert taken["reassigned"] is True

        text = await first.error(
            "resolve_escalation", escalation_id=escalation["escalation_id"], response_type="withdraw"
        )
        withdrawn = await successor.call(
            "resolve_escalation", escalation_id=escalation["escalation_id"], response_type="withdraw"
        )

    assert "does not hold" in text
    assert withdrawn["escalation"]["status"] == "withdrawn"
    async with connect(db_path) as returning:
        # Named by its old agent_id, the first agent holds nothing any more either.
        await returning.call("start_task", task_id="t2", title="Another", agent_id="agent-7")
        asked = await returning.call("raise_escalation", task_id="t2", reason="Which cache?")
        await returning.call("start_task", task_id="t2", title="Another", agent_id="agent-8")
        refused = await first_agent_elsewhere(db_path, asked["escalation"]["escalation_id"])
    assert "agent_id" in refused


async def first_agent_elsewhere(db_path: str, escalation_id: int) -> str:
    """agent-7's withdrawal of ``escalation_id`` on a connection of its own: the refusal."""
    async with connect(db_path) as elsewhere:
        return await elsewhere.error(
            "resolve_escalation", escalation_id=escalation_id, response_type="withdraw", agent_id="agent-7"
        )


@pytest.mark.parametrize(
    ("given", "recorded"),
    [
        ("operator:carol", "agent:operator:carol"),
        ("cli:alice", "agent:cli:alice"),
        ("agent:agent-7", "agent:agent-7"),
        (None, "agent"),
    ],
)
async def test_a_responder_name_from_an_agent_is_recorded_as_an_agents(
    db_path: str, given: str | None, recorded: str
) -> None:
    async with connect(db_path) as agent:
        escalation = await ask_human(agent)
        named = {"responder": given} if given else {}

        withdrawn = await agent.call(
            "resolve_escalation", escalation_id=escalation["escalation_id"], response_type="withdraw", **named
        )
    async with connect(db_path, role="operator") as operator:
        seen = await operator.call("get_escalation", escalation_id=escalation["escalation_id"])

    assert withdrawn["escalation"]["response"]["responder"] == recorded
    assert seen["escalation"]["response"]["responder"] == recorded, "as stored, not only as returned"
