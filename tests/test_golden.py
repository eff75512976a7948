"""Golden outputs: prompts are versioned and regression-tested.

The rendered feedback and every MCP prompt for one fixed scenario on a fixed clock must
match the files in tests/golden/ exactly. After an intended wording change, regenerate
with ``UPDATE_GOLDEN=1 python -m pytest tests/test_golden.py`` and review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import Agent, FakeClock, connect

GOLDEN = Path(__file__).parent / "golden"


def _check(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert path.read_text(encoding="utf-8") == text, f"{name} differs from tests/golden/{name}"


async def _scenario(agent: Agent, clock: FakeClock) -> int:
    """A task with a stagnation cycle, retries, findings and an answered escalation."""
    await agent.call(
        "start_task",
        title="Fix login redirect",
        task_id="golden",
        specification="Login must land on /home",
        scope=["src/auth/**"],
    )
    for n, text in enumerate(
        (
            "test_login: expected 302 got 500",
            "test_login: expected 302 got 500",
            "test_login: expected 302 got 502",
        )
    ):
        clock.advance(minutes=1)
        await agent.call(
            "record_attempt",
            task_id="golden",
            step="gen_patch",
            status="rejected",
            feedback=text,
            guard="pytest",
            artifact=f"variant {n}: patch redirect()",
            upstream=["localise_issue"],
        )
    clock.advance(minutes=1)
    await agent.call(
        "record_attempt",
        task_id="golden",
        step="gen_patch",
        status="rejected",
        feedback="flake8: E501 line too long",
        guard="lint",
    )
    clock.advance(minutes=1)
    await agent.call(
        "report_review",
        task_id="golden",
        stage="review_security",
        status="fail",
        failure_reason="session token logged",
        response="src/auth/login.py:42 logs token",
    )
    clock.advance(minutes=1)
    await agent.call(
        "report_review",
        task_id="golden",
        stage="ci",
        kind="tool",
        status="partial_success",
        failure_reason="2 of 40 failed",
        response="FAILED tests/test_login.py::test_redirect",
    )
    escalation_id = 0
    for _ in range(3):
        clock.advance(minutes=1)
        result = await agent.call(
            "record_failure",
            task_id="golden",
            message="KeyError: 'next_url'",
            file="src/auth/login.py",
            line=40,
        )
        escalation_id = result["escalation"]["escalation_id"] if result["escalation"] else 0
    return escalation_id


async def test_rendered_feedback_and_prompts_match_the_golden_files(db_path: str) -> None:
    clock = FakeClock()
    async with connect(db_path, clock=clock) as agent:
        escalation_id = await _scenario(agent, clock)
        async with connect(db_path, role="operator", clock=clock) as operator:
            briefing = await operator.client.get_prompt(
                "escalation_briefing", {"escalation_id": str(escalation_id)}
            )
            clock.advance(minutes=1)
            await operator.call(
                "resolve_escalation",
                escalation_id=escalation_id,
                response_type="guidance",
                content="Default next_url to /home",
                responder="alice",
            )
        feedback = await agent.call("get_feedback", task_id="golden", step="gen_patch")
        upstream = await agent.call("get_feedback", task_id="golden", step="localise_issue")
        retry = await agent.client.get_prompt(
            "retry_with_feedback", {"task_id": "golden", "step": "gen_patch"}
        )
        fix = await agent.client.get_prompt("fix_review_findings", {"task_id": "golden"})
        resume = await agent.client.get_prompt("resume_after_response", {"escalation_id": str(escalation_id)})
    _check("feedback_gen_patch.txt", feedback["rendered"])
    _check("feedback_localise_issue.txt", upstream["rendered"])
    # The structured sections list what the text shows, by id, in the text's order.
    findings = [2, 1]  # by stage: ci, then review_security
    assert {k: v for k, v in feedback.items() if k != "rendered"} == {
        "task_id": "golden",
        "step": "gen_patch",
        "cycle": 2,
        "escalation_history": [1],
        "retry_history": [1, 3, 4],
        "review_findings": findings,
        "human_responses": [escalation_id],
        "guidance": ["F-1"],
        "omitted": 0,
    }
    assert (upstream["cycle"], upstream["escalation_history"], upstream["retry_history"]) == (1, [1], [])
    assert (upstream["review_findings"], upstream["human_responses"]) == (findings, [escalation_id])
    for name, prompt in (
        ("prompt_retry_with_feedback.txt", retry),
        ("prompt_fix_review_findings.txt", fix),
        ("prompt_escalation_briefing.txt", briefing),
        ("prompt_resume_after_response.txt", resume),
    ):
        _check(name, prompt.messages[0].content.text)  # type: ignore[union-attr]


@pytest.mark.parametrize("max_chars", [200, 400, 800, 1500, 3000])
async def test_the_budget_drops_the_oldest_entries_first_and_says_how_many(
    db_path: str, max_chars: int
) -> None:
    clock = FakeClock()
    async with connect(db_path, clock=clock) as agent:
        await agent.call("start_task", title="t", task_id="budget", thresholds={"stagnation_patience": 1000})
        for n in range(30):
            clock.advance(minutes=1)
            await agent.call(
                "record_attempt",
                task_id="budget",
                step="s",
                status="rejected",
                feedback=f"distinct failure number {n} " + "x" * 40,
            )
        full = await agent.call("get_feedback", task_id="budget", step="s", max_chars=1_000_000)
        cut = await agent.call("get_feedback", task_id="budget", step="s", max_chars=max_chars)
    assert full["omitted"] == 0
    assert len(cut["rendered"]) <= max_chars
    assert cut["omitted"] > 0
    assert f"({cut['omitted']} older entries omitted to fit {max_chars} characters.)" in cut["rendered"]
    kept = [n for n in range(30) if f"distinct failure number {n} " in cut["rendered"]]
    # What is kept is the newest entries, contiguous up to the last one.
    assert kept == list(range(30 - len(kept), 30))
    assert len(kept) == 30 - cut["omitted"]
    # The structured section is cut the same way: attempt n + 1 is "failure number n".
    assert full["retry_history"] == [n + 1 for n in range(30)]
    assert cut["retry_history"] == [n + 1 for n in kept]
