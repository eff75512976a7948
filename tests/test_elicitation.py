"""Elicitation as an extra: a blocking escalation may ask the human in the client.

Driven through the SDK client with an elicitation callback (which is how a client declares
the capability), on the handshake era that hosts such as Claude Code speak. The question is
asked while the agent waits in ``get_escalation``; an accepted answer is an operator
response marked with the channel; anything else leaves the escalation pending.
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
from mcp_server_escalation.settings import ElicitationConfig
from operator_support import eventually, run_cli

pytestmark = pytest.mark.both_backends


class Human:
    """An elicitation callback that answers as told and records what it was shown."""

    def __init__(self, action: str = "accept", content: dict[str, Any] | None = None, *, hold: bool = False):
        self.action = action
        self.content = content
        self.hold = hold
        self.asked: list[ElicitRequestParams] = []
        self.withdrawn = 0

    async def __call__(self, _context: Any, params: ElicitRequestParams) -> ElicitResult:
        self.asked.append(params)
        if self.hold:  # a human who never answers: the form stays open until withdrawn
            try:
                await anyio.sleep_forever()
            finally:
                self.withdrawn += 1
        return ElicitResult(action=self.action, content=self.content)  # type: ignore[arg-type]


async def _blocking_question(agent: Agent, task_id: str) -> int:
    await agent.call("start_task", title="Wire the API", task_id=task_id)
    raised = await agent.call(
        "raise_escalation", task_id=task_id, reason="Which auth scheme?", question="OAuth or API keys?"
    )
    return int(raised["escalation"]["escalation_id"])


def _client(db_path: str, human: Human | None, *, mode: str = "legacy", **settings: Any) -> Client:
    server = build_server(make_settings(db_path, **settings))
    if human is None:
        return Client(server, mode=mode)  # type: ignore[arg-type]
    return Client(server, mode=mode, elicitation_callback=human)  # type: ignore[arg-type]


async def test_an_accepted_answer_is_recorded_as_an_operator_response_and_ends_the_wait(db_path: str) -> None:
    human = Human(content={"response_type": "guidance", "text": "Use OAuth with PKCE."})
    with anyio.fail_after(HUNG_AFTER):
        async with _client(db_path, human) as client:
            agent = Agent(client)
            escalation_id = await _blocking_question(agent, "e-accept")
            waited = await agent.call("get_escalation", escalation_id=escalation_id, wait_seconds=30)
            task = await agent.call("get_task", task_id="e-accept")

    (question,) = human.asked
    assert f"Escalation {escalation_id} (question from the agent) on task e-accept" in question.message
    assert "OAuth or API keys?" in question.message
    schema = question.requested_schema
    assert set(schema["properties"]) == {"response_type", "text"}
    offered = [choice["const"] for choice in schema["properties"]["response_type"]["oneOf"]]
    assert offered == ["approve", "guidance", "override", "terminate"]
    assert schema.get("required") == ["response_type"]  # the text is optional for some answers
    escalation = waited["escalation"]
    assert escalation["status"] == "resolved"
    assert escalation["response"]["response_type"] == "guidance"
    assert escalation["response"]["content"] == "Use OAuth with PKCE."
    assert escalation["response"]["responder"] == "elicitation:mcp"
    assert escalation["delivered_at"] is not None  # get_escalation handed it over
    assert waited["directive"] == "pause"  # answered, not yet acknowledged
    assert task["task"]["status"] == "paused"


async def test_a_question_with_options_offers_each_option_by_its_words(db_path: str) -> None:
    # The form named neither of the agent's options and required a text its own description
    # called optional for some answers. It offers the options, then exactly the answers the
    # escalation allows (those the CLI and the console offer: an agent's question may ask
    # for a permission, which an approval grants; withdrawing is the agent's own).
    human = Human(content={"response_type": "option-2"})
    with anyio.fail_after(HUNG_AFTER):
        async with _client(db_path, human) as client:
            agent = Agent(client)
            await agent.call("start_task", title="Wire the API", task_id="e-options")
            raised = await agent.call(
                "raise_escalation",
                task_id="e-options",
                reason="Which auth scheme?",
                question="Which one?",
                options=["OAuth with PKCE", "API keys per tenant"],
            )
            escalation_id = raised["escalation"]["escalation_id"]
            waited = await agent.call("get_escalation", escalation_id=escalation_id, wait_seconds=30)

    (question,) = human.asked
    assert "1. OAuth with PKCE; 2. API keys per tenant" in question.message
    answer = question.requested_schema["properties"]["response_type"]
    offered = {choice["const"]: choice["title"] for choice in answer["oneOf"]}
    allowed = [kind for kind in raised["escalation"]["response_options"] if kind != "withdraw"]
    assert list(offered) == ["option-1", "option-2", *allowed]
    assert "OAuth with PKCE" in offered["option-1"]
    assert "API keys per tenant" in offered["option-2"]
    assert "optional" in question.requested_schema["properties"]["text"]["description"]
    assert question.requested_schema.get("required") == ["response_type"]
    response = waited["escalation"]["response"]
    assert (response["response_type"], response["content"]) == ("guidance", "API keys per tenant")
    assert response["responder"] == "elicitation:mcp"


async def test_a_system_error_form_offers_no_approval_it_does_not_allow(db_path: str) -> None:
    human = Human(content={"response_type": "terminate"})
    with anyio.fail_after(HUNG_AFTER):
        async with _client(db_path, human) as client:
            agent = Agent(client)
            await agent.call("start_task", title="Wire the API", task_id="e-system")
            raised = await agent.call(
                "raise_escalation",
                task_id="e-system",
                reason="The sandbox lost its network",
                kind="system_error",
            )
            escalation_id = raised["escalation"]["escalation_id"]
            waited = await agent.call("get_escalation", escalation_id=escalation_id, wait_seconds=30)

    (question,) = human.asked
    answer = question.requested_schema["properties"]["response_type"]
    assert [choice["const"] for choice in answer["oneOf"]] == ["guidance", "override", "terminate"]
    assert "approve" not in answer["description"].lower()
    assert waited["escalation"]["response"]["response_type"] == "terminate"  # no text needed


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_a_declined_or_cancelled_form_leaves_the_escalation_pending_and_is_not_shown_again(
    db_path: str, action: str
) -> None:
    human = Human(action=action)
    with anyio.fail_after(HUNG_AFTER):
        async with _client(db_path, human) as client:
            agent = Agent(client)
            escalation_id = await _blocking_question(agent, f"e-{action}")
            first = await agent.call("get_escalation", escalation_id=escalation_id, wait_seconds=0.3)
            second = await agent.call("get_escalation", escalation_id=escalation_id, wait_seconds=0.3)

    assert len(human.asked) == 1
    for waited in (first, second):
        assert waited["escalation"]["status"] == "pending"
        assert waited["escalation"]["response"] is None
        assert waited["directive"] == "pause"


async def test_a_client_without_the_capability_is_never_asked_and_the_wait_works_as_before(
    db_path: str,
) -> None:
    with anyio.fail_after(HUNG_AFTER):
        async with _client(db_path, None) as client:
            agent = Agent(client)
            escalation_id = await _blocking_question(agent, "e-none")
            waited = await client.call_tool(
                "get_escalation", {"escalation_id": escalation_id, "wait_seconds": 0.3}
            )

    assert waited.is_error is False
    assert waited.structured_content["escalation"]["status"] == "pending"  # type: ignore[index]


async def test_an_unanswered_form_times_out_with_the_wait_and_is_asked_again_next_time(db_path: str) -> None:
    human = Human(hold=True)
    with anyio.fail_after(HUNG_AFTER):
        async with _client(db_path, human) as client:
            agent = Agent(client)
            escalation_id = await _blocking_question(agent, "e-timeout")
            first = await agent.call("get_escalation", escalation_id=escalation_id, wait_seconds=0.3)
            await eventually(lambda: human.withdrawn == 1, 60, "the open form was withdrawn")
            second = await agent.call("get_escalation", escalation_id=escalation_id, wait_seconds=0.3)

    assert first["escalation"]["status"] == second["escalation"]["status"] == "pending"
    assert len(human.asked) == 2


async def test_an_answer_from_the_cli_ends_the_wait_and_withdraws_the_open_form(
    db_path: str, tmp_path: Path
) -> None:
    human = Human(hold=True)
    home = tmp_path / "home"
    home.mkdir()
    with anyio.fail_after(30):
        async with _client(db_path, human) as client:
            agent = Agent(client)
            escalation_id = await _blocking_question(agent, "e-cli")
            async with anyio.create_task_group() as tg:
                results: list[dict[str, Any]] = []

                async def wait() -> None:
                    results.append(
                        await agent.call("get_escalation", escalation_id=escalation_id, wait_seconds=30)
                    )

                tg.start_soon(wait)
                await eventually(lambda: human.asked, 60, "the form is open")
                answer = ["escalations", "respond", str(escalation_id), "--override", "Use API keys"]
                code, _, err = await run_cli("--db", db_path, *answer, home=home)
            await eventually(lambda: human.withdrawn == 1, 60, "the open form was withdrawn")

    assert code == 0, err
    (waited,) = results
    assert waited["escalation"]["status"] == "resolved_with_override"
    assert waited["escalation"]["response"]["responder"].startswith("cli")


async def test_non_blocking_questions_and_mode_off_never_ask_in_either_era(db_path: str) -> None:
    human = Human(content={"response_type": "guidance", "text": "x"})
    with anyio.fail_after(30):
        async with _client(db_path, human) as client:
            agent = Agent(client)
            await agent.call("start_task", title="Wire the API", task_id="e-quiet")
            raised = await agent.call("raise_escalation", task_id="e-quiet", reason="FYI", blocking=False)
            non_blocking = await agent.call(
                "get_escalation", escalation_id=raised["escalation"]["escalation_id"], wait_seconds=0.3
            )
        # 2026-07-28 asks too (tests/test_elicitation_modern.py), but not when mode is off.
        async with _client(db_path, human, mode="auto", elicitation=ElicitationConfig(mode="off")) as client:
            agent = Agent(client)
            escalation_id = await _blocking_question(agent, "e-modern")
            modern = await agent.call("get_escalation", escalation_id=escalation_id, wait_seconds=0.3)
        async with _client(db_path, human, elicitation=ElicitationConfig(mode="off")) as client:
            agent = Agent(client)
            escalation_id = await _blocking_question(agent, "e-off")
            off = await agent.call("get_escalation", escalation_id=escalation_id, wait_seconds=0.3)

    assert human.asked == []
    for waited in (non_blocking, modern, off):
        assert waited["escalation"]["status"] == "pending"
