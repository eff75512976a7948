"""Review findings accumulate per stage; a passing stage clears its own."""

from __future__ import annotations

from typing import Any

import pytest

from conftest import Agent, connect
from mcp_server_escalation.rules.bounds.evidence import clip

pytestmark = pytest.mark.both_backends


async def _review(agent: Agent, stage: str, status: str, **extra: Any) -> dict[str, Any]:
    return await agent.call("report_review", task_id="r1", stage=stage, status=status, **extra)


async def test_findings_accumulate_across_several_failing_reviews(db_path: str) -> None:
    async with connect(db_path) as agent:
        await agent.call("start_task", title="t", task_id="r1")
        await _review(agent, "review_code", "fail", failure_reason="naming", response="rename x in a.py:3")
        last = await _review(
            agent,
            "review_security",
            "partial_success",
            failure_reason="secrets",
            response="token logged in b.py:9",
        )
    stages = [(f["stage"], f["status"]) for f in last["outstanding"]]
    assert stages == [("review_code", "fail"), ("review_security", "partial_success")]


async def test_a_passing_rerun_clears_only_its_own_stage(db_path: str) -> None:
    async with connect(db_path) as agent:
        await agent.call("start_task", title="t", task_id="r1")
        await _review(agent, "review_code", "fail", failure_reason="a")
        await _review(agent, "review_perf", "fail", failure_reason="b")
        passed = await _review(agent, "review_code", "success")
        history = await agent.call("get_feedback", task_id="r1")
    assert passed["cleared"] == 1
    assert passed["finding"] is None
    assert [f["stage"] for f in passed["outstanding"]] == ["review_perf"]
    assert "review_code" not in history["rendered"]


async def test_iteration_numbers_count_every_finding_of_the_stage(db_path: str) -> None:
    async with connect(db_path) as agent:
        await agent.call("start_task", title="t", task_id="r1")
        one = await _review(agent, "review_code", "fail", failure_reason="first")
        await _review(agent, "review_code", "success")
        two = await _review(agent, "review_code", "fail", failure_reason="second")
        three = await _review(agent, "review_code", "partial_success", failure_reason="third")
    assert [r["finding"]["iteration"] for r in (one, two, three)] == [1, 2, 3]
    assert [f["iteration"] for f in three["outstanding"]] == [2, 3]


async def test_tool_stages_contribute_findings_the_same_way(db_path: str) -> None:
    async with connect(db_path) as agent:
        await agent.call("start_task", title="t", task_id="r1")
        ci = await _review(
            agent,
            "selfci",
            "fail",
            kind="tool",
            failure_reason="exit 1",
            response="FAILED tests/test_a.py::test_x",
        )
        await _review(agent, "review_code", "fail", failure_reason="style")
        feedback = await agent.call("get_feedback", task_id="r1")
        cleared = await _review(agent, "selfci", "success", kind="tool")
    assert ci["finding"]["kind"] == "tool"
    assert "### selfci (tool, fail, iteration 1)" in feedback["rendered"]
    assert cleared["cleared"] == 1


async def test_no_findings_when_every_stage_passes(db_path: str) -> None:
    async with connect(db_path) as agent:
        await agent.call("start_task", title="t", task_id="r1")
        for stage in ("review_code", "review_security", "ci"):
            result = await _review(agent, stage, "success")
        feedback = await agent.call("get_feedback", task_id="r1")
    assert result["outstanding"] == []
    assert result["cleared"] == 0
    assert feedback["review_findings"] == []
    assert "REVIEW FINDINGS" not in feedback["rendered"]


async def test_findings_survive_a_restart(db_path: str) -> None:
    async with connect(db_path) as agent:
        await agent.call("start_task", title="t", task_id="r1")
        reviewed = await _review(agent, "review_code", "fail", failure_reason="naming", response="full text")
    finding_id = reviewed["finding"]["finding_id"]
    async with connect(db_path) as restarted:
        feedback = await restarted.call("get_feedback", task_id="r1")
    assert feedback["review_findings"] == [finding_id]
    assert "### review_code (review, fail, iteration 1)\nReason: naming\nfull text" in feedback["rendered"]


async def test_the_section_carries_status_reason_and_the_full_response(db_path: str) -> None:
    long_response = "\n".join(f"finding line {n}: src/m.py:{n}" for n in range(200))
    async with connect(db_path) as agent:
        await agent.call("start_task", title="t", task_id="r1")
        await _review(
            agent, "review_code", "partial_success", failure_reason="many nits", response=long_response
        )
        feedback = await agent.call("get_feedback", task_id="r1", max_chars=100_000)
    text = feedback["rendered"]
    assert "# OUTSTANDING REVIEW FINDINGS" in text
    assert "### review_code (review, partial success, iteration 1)" in text
    assert "Reason: many nits" in text
    assert long_response in text
    assert '"stage"' not in text  # structured section, never a raw JSON dump


async def test_completion_is_refused_while_findings_are_outstanding(db_path: str) -> None:
    async with connect(db_path) as agent:
        await agent.call("start_task", title="t", task_id="r1")
        await _review(agent, "review_code", "fail", failure_reason="x")
        refused = await agent.error("end_task", task_id="r1", outcome="completed")
        await _review(agent, "review_code", "success")
        done = await agent.call("end_task", task_id="r1", outcome="completed")
    assert "review_code" in refused
    assert "review findings from review_code are outstanding" in refused
    assert done["status"] == "completed"


async def test_the_fix_review_findings_prompt_lists_every_outstanding_finding(db_path: str) -> None:
    async with connect(db_path) as agent:
        await agent.call("start_task", title="t", task_id="r1")
        await _review(agent, "review_code", "fail", failure_reason="naming", response="rename x")
        await _review(agent, "ci", "fail", kind="tool", failure_reason="exit 2", response="lint failed")
        prompt = await agent.client.get_prompt("fix_review_findings", {"task_id": "r1"})
    text = prompt.messages[0].content.text  # type: ignore[union-attr]
    assert "rename x" in text
    assert "lint failed" in text
    assert text.index("### ci") < text.index("### review_code")


async def test_a_report_shows_the_latest_ten_findings_clipped_and_counts_them_all(db_path: str) -> None:
    # Every outstanding finding's whole response came back with each report: +1 MB per review.
    responses = [f"review {n}: " + "\U0001f600" * 3000 + f" the end of {n}" for n in range(12)]
    async with connect(db_path) as agent:
        await agent.call("start_task", title="reviewed", task_id="r1")
        for n, response in enumerate(responses):
            last = await _review(agent, f"stage_{n % 2}", "fail", failure_reason="short", response=response)
    assert last["outstanding_count"] == 12
    shown = [(f["stage"], f["finding_id"]) for f in last["outstanding"]]
    assert shown == sorted((f"stage_{n % 2}", n + 1) for n in range(2, 12))
    assert [f["response"] for f in last["outstanding"]] == [clip(responses[i - 1], 300) for _, i in shown]
    assert last["finding"]["response"] == clip(responses[-1], 300)
    assert all(f["failure_reason"] == "short" for f in last["outstanding"])
