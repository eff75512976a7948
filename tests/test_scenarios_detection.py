"""Detection scenarios: the same error, no progress, a stalled test run, files beyond the limit
or outside the scope, the total verification attempts, and the trigger edge cases.

Every test drives the real server through the SDK's in-memory client on a real SQLite
file, the way an agent would: start a task, report failures and progress, ask before
editing, and read what the operator would see with ``list_escalations``.
"""

from __future__ import annotations

from typing import Any

import pytest

from conftest import Agent, connect, evidence_of

pytestmark = pytest.mark.both_backends

TYPE_ERROR = "TypeError: undefined is not a function"
REFERENCE_ERROR = "ReferenceError: x is not defined"


async def start(agent: Agent, **arguments: Any) -> str:
    """A fresh active task; returns its id."""
    arguments.setdefault("title", "Fix the login form")
    started = await agent.call("start_task", **arguments)
    assert started["status"] == "active"
    assert started["directive"] == "proceed"
    return started["task_id"]


async def fail(agent: Agent, task_id: str, message: str = TYPE_ERROR, **arguments: Any) -> dict[str, Any]:
    """Record one failure occurrence."""
    return await agent.call("record_failure", task_id=task_id, message=message, **arguments)


async def progress(agent: Agent, task_id: str, **arguments: Any) -> dict[str, Any]:
    """Report one attempt."""
    return await agent.call("report_progress", task_id=task_id, **arguments)


async def run_tests(agent: Agent, task_id: str, passed: int, failed: int, **arguments: Any) -> dict[str, Any]:
    """Report one attempt that ran the tests."""
    return await progress(agent, task_id, tests_passed=passed, tests_failed=failed, **arguments)


async def pending(agent: Agent, task_id: str) -> list[dict[str, Any]]:
    """What the operator's queue shows for the task: its pending escalations."""
    listed = await agent.call("list_escalations", status="pending", task_id=task_id)
    return listed["escalations"]


async def all_escalations(agent: Agent, task_id: str) -> list[dict[str, Any]]:
    """Every escalation of the task, whatever its status."""
    listed = await agent.call("list_escalations", status="all", task_id=task_id)
    return listed["escalations"]


def files(prefix: str, count: int, start_at: int = 1) -> list[str]:
    """``count`` distinct project-relative paths."""
    return [f"{prefix}/module_{i:02d}.py" for i in range(start_at, start_at + count)]


def trigger_types(escalation: dict[str, Any]) -> list[str]:
    """The types of an escalation's triggers, in order."""
    return [t["type"] for t in escalation["triggers"]]


async def assert_operator_sees(agent: Agent, task_id: str, escalation: dict[str, Any]) -> None:
    """The escalation is the one pending item in the operator's queue for the task."""
    queue = await pending(agent, task_id)
    assert [e["escalation_id"] for e in queue] == [escalation["escalation_id"]]
    assert queue[0]["status"] == "pending"
    assert queue[0]["type"] == escalation["type"]


# User story 1: repeated error escalation


async def test_agent_escalates_after_third_identical_error(db_path: str) -> None:
    locations = [
        ("src/ui/form.js", 12, "called submit() directly"),
        ("src/ui/form.js", 40, "wrapped submit in a closure"),
        ("src/ui/handlers.js", 7, "bound submit to the form"),
    ]
    async with connect(db_path) as agent:
        task_id = await start(agent)
        for file, line, action in locations[:2]:
            earlier = await fail(agent, task_id, file=file, line=line, attempted_action=action)
            assert earlier["escalation"] is None
            assert earlier["directive"] == "proceed"
        assert await pending(agent, task_id) == []

        file, line, action = locations[2]
        third = await fail(agent, task_id, file=file, line=line, attempted_action=action)

        assert third["failure"]["consecutive_count"] == 3
        escalation = third["escalation"]
        assert escalation is not None
        assert escalation["type"] == "repeated_error"
        assert escalation["status"] == "pending"
        [trigger] = escalation["triggers"]
        assert trigger["criteria"] == {"same_error_repeated": 3}
        assert trigger["observed"]["consecutive_same_error"] == 3
        occurrences = evidence_of(escalation, "repeated_error")["occurrences"]["at_firing"]
        assert [(o["file"], o["line"], o["attempted_action"]) for o in occurrences] == locations
        # The message is shown once: an occurrence without one repeats the one before it.
        assert [o.get("message") for o in occurrences] == [TYPE_ERROR, None, None]
        assert third["directive"] == "pause"
        await assert_operator_sees(agent, task_id, escalation)


async def test_different_error_does_not_escalate_and_restarts_the_count_at_one(db_path: str) -> None:
    async with connect(db_path) as agent:
        task_id = await start(agent)
        await fail(agent, task_id, file="src/app.js", line=3)
        second = await fail(agent, task_id, file="src/app.js", line=9)
        assert second["failure"]["consecutive_count"] == 2

        different = await fail(agent, task_id, REFERENCE_ERROR, file="src/app.js", line=9)

        assert different["escalation"] is None
        assert different["directive"] == "proceed"
        assert different["failure"]["consecutive_count"] == 1
        assert different["failure"]["fingerprint"] != second["failure"]["fingerprint"]
        task = await agent.call("get_task", task_id=task_id)
        assert task["counters"]["consecutive_same_error"] == 1
        assert task["counters"]["last_fingerprint"] == different["failure"]["fingerprint"]
        assert await all_escalations(agent, task_id) == []


async def test_fixing_one_error_breaking_another_and_getting_the_first_again_escalates(db_path: str) -> None:
    async with connect(db_path) as agent:
        task_id = await start(agent)
        await fail(agent, task_id, attempted_action="pytest tests/test_app.py")
        await fail(agent, task_id, attempted_action="pytest tests/test_app.py")
        broke = await fail(agent, task_id, REFERENCE_ERROR, attempted_action="pytest tests/test_app.py")
        assert (broke["failure"]["consecutive_count"], broke["escalation"]) == (1, None)

        back = await fail(agent, task_id, attempted_action="pytest tests/test_app.py")

        assert back["failure"]["consecutive_count"] == 3
        assert back["escalation"]["type"] == "repeated_error"
        assert TYPE_ERROR in back["escalation"]["triggers"][0]["summary"].splitlines()[0]
        assert back["directive"] == "pause"


async def test_two_other_errors_in_between_end_the_run(db_path: str) -> None:
    async with connect(db_path) as agent:
        task_id = await start(agent)
        await fail(agent, task_id)
        await fail(agent, task_id)
        await fail(agent, task_id, REFERENCE_ERROR)
        await fail(agent, task_id, "SyntaxError: unexpected token '}'")
        again = await fail(agent, task_id)
        assert (again["failure"]["consecutive_count"], again["escalation"]) == (1, None)


async def test_successful_operation_resets_the_repeated_error_count_to_zero(db_path: str) -> None:
    async with connect(db_path) as agent:
        task_id = await start(agent)
        await fail(agent, task_id)
        await fail(agent, task_id)

        success = await progress(agent, task_id, outcome="success", note="the build passed")

        assert success["counters"]["consecutive_same_error"] == 0
        assert success["escalation"] is None
        assert success["directive"] == "proceed"
        # The count really starts again: the same error once more is the first of a new run.
        again = await fail(agent, task_id)
        assert again["failure"]["consecutive_count"] == 1
        assert again["failure"]["occurrence_count"] == 3
        assert again["escalation"] is None
        assert await all_escalations(agent, task_id) == []


# User story 2: progress stall escalation


async def test_agent_escalates_after_fifth_attempt_without_file_changes(db_path: str) -> None:
    notes = [f"attempt {n}: read the logs again" for n in range(1, 6)]
    async with connect(db_path) as agent:
        task_id = await start(
            agent,
            title="Speed up the report page",
            specification="The report page renders in under 1 s",
            scope=["src/reports/**"],
        )
        for note in notes[:4]:
            attempt = await progress(agent, task_id, note=note)
            assert attempt["escalation"] is None
        assert attempt["counters"]["attempts_without_file_change"] == 4

        fifth = await progress(agent, task_id, note=notes[4])

        escalation = fifth["escalation"]
        assert escalation is not None
        assert escalation["type"] == "no_file_progress"
        assert trigger_types(escalation) == ["no_file_progress"]
        assert escalation["triggers"][0]["criteria"] == {"no_file_changes_after_attempts": 5}
        attempts = escalation["context"]["evidence"]["no_file_progress"]["attempts"]
        assert [a["note"] for a in attempts["at_firing"]] == notes
        assert all(a["files"] == [] for a in attempts["at_firing"])
        context_task = escalation["context"]["task"]
        assert context_task["title"] == "Speed up the report page"
        assert context_task["specification"] == "The report page renders in under 1 s"
        assert context_task["scope"] == ["src/reports/**"]
        assert fifth["directive"] == "pause"
        await assert_operator_sees(agent, task_id, escalation)


async def test_file_modification_resets_the_no_progress_counter(db_path: str) -> None:
    async with connect(db_path) as agent:
        task_id = await start(agent)
        for _ in range(4):
            await progress(agent, task_id, note="looked around")

        changed = await progress(agent, task_id, files_modified=["src/app.py"], note="fixed the import")

        assert changed["counters"]["attempts_without_file_change"] == 0
        assert changed["escalation"] is None
        assert changed["directive"] == "proceed"
        # Four more idle attempts are four, not eight: still below the threshold of five.
        for _ in range(4):
            idle = await progress(agent, task_id, note="looked around")
        assert idle["counters"]["attempts_without_file_change"] == 4
        assert idle["escalation"] is None
        assert await all_escalations(agent, task_id) == []


async def test_agent_escalates_after_third_test_run_without_improvement(db_path: str) -> None:
    async with connect(db_path) as agent:
        # The seed's stall limit (the default is 5: docs/triggers.md), set for the task.
        task_id = await start(
            agent,
            title="Fix the failing tests",
            baseline_pass_rate=0.6,
            thresholds={"no_test_improvement_after": 3},
        )
        for _ in range(2):
            run = await run_tests(agent, task_id, passed=6, failed=4)
            assert run["test_run"]["pass_rate"] == 0.6
            assert run["test_run"]["improved"] is False
            assert run["escalation"] is None
        assert run["counters"]["test_runs_without_improvement"] == 2

        third = await run_tests(agent, task_id, passed=6, failed=4)

        escalation = third["escalation"]
        assert escalation is not None
        assert escalation["type"] == "test_stall"
        [trigger] = escalation["triggers"]
        assert "no test improvement after 3 attempts" in trigger["summary"]
        assert trigger["criteria"] == {"no_test_improvement_after": 3}
        evidence = escalation["context"]["evidence"]["test_stall"]
        assert evidence["baseline_pass_rate"] == 0.6
        assert [(h["passed"], h["failed"], h["pass_rate"]) for h in evidence["history"]] == [(6, 4, 0.6)] * 3
        assert third["directive"] == "pause"
        await assert_operator_sees(agent, task_id, escalation)


async def test_test_improvement_resets_the_stall_counter(db_path: str) -> None:
    async with connect(db_path) as agent:
        task_id = await start(agent, title="Fix the failing tests", baseline_pass_rate=0.6)
        for n in range(2):
            await run_tests(agent, task_id, passed=6, failed=4, files_modified=[f"src/fix_{n}.py"])

        better = await run_tests(agent, task_id, passed=7, failed=3, files_modified=["src/fix_2.py"])

        assert better["test_run"]["pass_rate"] == 0.7
        assert better["test_run"]["improved"] is True
        assert better["counters"]["test_runs_without_improvement"] == 0
        assert better["escalation"] is None
        assert better["directive"] == "proceed"
        # Two more runs at 70% are two without improvement, not four: still no escalation.
        for n in range(3, 5):
            flat = await run_tests(agent, task_id, passed=7, failed=3, files_modified=[f"src/fix_{n}.py"])
        assert flat["counters"]["test_runs_without_improvement"] == 2
        assert flat["escalation"] is None
        assert await all_escalations(agent, task_id) == []


# User story 3: scope drift escalation


async def test_agent_escalates_before_modifying_a_21st_file(db_path: str) -> None:
    earlier = files("src", 20)
    proposed = "src/module_21.py"
    async with connect(db_path) as agent:
        task_id = await start(agent)
        for path in earlier:
            check = await agent.call("check_edit", task_id=task_id, paths=[path])
            assert check["allowed"] is True
            assert check["escalation"] is None

        refused = await agent.call("check_edit", task_id=task_id, paths=[proposed])

        assert refused["allowed"] is False
        escalation = refused["escalation"]
        assert escalation is not None
        assert escalation["type"] == "file_limit"
        evidence = escalation["context"]["evidence"]["file_limit"]
        assert evidence["modified_files"] == earlier
        assert evidence["proposed_files"] == [proposed]
        assert "approve" in escalation["response_options"]
        assert refused["directive"] == "pause"
        # Created before the change: the 21st file was never added to the task's files.
        task = await agent.call("get_task", task_id=task_id)
        assert task["modified_files"] == earlier
        assert task["counters"]["files_modified"] == 20
        assert task["task"]["status"] == "paused"
        assert task["pending_escalation"]["escalation_id"] == escalation["escalation_id"]
        # Paused until a human answers: asking again is refused without a new escalation.
        again = await agent.call("check_edit", task_id=task_id, paths=[proposed])
        assert again["allowed"] is False
        assert again["directive"] == "pause"
        assert again["escalation"] is None
        assert again["holding"]["escalation_id"] == escalation["escalation_id"]
        await assert_operator_sees(agent, task_id, escalation)


async def test_agent_escalates_when_modifying_files_outside_the_specified_module(db_path: str) -> None:
    async with connect(db_path) as agent:
        task_id = await start(
            agent,
            title="Add two-factor login",
            specification="Work on the authentication module only",
            scope=["src/authentication/**"],
        )
        inside = await agent.call("check_edit", task_id=task_id, paths=["src/authentication/login.py"])
        assert inside["allowed"] is True

        outside = await agent.call("check_edit", task_id=task_id, paths=["src/payment/checkout.py"])

        assert outside["allowed"] is False
        assert "src/payment/checkout.py" in outside["reasons"][0]
        escalation = outside["escalation"]
        assert escalation is not None
        assert escalation["type"] == "scope_deviation"
        evidence = escalation["context"]["evidence"]["scope_deviation"]
        assert evidence["scope"] == ["src/authentication/**"]
        assert evidence["specification"] == "Work on the authentication module only"
        assert evidence["out_of_scope_paths"] == ["src/payment/checkout.py"]
        assert outside["directive"] == "pause"
        task = await agent.call("get_task", task_id=task_id)
        assert task["task"]["status"] == "paused"
        assert task["directive"] == "pause"
        assert "src/payment/checkout.py" not in task["modified_files"]
        await assert_operator_sees(agent, task_id, escalation)


async def test_sixteenth_file_within_scope_does_not_escalate(db_path: str) -> None:
    async with connect(db_path) as agent:
        task_id = await start(agent, scope=["src/authentication/**"])
        await progress(agent, task_id, files_modified=files("src/authentication", 15))

        check = await agent.call("check_edit", task_id=task_id, paths=["src/authentication/module_16.py"])
        report = await progress(agent, task_id, files_modified=["src/authentication/module_16.py"])

        assert check["allowed"] is True
        assert check["escalation"] is None
        assert check["directive"] == "proceed"
        assert report["escalation"] is None
        assert report["directive"] == "proceed"
        assert report["counters"]["files_modified"] == 16
        assert await all_escalations(agent, task_id) == []


# Total verification attempts


async def test_tenth_verification_attempt_escalates_with_verification_limit(db_path: str) -> None:
    async with connect(db_path) as agent:
        task_id = await start(agent, title="Make the suite green")
        # Every run is strictly better than the last, so only the verification count can fire.
        for n in range(1, 10):
            run = await run_tests(agent, task_id, passed=n, failed=10 - n, files_modified=[f"src/f{n}.py"])
            assert run["test_run"]["improved"] is True
            assert run["escalation"] is None
        assert run["counters"]["verification_attempts"] == 9

        tenth = await run_tests(agent, task_id, passed=10, failed=1, files_modified=["src/f10.py"])

        assert tenth["counters"]["verification_attempts"] == 10
        escalation = tenth["escalation"]
        assert escalation is not None
        assert escalation["type"] == "verification_limit"
        [trigger] = escalation["triggers"]
        assert trigger["criteria"] == {"total_verification_attempts": 10}
        assert trigger["observed"] == {"verification_attempts": 10}
        history = escalation["context"]["evidence"]["verification_limit"]["verification_history"]
        assert len(history) == 10
        assert tenth["directive"] == "pause"
        await assert_operator_sees(agent, task_id, escalation)


# Edge cases


async def test_out_of_scope_file_over_the_limit_gives_one_escalation_with_both_triggers(db_path: str) -> None:
    async with connect(db_path) as agent:
        task_id = await start(agent, scope=["src/**"])
        twenty = await progress(agent, task_id, files_modified=files("src", 20))
        assert twenty["escalation"] is None

        # An agent that skipped check_edit reports a 21st file, outside the scope too.
        report = await progress(agent, task_id, files_modified=["docs/notes.md"])

        escalation = report["escalation"]
        assert escalation is not None
        assert sorted(trigger_types(escalation)) == ["file_limit", "scope_deviation"]
        assert escalation["type"] == trigger_types(escalation)[0]
        evidence = escalation["context"]["evidence"]
        assert evidence["scope_deviation"]["out_of_scope_paths"] == ["docs/notes.md"]
        # A reported file is modified already: counted, not proposed (as get_task counts it).
        assert evidence["file_limit"]["proposed_files"] == []
        assert evidence["file_limit"]["modified_count"] == 21
        assert "docs/notes.md" in evidence["file_limit"]["modified_files"]
        assert "approve" in escalation["response_options"]
        assert [e["escalation_id"] for e in await all_escalations(agent, task_id)] == [
            escalation["escalation_id"]
        ]
        assert report["directive"] == "pause"


async def test_fifth_idle_attempt_that_is_third_stalled_test_run_gives_one_escalation(db_path: str) -> None:
    async with connect(db_path) as agent:
        task_id = await start(agent, baseline_pass_rate=0.5, thresholds={"no_test_improvement_after": 3})
        for _ in range(2):
            await progress(agent, task_id, note="read the stack trace")
        for _ in range(2):
            run = await run_tests(agent, task_id, passed=5, failed=5)
            assert run["escalation"] is None

        both = await run_tests(agent, task_id, passed=5, failed=5)

        assert both["counters"]["attempts_without_file_change"] == 5
        assert both["counters"]["test_runs_without_improvement"] == 3
        escalation = both["escalation"]
        assert escalation is not None
        assert sorted(trigger_types(escalation)) == ["no_file_progress", "test_stall"]
        assert set(escalation["context"]["evidence"]) == {"no_file_progress", "test_stall"}
        assert len(await all_escalations(agent, task_id)) == 1


async def test_trigger_while_an_escalation_is_pending_is_appended_to_it(db_path: str) -> None:
    async with connect(db_path) as agent:
        task_id = await start(agent)
        for _ in range(3):
            third = await fail(agent, task_id)
        escalation_id = third["escalation"]["escalation_id"]

        fourth = await fail(agent, task_id)
        # A repeat refreshes the trigger; the result names the escalation instead of repeating it.
        assert fourth["escalation"] is None
        assert fourth["holding"]["escalation_id"] == escalation_id
        refreshed = (await agent.call("get_escalation", escalation_id=escalation_id))["escalation"]
        [repeated] = refreshed["triggers"]
        assert repeated["fired_count"] == 2
        assert repeated["observed"]["consecutive_same_error"] == 4
        occurrences = evidence_of(refreshed, "repeated_error")["occurrences"]
        assert (occurrences["count"], len(occurrences["at_firing"]), len(occurrences["latest"])) == (4, 3, 1)

        for _ in range(5):
            idle = await progress(agent, task_id, note="waiting for a human")

        escalation = idle["escalation"]
        assert escalation["escalation_id"] == escalation_id
        assert trigger_types(escalation) == ["repeated_error", "no_file_progress"]
        assert escalation["type"] == "repeated_error"
        assert set(escalation["context"]["evidence"]) == {t["key"] for t in escalation["triggers"]}
        assert [e["escalation_id"] for e in await all_escalations(agent, task_id)] == [escalation_id]
        [queued] = await pending(agent, task_id)
        assert queued["trigger_types"] == ["repeated_error", "no_file_progress"]


async def test_reassigned_task_starts_fresh_counters_and_keeps_the_history(db_path: str) -> None:
    async with connect(db_path) as first:
        task_id = await start(first, agent_id="agent-a", baseline_pass_rate=0.5)
        await progress(
            first, task_id, files_modified=["src/a.py", "src/b.py"], tests_passed=1, tests_failed=1
        )
        await progress(first, task_id, note="idle")
        for _ in range(3):
            third = await fail(first, task_id)
        escalation_id = third["escalation"]["escalation_id"]
        before = await first.call("get_task", task_id=task_id)
        assert before["counters"]["consecutive_same_error"] == 3
        assert before["counters"]["files_modified"] == 2
        assert before["counters"]["verification_attempts"] == 1
        assert before["counters"]["attempts_without_file_change"] == 1
        assert before["counters"]["test_runs_without_improvement"] == 1

    async with connect(db_path) as second:
        taken = await second.call(
            "start_task", title="Fix the login form", task_id=task_id, agent_id="agent-b"
        )

        assert taken["reassigned"] is True
        assert taken["agent_id"] == "agent-b"
        counters = taken["counters"]
        assert counters["consecutive_same_error"] == 0
        assert counters["last_fingerprint"] is None
        assert counters["verification_attempts"] == 0
        assert counters["attempts_without_file_change"] == 0
        assert counters["test_runs_without_improvement"] == 0
        assert counters["files_modified"] == 0
        task = await second.call("get_task", task_id=task_id)
        assert task["escalation_ids"] == [escalation_id]
        assert task["failure_records"] == 1
        assert task["failure_occurrences"] == 3
        [kept] = await all_escalations(second, task_id)
        assert kept["escalation_id"] == escalation_id
        assert kept["agent_id"] == "agent-a"
        assert kept["status"] == "pending"
        # The new agent's run of identical errors starts at one; the record keeps counting.
        again = await fail(second, task_id)
        assert again["failure"]["consecutive_count"] == 1
        assert again["failure"]["occurrence_count"] == 4


# The headline (a trigger's first line: what the operator and the model read first) leads with
# the task's latest error when the trigger itself counts no error.

ASSERTION = "AssertionError: assert parse('1,5') == 1.5"
PYTEST_OUTPUT = f"""============================= test session starts ==============================
collected 4 items

tests/test_parse.py ...F                                                   [100%]

=================================== FAILURES ===================================
    def test_comma():
>       assert parse('1,5') == 1.5
E       {ASSERTION}

tests/test_parse.py:12: {ASSERTION.split(":", maxsplit=1)[0]}
=========================== short test summary info ============================
FAILED tests/test_parse.py::test_comma - {ASSERTION}
========================= 1 failed, 3 passed in 0.12s ==========================
"""


async def test_a_test_stall_headline_leads_with_the_latest_error(db_path: str) -> None:
    async with connect(db_path) as agent:
        task_id = await start(
            agent,
            title="Fix the failing tests",
            baseline_pass_rate=0.75,
            thresholds={"same_error_repeated": 10, "no_test_improvement_after": 3},  # only the stall may fire
        )
        for _ in range(3):
            await fail(agent, task_id, PYTEST_OUTPUT, attempted_action="pytest tests/test_parse.py")
            run = await run_tests(agent, task_id, passed=3, failed=1)
        [trigger] = run["escalation"]["triggers"]
        headline, *_ = trigger["summary"].splitlines()
        assert headline.startswith(f"{ASSERTION} (latest error)")  # not pytest's banner above it
        assert "no test improvement after 3 attempts" in headline


async def test_a_verification_limit_headline_leads_with_the_latest_error(db_path: str) -> None:
    async with connect(db_path) as agent:
        task_id = await start(
            agent, title="Make the suite green", thresholds={"total_verification_attempts": 2}
        )
        await fail(agent, task_id, "ImportError: cannot import name 'old' from 'pkg'")
        await run_tests(agent, task_id, passed=1, failed=3, files_modified=["src/a.py"])
        await fail(agent, task_id, PYTEST_OUTPUT)
        second = await run_tests(agent, task_id, passed=3, failed=1, files_modified=["src/b.py"])
        [trigger] = second["escalation"]["triggers"]
        assert trigger["type"] == "verification_limit"
        assert ASSERTION in trigger["summary"].splitlines()[0]  # the latest error, not the first
        assert "ImportError" not in trigger["summary"]


async def test_an_idle_run_headline_leads_with_the_latest_error_or_its_count_alone(db_path: str) -> None:
    async with connect(db_path) as agent:
        quiet = await start(agent, title="Read around")
        for _ in range(5):
            idle = await progress(agent, quiet, note="read the logs again")
        assert idle["escalation"]["triggers"][0]["summary"].startswith("5 attempts in a row changed no file")

        failing = await start(agent, title="Read around, failing", agent_id="agent-2")
        await fail(agent, failing, "ModuleNotFoundError: No module named 'yaml'")
        for _ in range(5):
            idle = await progress(agent, failing, note="read the logs again")
        headline = idle["escalation"]["triggers"][0]["summary"].splitlines()[0]
        assert headline.startswith("ModuleNotFoundError: No module named 'yaml'")
        assert "5 attempts in a row changed no file" in headline
