"""Feedback memory (docs/feedback-memory.md): attempts, stagnation cycles, reconstruction from the store."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from conftest import Agent, FakeClock, connect, migrate_by_hand

pytestmark = pytest.mark.both_backends

SCRIPT = Path(sys.executable).parent / "mcp-server-escalation"


async def _reject(agent: Agent, task_id: str, step: str, feedback: str, **extra: Any) -> dict[str, Any]:
    return await agent.call(
        "record_attempt", task_id=task_id, step=step, status="rejected", feedback=feedback, **extra
    )


async def test_feedback_is_reconstructed_from_the_store(db_path: str) -> None:
    async with connect(db_path) as agent:
        await agent.call("start_task", title="t", task_id="f1")
        for n in range(3):
            await _reject(
                agent, "f1", "gen_patch", f"patch does not apply: hunk {n} failed", artifact=f"approach {n}"
            )
    # A different connection (a fresh agent) reads it all back.
    async with connect(db_path) as fresh:
        result = await fresh.call("get_feedback", task_id="f1", step="gen_patch")
    assert result["retry_history"] == [1, 2, 3]
    assert "RETRY HISTORY (gen_patch)" in result["rendered"]
    assert "hunk 2 failed" in result["rendered"]


async def test_identical_feedback_is_collapsed_with_a_count(db_path: str) -> None:
    async with connect(db_path) as agent:
        await agent.call("start_task", title="t", task_id="f2", thresholds={"stagnation_patience": 10})
        for _ in range(3):
            await _reject(agent, "f2", "lint", "E501 line too long")
        await _reject(agent, "f2", "lint", "F401 unused import")
        result = await agent.call("get_feedback", task_id="f2", step="lint")
    assert result["retry_history"] == [1, 4]
    text = result["rendered"]
    assert "Attempt 1, 2, 3 (rejected 3x" in text
    assert text.count("E501 line too long") == 1
    assert "Attempt 4 (rejected 1x" in text
    assert text.index("E501 line too long") < text.index("F401 unused import")


async def test_similar_rejections_start_an_escalation_cycle_for_the_step_and_upstream(db_path: str) -> None:
    async with connect(db_path) as agent:
        await agent.call("start_task", title="t", task_id="f3")
        first = await _reject(
            agent, "f3", "gen_patch", "test_login failed: expected 200 got 500", upstream=["localise_issue"]
        )
        second = await _reject(
            agent, "f3", "gen_patch", "test_login failed: expected 200 got 502", upstream=["localise_issue"]
        )
        third = await _reject(
            agent,
            "f3",
            "gen_patch",
            "test_login failed: expected 200 got 503",
            upstream=["localise_issue"],
            artifact="retry with a sleep",
        )
        step = await agent.call("get_feedback", task_id="f3", step="gen_patch")
        upstream = await agent.call("get_feedback", task_id="f3", step="localise_issue")
        fourth = await _reject(agent, "f3", "gen_patch", "test_login failed again")
    assert first["stagnation"] is None
    assert second["stagnation"] is None
    stagnation = third["stagnation"]
    assert stagnation["similar_count"] == 3
    assert stagnation["escalated_to"] == ["gen_patch", "localise_issue"]
    assert stagnation["new_cycle"] == 2
    assert stagnation["human_escalation"] is False
    assert third["escalation"] is None
    assert third["directive"] == "proceed"
    assert "localise_issue" in third["message"]
    assert "retry with a sleep" in stagnation["failure_summary"]
    assert (first["cycle"], third["cycle"], fourth["cycle"]) == (1, 1, 2)
    assert step["cycle"] == 2
    for feedback in (step, upstream):
        assert feedback["escalation_history"] == [1]
        assert "--- Escalation Cycle 1 ---" in feedback["rendered"]
        assert "stagnated (step gen_patch, cycle 1)" in feedback["rendered"]
    assert upstream["retry_history"] == []


async def test_dissimilar_rejections_do_not_stagnate(db_path: str) -> None:
    async with connect(db_path) as agent:
        await agent.call("start_task", title="t", task_id="f4")
        results = [
            await _reject(agent, "f4", "gen", text)
            for text in (
                "syntax error in parser",
                "timeout contacting database",
                "wrong output format for dates",
            )
        ]
    assert all(r["stagnation"] is None for r in results)


async def test_an_accepted_attempt_breaks_the_run(db_path: str) -> None:
    async with connect(db_path) as agent:
        await agent.call("start_task", title="t", task_id="f5")
        await _reject(agent, "f5", "gen", "assertion failed in test_a")
        await _reject(agent, "f5", "gen", "assertion failed in test_a")
        await agent.call("record_attempt", task_id="f5", step="gen", status="accepted")
        after = await _reject(agent, "f5", "gen", "assertion failed in test_a")
    assert after["stagnation"] is None


async def test_escalation_cycles_are_rendered_in_order(db_path: str) -> None:
    async with connect(db_path) as agent:
        await agent.call("start_task", title="t", task_id="f6")
        for cycle in (1, 2):
            for _ in range(3):
                await _reject(agent, "f6", "gen", f"cycle {cycle} failure: import error in module")
        result = await agent.call("get_feedback", task_id="f6", step="gen")
    text = result["rendered"]
    assert result["escalation_history"] == [1, 2]
    assert text.index("Escalation Cycle 1") < text.index("Escalation Cycle 2") < text.index("RETRY HISTORY")


async def test_stagnation_beyond_max_cycles_creates_exactly_one_human_escalation(db_path: str) -> None:
    async with connect(db_path) as agent:
        await agent.call(
            "start_task",
            title="t",
            task_id="f7",
            thresholds={"max_escalation_cycles": 1, "total_verification_attempts": 100},
        )
        results = []
        for _ in range(4 * 3):
            results.append(await _reject(agent, "f7", "gen", "KeyError: 'user_id' in handler"))
        listed = await agent.call("list_escalations", status="all", task_id="f7")
    cycles = [r["stagnation"] for r in results if r["stagnation"]]
    assert len(cycles) == 4
    assert [c["human_escalation"] for c in cycles] == [False, True, True, True]
    assert listed["total"] == 1
    (summary,) = listed["escalations"]
    assert summary["type"] == "stagnation"
    # The later firings refreshed the escalation the second cycle created.
    assert results[-1]["escalation"] is None
    escalation = next(r["escalation"] for r in results if r["escalation"])
    assert results[-1]["holding"]["escalation_id"] == escalation["escalation_id"]
    async with connect(db_path) as agent:
        read = await agent.call("get_escalation", escalation_id=escalation["escalation_id"])
    (trigger,) = read["escalation"]["triggers"]
    assert trigger["fired_count"] == 3
    assert trigger["criteria"]["max_escalation_cycles"] == 1
    summaries = read["escalation"]["context"]["evidence"][trigger["key"]]["cycle_summaries"]
    assert [s["source_cycle"] for s in summaries["at_firing"] + summaries["latest"]] == [1, 2, 3, 4]
    assert results[-1]["directive"] == "pause"


async def test_rejected_verdicts_count_as_verification_attempts_and_accepted_ones_do_not(
    db_path: str,
) -> None:
    async with connect(db_path) as agent:
        await agent.call(
            "start_task",
            title="t",
            task_id="f8",
            thresholds={"total_verification_attempts": 4, "stagnation_patience": 100},
        )
        for n in range(3):
            await agent.call("record_attempt", task_id="f8", step="s", status="accepted")
            await agent.call("record_attempt", task_id="f8", step="s", status="rejected", feedback=f"no {n}")
            assert (await agent.call("get_task", task_id="f8"))["counters"]["verification_attempts"] == n + 1
        fourth = await agent.call("record_attempt", task_id="f8", step="s", status="rejected", feedback="no")
    assert fourth["escalation"]["type"] == "verification_limit"


async def test_completion_is_refused_while_a_steps_latest_attempt_is_rejected(db_path: str) -> None:
    async with connect(db_path) as agent:
        await agent.call("start_task", title="t", task_id="f9")
        await _reject(agent, "f9", "gen", "bad")
        refused = await agent.error("end_task", task_id="f9", outcome="completed")
        await agent.call("record_attempt", task_id="f9", step="gen", status="accepted")
        done = await agent.call("end_task", task_id="f9", outcome="completed")
    assert refused == (
        "Error executing tool end_task: "
        "outcome: task f9 cannot be completed: the latest attempt of gen was rejected."
        " Record an accepted attempt of each (record_attempt) first, or end the task with outcome abandoned."
    )
    assert done["status"] == "completed"


async def test_a_new_server_process_renders_the_whole_history_on_its_first_call(
    db_path: str, tmp_path: Path
) -> None:
    # Seed 000's data flow: a fresh agent in a new process keeps what attempts 1-3 learned.
    clock = FakeClock()
    async with connect(db_path, clock=clock) as agent:
        await agent.call("start_task", title="fix patch", task_id="flow")
        for n in range(3):
            clock.advance(seconds=1)
            await _reject(
                agent,
                "flow",
                "gen_patch",
                f"hunk #{n} FAILED at 12",
                upstream=["localise_issue"],
                artifact=f"edit variant {n}",
            )
        clock.advance(seconds=1)
        await _reject(agent, "flow", "gen_patch", "new approach rejected: wrong file")
    params = StdioServerParameters(command=str(SCRIPT), args=["--db", db_path], cwd=str(tmp_path))
    with anyio.fail_after(30):
        async with Client(params, mode="legacy") as client:  # type: ignore[arg-type]
            fresh = Agent(client)
            patch = await fresh.call("get_feedback", task_id="flow", step="gen_patch")
            upstream = await fresh.call("get_feedback", task_id="flow", step="localise_issue")
    assert "Escalation Cycle 1" in patch["rendered"]
    assert "Escalation Cycle 1" in upstream["rendered"]
    for n in range(3):
        assert f"hunk #{n} FAILED" in patch["rendered"]
    assert "new approach rejected" in patch["rendered"]
    assert patch["cycle"] == 2


async def test_feedback_lists_human_answers_but_not_withdrawn_questions(db_path: str) -> None:
    async with connect(db_path) as agent:
        await agent.call("start_task", title="t", task_id="h1")
        withdrawn = await agent.call("raise_escalation", task_id="h1", reason="Never mind?", blocking=False)
        await agent.call(
            "resolve_escalation",
            escalation_id=withdrawn["escalation"]["escalation_id"],
            response_type="withdraw",
        )
        asked = await agent.call("raise_escalation", task_id="h1", reason="Which rounding mode?")
        answered_id = asked["escalation"]["escalation_id"]
        async with connect(db_path, role="operator") as operator:
            await operator.call(
                "resolve_escalation",
                escalation_id=answered_id,
                response_type="guidance",
                content="Round half to even.",
                responder="alice",
            )
        feedback = await agent.call("get_feedback", task_id="h1")
    assert feedback["human_responses"] == [answered_id]
    listed = f"- Escalation {answered_id} (question from the agent): guidance by alice at "
    assert listed in feedback["rendered"]
    assert "Round half to even." in feedback["rendered"]
    assert "withdraw" not in feedback["rendered"]


@pytest.mark.sqlite_only  # builds a store of an older SQLite schema by hand
async def test_a_store_from_before_migration_8_shows_its_retry_history_collapsed(empty_path: str) -> None:
    """Attempts recorded by a version-7 store are collapsed by the upgrade as the trigger
    collapses new ones, so the first get_feedback after the upgrade shows all of them."""
    db_path = empty_path  # an older schema is built here by hand
    conn = sqlite3.connect(db_path, isolation_level=None)
    migrate_by_hand(conn, upto=7)
    conn.execute(
        "INSERT INTO tasks (task_id, title, project, agent_id, status, thresholds_json, created_at,"
        " updated_at) VALUES ('old', 't', '/p', 'a', 'active', '{}', 'x', 'x')"
    )
    recorded = [
        ("rejected", "hunk 1 failed", "git apply"),
        ("rejected", "E501 line too long", "ruff"),
        ("accepted", "", None),
        ("rejected", " hunk 1 failed\n", "git apply --3way"),
    ]
    for number, (status, feedback, guard) in enumerate(recorded, start=1):
        conn.execute(
            "INSERT INTO attempts (task_id, step, attempt_number, cycle, status, feedback, guard,"
            " agent_id, generation, created_at) VALUES ('old', 'patch', ?, 1, ?, ?, ?, 'a', 1, ?)",
            (number, status, feedback, guard, f"2026-11-01T00:00:0{number}.000Z"),
        )
    conn.close()

    async with connect(db_path) as agent:
        result = await agent.call("get_feedback", task_id="old", step="patch")
        await _reject(agent, "old", "patch", "E501 line too long")
        after = await agent.call("get_feedback", task_id="old", step="patch")

    assert result["retry_history"] == [1, 2]
    assert "--- Attempt 1, 4 (rejected 2x, guard git apply --3way) ---\nhunk 1 failed" in result["rendered"]
    assert "--- Attempt 2 (rejected 1x, guard ruff) ---\nE501 line too long" in result["rendered"]
    assert after["retry_history"] == [1, 2]
    assert "--- Attempt 2, 5 (rejected 2x, guard -) ---\nE501 line too long" in after["rendered"]
