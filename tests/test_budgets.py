"""Budgets: objective caps on a task's tool calls, wall-clock minutes and failing test runs
that pause the task and ask a human, rather than kill it. Off by default.

Through the real SDK client in memory (the clock is the tests' own) and through the hook
path as a host delivers it (the console script, one process per event).
"""

from __future__ import annotations

import json
import re
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from conftest import Agent, FakeClock, connect, evidence_of, migrate_by_hand
from hooks_support import PYTEST_FAIL, bash_failure, hook, post_bash, run_cli
from mcp_server_escalation.models.tasks import Counters
from mcp_server_escalation.models.thresholds import Thresholds
from mcp_server_escalation.rules.decide import triggers
from mcp_server_escalation.services.headlines import LATEST_ERROR_WITHIN

pytestmark = pytest.mark.both_backends

# Other triggers kept out of the way, so that only a budget can fire.
QUIET = {"no_test_improvement_after": 1_000_000, "total_verification_attempts": 1_000_000}


async def start(agent: Agent, task_id: str = "t1", **thresholds: Any) -> dict[str, Any]:
    return await agent.call(
        "start_task", title="Budgeted work", task_id=task_id, thresholds={**QUIET, **thresholds}
    )


async def edit(agent: Agent, task_id: str = "t1") -> dict[str, Any]:
    """One recorded call that no other trigger fires on: an edit of the same file."""
    return await agent.call("report_progress", task_id=task_id, files_modified=["src/app.py"])


START = datetime(2026, 11, 21, 10, 0, tzinfo=UTC)


@pytest.mark.parametrize(("calls", "fires"), [(49, False), (50, True), (51, True)])
def test_the_tool_call_rule_fires_from_its_limit_on(calls: int, fires: bool) -> None:
    t = Thresholds(max_tool_calls=50)
    fired = triggers.budgets(Counters(tool_calls=calls), t, since=START, now=START)
    assert [(f.type, f.criteria, f.observed) for f in fired] == (
        [("budget", {"max_tool_calls": 50}, {"budget": "tool_calls", "used": calls})] if fires else []
    )


@pytest.mark.parametrize(
    ("elapsed", "fires"), [(timedelta(seconds=599), False), (timedelta(minutes=10), True)]
)
def test_the_minutes_rule_counts_whole_minutes_since_the_start(elapsed: timedelta, fires: bool) -> None:
    fired = triggers.budgets(Counters(), Thresholds(max_minutes=10), since=START, now=START + elapsed)
    assert bool(fired) is fires


def test_no_budget_fires_when_none_is_set_whatever_the_counts() -> None:
    counters = Counters(tool_calls=10**6, failing_test_runs=10**6)
    assert triggers.budgets(counters, Thresholds(), since=START, now=START + timedelta(days=365)) == []


def test_a_clock_that_steps_back_uses_no_minutes() -> None:
    assert triggers.minutes_between(START, START - timedelta(minutes=5)) == 0


def test_only_an_answer_to_a_budget_restarts_the_budgets() -> None:
    now = "2026-11-21T11:00:00.000Z"
    assert triggers.budget_resets(["repeated_error:fp-1", "test_stall"], now) == {}
    assert triggers.budget_resets(["test_stall", "budget:minutes"], now) == {
        "tool_calls": 0,
        "failing_test_runs": 0,
        "budget_since": now,
    }


async def test_tool_call_budget_pauses_the_task_exactly_at_its_limit(db_path: str) -> None:
    clock = FakeClock()
    async with connect(db_path, clock=clock) as agent:
        started = await start(agent, max_tool_calls=3)
        first, second = await edit(agent), await edit(agent)
        third = await edit(agent)

    assert (first["escalation"], second["escalation"]) == (None, None)
    assert first["directive"] == second["directive"] == "proceed"
    escalation = third["escalation"]
    assert escalation["type"] == "budget"
    assert escalation["priority"] == "normal"
    assert escalation["response_options"] == ["guidance", "override", "terminate"]
    [trigger] = escalation["triggers"]
    assert trigger["key"] == "budget:tool_calls"
    assert trigger["criteria"] == {"max_tool_calls": 3}
    assert "3 tool calls" in trigger["summary"]
    assert evidence_of(escalation, "budget") == {
        "budget": "tool_calls",
        "threshold": "max_tool_calls",
        "limit": 3,
        "used": 3,
        "since": "2026-11-21T10:00:00.000Z",
    }
    assert third["directive"] == "pause"
    assert third["counters"]["tool_calls"] == 3
    assert started["thresholds"]["max_tool_calls"] == 3


async def test_every_recording_tool_counts_as_a_call_and_the_edit_gate_does_not(db_path: str) -> None:
    async with connect(db_path) as agent:
        await start(agent, max_tool_calls=3)
        await agent.call("check_edit", task_id="t1", paths=["src/app.py"])
        await agent.call("record_failure", task_id="t1", message="ValueError: bad input")
        await agent.call("record_attempt", task_id="t1", step="main", status="rejected", feedback="too slow")
        assert (await agent.call("get_task", task_id="t1"))["counters"]["tool_calls"] == 2
        third = await edit(agent)
    assert third["escalation"]["type"] == "budget"


async def test_failing_test_run_budget_counts_only_runs_with_failures(db_path: str) -> None:
    async with connect(db_path) as agent:
        await start(agent, max_failing_test_runs=2)
        results = [
            await agent.call("report_progress", task_id="t1", tests_passed=passed, tests_failed=failed)
            for passed, failed in ((3, 2), (5, 0), (5, 0), (4, 1))
        ]

    assert [r["escalation"] for r in results[:3]] == [None, None, None]
    escalation = results[3]["escalation"]
    assert [t["key"] for t in escalation["triggers"]] == ["budget:failing_test_runs"]
    facts = evidence_of(escalation, "budget")
    assert (facts["budget"], facts["limit"], facts["used"]) == ("failing_test_runs", 2, 2)
    assert results[3]["counters"]["failing_test_runs"] == 2


async def test_a_budget_headline_leads_with_the_latest_error_of_the_task(db_path: str) -> None:
    async with connect(db_path) as agent:
        await start(agent, max_tool_calls=3)
        await agent.call("record_failure", task_id="t1", message="KeyError: 'region'")
        await agent.call("record_failure", task_id="t1", message="ValueError: bad region 'eu-9'")
        third = await edit(agent)

    headline = third["escalation"]["triggers"][0]["summary"].splitlines()[0]
    assert headline.startswith("ValueError: bad region 'eu-9' (latest error)")
    assert "3 tool calls" in headline


async def test_an_error_more_than_fifty_actions_old_does_not_lead_the_headline(db_path: str) -> None:
    async with connect(db_path) as agent:
        await start(agent, max_tool_calls=LATEST_ERROR_WITHIN + 1)  # the failure and 50 edits
        await agent.call("record_failure", task_id="t1", message="KeyError: 'region'")
        for _ in range(LATEST_ERROR_WITHIN):
            last = await edit(agent)

    assert last["escalation"]["triggers"][0]["summary"].startswith(f"{LATEST_ERROR_WITHIN + 1} tool calls")


async def test_minutes_budget_fires_at_the_first_call_once_the_time_is_up(db_path: str) -> None:
    clock = FakeClock()
    async with connect(db_path, clock=clock) as agent:
        await start(agent, max_minutes=30)
        clock.advance(minutes=29, seconds=59)
        before = await edit(agent)
        clock.advance(seconds=1)
        at_limit = await edit(agent)

    assert before["escalation"] is None
    escalation = at_limit["escalation"]
    facts = evidence_of(escalation, "budget")
    assert facts == {
        "budget": "minutes",
        "threshold": "max_minutes",
        "limit": 30,
        "used": 30,
        "since": "2026-11-21T10:00:00.000Z",
    }
    assert "30 minutes" in escalation["triggers"][0]["summary"]


async def test_a_task_that_makes_no_calls_is_not_paused_by_the_minutes_budget(db_path: str) -> None:
    clock = FakeClock()
    async with connect(db_path, clock=clock) as agent:
        await start(agent, max_minutes=5)
        clock.advance(hours=3)
        task = await agent.call("get_task", task_id="t1")
        listed = await agent.call("list_escalations", status="all")
    assert task["task"]["status"] == "active"
    assert listed["total"] == 0


async def test_budgets_are_off_by_default_so_a_long_task_never_fires_one(db_path: str) -> None:
    clock = FakeClock()
    async with connect(db_path, clock=clock) as agent:
        started = await start(agent)
        for n in range(150):
            clock.advance(minutes=5)
            result = await agent.call(
                "report_progress", task_id="t1", files_modified=["src/app.py"], tests_passed=n, tests_failed=1
            )
            assert result["escalation"] is None, n
        listed = await agent.call("list_escalations", status="all")
    assert listed["total"] == 0
    assert result["counters"]["tool_calls"] == 150
    assert result["counters"]["failing_test_runs"] == 150
    thresholds = started["thresholds"]
    assert (thresholds["max_tool_calls"], thresholds["max_minutes"], thresholds["max_failing_test_runs"]) == (
        None,
        None,
        None,
    )
    assert (Thresholds().max_tool_calls, Thresholds().max_minutes, Thresholds().max_failing_test_runs) == (
        None,
        None,
        None,
    )


async def test_a_config_budget_applies_to_every_task_and_a_task_may_override_it(db_path: str) -> None:
    config = Thresholds().model_copy(update={"max_tool_calls": 2, **QUIET})
    async with connect(db_path, thresholds=config) as agent:
        await agent.call("start_task", title="by config", task_id="a")
        await start(agent, "b", max_tool_calls=4)
        a = [await edit(agent, "a") for _ in range(2)]
        b = [await edit(agent, "b") for _ in range(4)]

    assert [r["escalation"] is not None for r in a] == [False, True]
    assert [r["escalation"] is not None for r in b] == [False, False, False, True]
    assert evidence_of(b[3]["escalation"], "budget")["limit"] == 4


async def test_a_fired_budget_stays_one_escalation_and_an_acknowledged_answer_grants_a_fresh_allowance(
    db_path: str,
) -> None:
    clock = FakeClock()
    async with connect(db_path, clock=clock) as agent, connect(db_path, role="operator") as operator:
        await start(agent, max_tool_calls=2)
        await edit(agent)
        fired = (await edit(agent))["escalation"]
        clock.advance(minutes=10)
        again = await edit(agent)  # the agent calls on while paused: the same escalation
        open_one = await operator.call("get_escalation", escalation_id=fired["escalation_id"])
        await operator.call(
            "resolve_escalation",
            escalation_id=fired["escalation_id"],
            response_type="guidance",
            content="Go on; finish the parser first.",
        )
        await agent.call("acknowledge_response", escalation_id=fired["escalation_id"])
        after_ack = await edit(agent)
        refired = await edit(agent)
        listed = await agent.call("list_escalations", status="all")

    assert again["escalation"] is None  # no news: the open escalation was refreshed
    assert again["directive"] == "pause"
    [trigger] = open_one["escalation"]["triggers"]
    assert (trigger["fired_count"], trigger["observed"]["used"]) == (2, 3)
    assert after_ack["escalation"] is None
    assert after_ack["directive"] == "proceed"
    assert after_ack["counters"]["tool_calls"] == 1
    second = refired["escalation"]
    assert second["escalation_id"] != fired["escalation_id"]
    facts = evidence_of(second, "budget")
    assert (facts["used"], facts["limit"]) == (2, 2)
    assert facts["since"] == "2026-11-21T10:10:00.000Z"  # when the answer was acknowledged
    assert listed["total"] == 2


async def test_an_acknowledged_budget_answer_restarts_every_budget_from_that_moment(
    db_path: str,
) -> None:
    clock = FakeClock()
    async with connect(db_path, clock=clock) as agent, connect(db_path, role="operator") as operator:
        await start(agent, max_minutes=60, max_tool_calls=100)
        clock.advance(minutes=61)
        fired = (await edit(agent))["escalation"]
        await operator.call(
            "resolve_escalation",
            escalation_id=fired["escalation_id"],
            response_type="override",
            content="Ship it.",
        )
        clock.advance(minutes=5)
        await agent.call("acknowledge_response", escalation_id=fired["escalation_id"])
        clock.advance(minutes=59)
        quiet = await edit(agent)
        clock.advance(minutes=1)
        refired = await edit(agent)

    assert [t["key"] for t in fired["triggers"]] == ["budget:minutes"]
    assert evidence_of(fired, "budget")["used"] == 61
    assert quiet["escalation"] is None
    assert quiet["counters"]["tool_calls"] == 1  # restarted too: one checkpoint for all
    facts = evidence_of(refired["escalation"], "budget")
    assert (facts["used"], facts["since"]) == (60, "2026-11-21T11:06:00.000Z")


async def test_bad_budget_values_are_rejected_naming_the_field_and_the_limit(db_path: str) -> None:
    async with connect(db_path) as agent:
        zero = await agent.error("start_task", title="t", thresholds={"max_tool_calls": 0})
        huge = await agent.error("start_task", title="t", thresholds={"max_minutes": 10_000_000})
        text = await agent.error("start_task", title="t", thresholds={"max_failing_test_runs": "many"})
        listed = await agent.call("list_escalations", status="all")
    assert "max_tool_calls" in zero
    assert "thresholds.max_tool_calls: must be at least 1" in zero
    assert "max_minutes" in huge
    assert "thresholds.max_minutes: must be at most 1000000" in huge
    assert "max_failing_test_runs" in text
    assert listed["total"] == 0


def _task_row(db: str, task_id: str) -> dict[str, Any]:
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        return dict(conn.execute("SELECT * FROM tasks WHERE task_id = ?", (task_id,)).fetchone())
    finally:
        conn.close()


async def test_hook_events_count_one_call_per_recorded_tool_call_and_pause_at_the_limit(
    tmp_path: Path,
) -> None:
    db = str(tmp_path / "hooks.db")
    config = tmp_path / "config.toml"
    config.write_text("[thresholds]\nmax_tool_calls = 3\n", encoding="utf-8")
    events = [
        post_bash("make build", "built\n", "toolu_b1"),
        # A failing test run is one tool call, recorded as a failure and as a test run.
        bash_failure("python -m pytest -q", PYTEST_FAIL, "toolu_t1"),
        post_bash("make build", "built\n", "toolu_b2"),
    ]
    contexts = []
    for payload in events:
        run = await hook("claude-code", payload, db=db, tmp=tmp_path, ESCALATION_CONFIG=str(config))
        assert run.returncode == 0, run.stderr
        contexts.append(run.json()["hookSpecificOutput"]["additionalContext"] if run.stdout else "")
    # A repeated delivery of the same event is not another call.
    repeat = await hook("claude-code", events[2], db=db, tmp=tmp_path, ESCALATION_CONFIG=str(config))

    assert contexts[:2] == ["", ""]
    assert "escalation 1 (budget)" in contexts[2]
    assert repeat.stdout == ""
    row = _task_row(db, "claude-code-abc123")
    counters = json.loads(row["counters_json"])
    assert (row["status"], counters["tool_calls"], counters["failing_test_runs"]) == ("paused", 3, 1)
    conn = sqlite3.connect(db)
    try:
        [[triggers_json]] = conn.execute("SELECT triggers_json FROM escalations").fetchall()
    finally:
        conn.close()
    assert [t["key"] for t in json.loads(triggers_json)] == ["budget:tool_calls"]


async def test_another_agent_taking_over_starts_with_a_fresh_allowance(db_path: str) -> None:
    clock = FakeClock()
    async with connect(db_path, clock=clock) as agent:
        await start(agent, max_tool_calls=2, max_minutes=60)
        await edit(agent)
        clock.advance(minutes=50)
        taken = await agent.call("start_task", title="Budgeted work", task_id="t1", agent_id="agent-2")
        clock.advance(minutes=15)
        first = await edit(agent)
        second = await edit(agent)
    assert taken["task"]["counters"]["tool_calls"] == 0
    assert first["escalation"] is None  # 65 minutes since the task started, 15 since take-over
    facts = evidence_of(second["escalation"], "budget")
    assert (facts["budget"], facts["since"]) == ("tool_calls", "2026-11-21T10:50:00.000Z")


@pytest.mark.sqlite_only  # builds a store of an older SQLite schema by hand
async def test_a_task_stored_before_budgets_counts_from_the_upgrade_and_its_minutes_from_its_start(
    empty_path: str,
) -> None:
    db_path = empty_path  # an older schema is built here by hand
    conn = sqlite3.connect(db_path, isolation_level=None)
    migrate_by_hand(conn, upto=10)
    conn.execute(
        "INSERT INTO tasks (task_id, title, project, agent_id, status, thresholds_json, created_at,"
        " updated_at) VALUES ('old', 't', '/work/project', 'a', 'active', ?, ?, ?)",
        (json.dumps({"max_minutes": 60}), "2026-11-21T08:00:00.000Z", "2026-11-21T08:00:00.000Z"),
    )
    conn.close()
    async with connect(db_path, clock=FakeClock()) as agent:
        before = await agent.call("get_task", task_id="old")
        result = await edit(agent, "old")
    assert (before["counters"]["tool_calls"], before["counters"]["budget_since"]) == (0, None)
    facts = evidence_of(result["escalation"], "budget")
    assert (facts["used"], facts["since"]) == (120, "2026-11-21T08:00:00.000Z")


async def test_tasks_show_lists_the_budgets_with_counts_and_limits(db_path: str, tmp_path: Path) -> None:
    async with connect(db_path, clock=FakeClock()) as agent:
        await start(agent, max_tool_calls=2, max_minutes=90)
        await edit(agent)
        await edit(agent)
    shown = await run_cli("--db", db_path, "tasks", "show", "t1", tmp=tmp_path)

    assert shown.returncode == 0, shown.stderr
    text = shown.stdout
    assert re.search(r"^tool calls +2 +2 +max tool calls$", text, re.MULTILINE), text
    assert re.search(r"^failing test runs +0 +off +max failing test runs$", text, re.MULTILINE), text
    assert "Minutes budget counts from 2026-11-21 10:00:00 UTC" in text
    assert re.search(r"^  #1 +budget +\w+ +pending", text, re.MULTILINE), text
