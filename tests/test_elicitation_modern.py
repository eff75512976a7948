"""Asking the human in the client on 2026-07-28 (adapters/mcp/elicitation_modern.py).

The SDK client in its default mode lands on 2026-07-28; with an elicitation callback it
declares the capability. A ``get_escalation`` that waits on a pending blocking escalation is
answered with an ``InputRequiredResult``; the client shows the form and retries with the
answer, as the SDK's ``call_tool`` does by itself. The same rules as the handshake era's form:
an answer from the CLI first wins, a stale form answer is refused, a decline is remembered.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.types import ElicitRequestParams, ElicitResult

from bounds import HUNG_AFTER
from conftest import Agent, make_settings
from mcp_server_escalation.adapters.composition.server import build_server
from operator_support import run_cli

GUIDANCE = {"response_type": "guidance", "text": "Use OAuth with PKCE."}


class Human:
    """An elicitation callback: answers as told (after ``meanwhile``), records what it saw."""

    def __init__(self, action: str = "accept", content: dict[str, Any] | None = None, meanwhile: Any = None):
        self.action = action
        self.content = content
        self.meanwhile = meanwhile
        self.asked: list[ElicitRequestParams] = []

    async def __call__(self, _context: Any, params: ElicitRequestParams) -> ElicitResult:
        self.asked.append(params)
        if self.meanwhile is not None:
            await self.meanwhile()
        return ElicitResult(action=self.action, content=self.content)  # type: ignore[arg-type]


async def _blocking_question(agent: Agent, task_id: str) -> int:
    await agent.call("start_task", title="Wire the API", task_id=task_id)
    raised = await agent.call(
        "raise_escalation", task_id=task_id, reason="Which auth scheme?", question="OAuth or API keys?"
    )
    return int(raised["escalation"]["escalation_id"])


def _client(db_path: str, human: Human) -> Client:
    return Client(build_server(make_settings(db_path)), elicitation_callback=human)  # type: ignore[arg-type]


async def test_the_question_is_asked_through_input_required_and_the_answer_recorded(db_path: str) -> None:
    human = Human(content=GUIDANCE)
    with anyio.fail_after(HUNG_AFTER):
        async with _client(db_path, human) as client:
            era = client.protocol_version
            agent = Agent(client)
            escalation_id = await _blocking_question(agent, "m-accept")
            waited = await agent.call("get_escalation", escalation_id=escalation_id, wait_seconds=3)
            again = await agent.call("get_escalation", escalation_id=escalation_id, wait_seconds=3)

    assert era == "2026-07-28"
    (question,) = human.asked  # answered: not asked again
    assert f"Escalation {escalation_id} (question from the agent) on task m-accept" in question.message
    assert set(question.requested_schema["properties"]) == {"response_type", "text"}
    escalation = waited["escalation"]
    assert escalation["status"] == "resolved"
    assert escalation["response"]["content"] == "Use OAuth with PKCE."
    assert escalation["response"]["responder"].startswith("elicitation:")
    assert waited["directive"] == "pause"  # answered, not yet acknowledged
    assert again["escalation"]["status"] == "resolved"


async def test_the_retried_form_offers_the_agents_options_and_takes_one_with_added_text(db_path: str) -> None:
    # The InputRequiredResult's form named neither option and required a text its own
    # description called optional.
    human = Human(content={"response_type": "option-1", "text": "Keep the tokens short-lived."})
    with anyio.fail_after(HUNG_AFTER):
        async with _client(db_path, human) as client:
            agent = Agent(client)
            await agent.call("start_task", title="Wire the API", task_id="m-options")
            raised = await agent.call(
                "raise_escalation",
                task_id="m-options",
                reason="Which auth scheme?",
                question="Which one?",
                options=["OAuth with PKCE", "API keys per tenant"],
            )
            escalation_id = raised["escalation"]["escalation_id"]
            waited = await agent.call("get_escalation", escalation_id=escalation_id, wait_seconds=3)

    (question,) = human.asked
    assert "1. OAuth with PKCE; 2. API keys per tenant" in question.message
    schema = question.requested_schema
    offered = {choice["const"]: choice["title"] for choice in schema["properties"]["response_type"]["oneOf"]}
    assert list(offered) == ["option-1", "option-2", "approve", "guidance", "override", "terminate"]
    assert "OAuth with PKCE" in offered["option-1"]
    assert "API keys per tenant" in offered["option-2"]
    assert schema.get("required") == ["response_type"]
    response = waited["escalation"]["response"]
    assert response["response_type"] == "guidance"
    assert response["content"] == "OAuth with PKCE\n\nKeep the tokens short-lived."


async def test_an_answer_from_the_cli_first_wins_over_the_form(db_path: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    answered: list[int] = []

    async def operator_answers_first() -> None:
        code, _, err = await run_cli(
            "--db", db_path, "escalations", "respond", "1", "--guidance", "API keys, from the vault",
            home=home,
        )  # fmt: skip
        assert code == 0, err
        answered.append(code)

    human = Human(content=GUIDANCE, meanwhile=operator_answers_first)
    with anyio.fail_after(HUNG_AFTER):
        async with _client(db_path, human) as client:
            agent = Agent(client)
            escalation_id = await _blocking_question(agent, "m-cli")
            waited = await agent.call("get_escalation", escalation_id=escalation_id, wait_seconds=3)

    assert escalation_id == 1
    assert answered == [0]
    response = waited["escalation"]["response"]
    assert response["content"] == "API keys, from the vault"  # the form's answer was refused
    assert response["responder"].startswith("cli:")


async def test_a_form_answer_to_an_escalation_that_changed_since_is_refused(db_path: str) -> None:
    failure = {"task_id": "m-stale", "message": "TypeError: bad operand", "file": "a.py", "line": 3}

    async def the_error_again() -> None:  # new evidence while the form is open
        async with _client(db_path, Human()) as other:
            await Agent(other).call("record_failure", **failure)

    human = Human(content=GUIDANCE, meanwhile=the_error_again)
    with anyio.fail_after(HUNG_AFTER):
        async with _client(db_path, human) as client:
            agent = Agent(client)
            await agent.call("start_task", title="Fix the adder", task_id="m-stale")
            fired = [await agent.call("record_failure", **failure) for _ in range(3)][-1]
            escalation_id = fired["escalation"]["escalation_id"]
            waited = await agent.call("get_escalation", escalation_id=escalation_id, wait_seconds=0.5)

    assert len(human.asked) == 1
    assert waited["revision"] > fired["escalation"]["revision"]
    assert waited["escalation"]["status"] == "pending"  # answered on what the human did not see
    assert waited["escalation"]["response"] is None


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_a_declined_form_is_remembered_and_not_shown_again(db_path: str, action: str) -> None:
    human = Human(action=action)
    with anyio.fail_after(HUNG_AFTER):
        async with _client(db_path, human) as client:
            agent = Agent(client)
            escalation_id = await _blocking_question(agent, f"m-{action}")
            first = await agent.call("get_escalation", escalation_id=escalation_id, wait_seconds=0.3)
            second = await agent.call("get_escalation", escalation_id=escalation_id, wait_seconds=0.3)

    assert len(human.asked) == 1
    assert first["escalation"]["status"] == second["escalation"]["status"] == "pending"
