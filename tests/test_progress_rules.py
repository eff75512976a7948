"""What one progress report decides (rules/decide/progress.py), without a database.

``decide`` gets the task before the call and which of the reported files it already
modified, and says what to save, which triggers fire, which warnings are due and what the
agent is told; services/progress.py only writes it and gathers the evidence.
"""

from __future__ import annotations

from typing import Any

from mcp_server_escalation.models.tasks import Counters, Task
from mcp_server_escalation.models.thresholds import Thresholds
from mcp_server_escalation.rules.decide.decisions import Wording
from mcp_server_escalation.rules.decide.progress import ProgressDecision, Report, decide, touched
from rule_support import a_task

NOW = "2026-01-01T10:00:00.000Z"
# 5 attempts without a file, 3 runs without improvement (the seed's stall limit, which these
# tests measure; the default is 5), 20 files, warn 1 before
DEFAULTS = Thresholds(no_test_improvement_after=3)


def task(
    counters: Counters | None = None,
    *,
    thresholds: Thresholds = DEFAULTS,
    scope: list[str] | None = None,
    best_pass_rate: float | None = None,
) -> Task:
    return a_task(
        scope=scope if scope is not None else ["src/**"],
        thresholds=thresholds,
        best_pass_rate=best_pass_rate,
        counters=counters or Counters(),
    )


def report(
    on: Task | None = None, *, known: set[str] | None = None, now: str = NOW, **fields: Any
) -> ProgressDecision:
    """``decide`` on one report of ``fields`` (``Report``'s), as the service calls it."""
    on = on or task()
    given = Report(**{**fields, "files": tuple(fields.get("files", ()))})
    return decide(given, task=on, files=touched(given, on), known=known or set(), now=now)


def fired(decision: ProgressDecision) -> list[str]:
    return [f.firing.type for f in decision.fires]


def test_an_attempt_without_files_is_one_more_attempt_without_a_file_change_and_one_tool_call() -> None:
    decision = report(task(Counters(attempts_without_file_change=1, tool_calls=3)))
    assert decision.counters.attempts_without_file_change == 2
    assert decision.counters.tool_calls == 4


def test_an_attempt_with_files_ends_the_run_without_a_file_change() -> None:
    decision = report(task(Counters(attempts_without_file_change=4)), files=["src/basket.py"])
    assert decision.counters.attempts_without_file_change == 0


def test_a_successful_attempt_without_files_leaves_the_run_without_a_file_change_as_it_is() -> None:
    decision = report(task(Counters(attempts_without_file_change=3)), outcome="success")
    assert decision.counters.attempts_without_file_change == 3


def test_what_is_not_an_attempt_leaves_the_run_without_a_file_change_alone_and_fires_no_stall() -> None:
    decision = report(task(Counters(attempts_without_file_change=5)), attempt=False)
    assert decision.counters.attempts_without_file_change == 5
    assert fired(decision) == []


def test_files_changed_by_what_is_not_an_attempt_still_end_the_run_without_a_file_change() -> None:
    decision = report(task(Counters(attempts_without_file_change=4)), attempt=False, files=["src/a.py"])
    assert decision.counters.attempts_without_file_change == 0


def test_a_success_naming_no_operation_ends_every_run_of_identical_errors() -> None:
    failing = Counters(
        consecutive_same_error=2, last_fingerprint="f1", previous_fingerprint="f0", previous_count=2
    )
    decision = report(task(failing), outcome="success")
    assert decision.counters.consecutive_same_error == 0
    assert decision.counters.previous_count == 0


def test_a_success_of_another_operation_leaves_the_run_of_identical_errors_as_it_is() -> None:
    failing = Counters(consecutive_same_error=2, last_fingerprint="f1", last_failed_operation="pytest")
    decision = report(task(failing), outcome="success", operation="ls -la")
    assert decision.counters.consecutive_same_error == 2


def test_a_call_another_service_counted_uses_no_more_of_the_tool_call_budget() -> None:
    assert report(task(Counters(tool_calls=3)), new_call=False).counters.tool_calls == 3


def test_reported_files_are_counted_once_relative_to_the_project_and_sorted() -> None:
    decision = report(files=["/repo/src/b.py", "src/a.py", "./src/b.py"], known={"src/a.py"})
    assert decision.paths == ("src/a.py", "src/b.py")
    assert decision.new_paths == ("src/b.py",)
    assert decision.counters.files_modified == 1


def test_a_test_run_is_measured_against_the_best_earlier_pass_rate() -> None:
    decision = report(task(best_pass_rate=0.5), tests_passed=3, tests_failed=1)
    assert decision.test_run is not None
    assert (decision.test_run.pass_rate, decision.test_run.improved) == (0.75, True)
    assert (decision.test_run.at, decision.test_run.step, decision.test_run.agent_id) == (
        NOW,
        "main",
        "agent-1",
    )
    assert decision.best_pass_rate == 0.75
    assert decision.counters.test_runs_without_improvement == 0


def test_a_test_run_no_better_than_the_best_extends_the_stall_and_keeps_the_best() -> None:
    decision = report(task(best_pass_rate=0.8), tests_passed=3, tests_failed=1)
    assert decision.test_run is not None
    assert decision.test_run.improved is False
    assert decision.best_pass_rate == 0.8
    assert decision.counters.test_runs_without_improvement == 1


def test_a_test_run_of_another_command_is_measured_only_against_that_command() -> None:
    earlier = Counters(last_test_operation="pytest -k basket", test_operation_best=0.9)
    decision = report(task(earlier, best_pass_rate=0.9), tests_passed=1, tests_failed=1, operation="pytest")
    assert decision.test_run is not None
    assert decision.test_run.improved is True


def test_a_test_run_with_failures_is_a_verification_attempt_and_a_failing_test_run() -> None:
    decision = report(tests_passed=3, tests_failed=1)
    assert decision.counters.verification_attempts == 1
    assert decision.counters.failing_test_runs == 1


def test_a_test_run_where_every_test_passes_is_neither_a_verification_attempt_nor_a_stall() -> None:
    decision = report(task(Counters(test_runs_without_improvement=2), best_pass_rate=1.0), tests_passed=4)
    assert decision.counters.verification_attempts == 0
    assert decision.counters.failing_test_runs == 0
    assert decision.counters.test_runs_without_improvement == 0


def test_a_report_of_failed_tests_alone_is_a_test_run() -> None:
    decision = report(tests_failed=2)
    assert decision.test_run is not None
    assert (decision.test_run.passed, decision.test_run.pass_rate) == (0, 0.0)
    assert decision.counters.failing_test_runs == 1


def test_a_report_without_test_counts_records_no_test_run() -> None:
    decision = report(files=["src/a.py"])
    assert decision.test_run is None
    assert decision.counters.verification_attempts == 0


def test_the_attempt_that_reaches_the_limit_without_a_file_change_fires_no_file_progress() -> None:
    decision = report(task(Counters(attempts_without_file_change=4)))
    assert fired(decision) == ["no_file_progress"]
    stall = decision.fires[0]
    assert stall.summary == Wording("trigger_no_file_progress", {"count": 5, "threshold": 5})
    assert stall.facts == {
        "task": {
            "title": "Fix the basket total",
            "specification": "The basket total must include the discount.",
        }
    }


def test_a_test_run_that_reaches_the_stall_limit_fires_a_test_stall_worded_with_both_rates() -> None:
    decision = report(
        task(Counters(test_runs_without_improvement=2), best_pass_rate=0.8), tests_passed=3, tests_failed=1
    )
    assert fired(decision) == ["test_stall"]
    assert decision.fires[0].summary == Wording(
        "trigger_test_stall", {"count": 3, "threshold": 3, "best_pass_rate": "80%", "latest_pass_rate": "75%"}
    )


def test_the_failing_test_run_that_reaches_the_verification_limit_fires_it() -> None:
    decision = report(task(Counters(verification_attempts=9)), tests_passed=3, tests_failed=1)
    assert fired(decision) == ["verification_limit"]
    assert decision.fires[0].summary == Wording("trigger_verification_limit", {"count": 10, "threshold": 10})


def test_a_file_outside_the_scope_fires_a_scope_deviation_naming_it() -> None:
    decision = report(files=["docs/readme.md", "src/a.py"])
    assert fired(decision) == ["scope_deviation"]
    scope = decision.fires[0]
    assert scope.summary == Wording(
        "trigger_scope_deviation", {"paths": "docs/readme.md", "scope": ["src/**"]}
    )
    assert scope.facts["out_of_scope_paths"] == ["docs/readme.md"]


def test_a_task_that_does_not_check_its_scope_fires_nothing_for_a_file_outside_it() -> None:
    unchecked = task(thresholds=Thresholds(spec_deviation_detected=False))
    assert fired(report(unchecked, files=["docs/readme.md"])) == []


def test_the_new_file_past_the_limit_fires_the_file_limit_with_the_new_files_counted_as_modified() -> None:
    decision = report(task(Counters(files_modified=20)), files=["src/a.py", "src/b.py"], known={"src/a.py"})
    assert fired(decision) == ["file_limit"]
    # A report names files already changed: modified, not proposed.
    assert decision.fires[0].summary == Wording(
        "trigger_file_limit_reported", {"count": 21, "limit": 20, "added": "src/b.py"}
    )
    assert decision.fires[0].facts == {"proposed_files": [], "limit": 20}


def test_files_the_task_already_modified_never_fire_the_file_limit() -> None:
    decision = report(task(Counters(files_modified=20)), files=["src/a.py"], known={"src/a.py"})
    assert fired(decision) == []


def test_the_call_that_uses_up_a_budget_fires_it() -> None:
    capped = task(Counters(tool_calls=4), thresholds=Thresholds(max_tool_calls=5))
    assert [f.key for f in report(capped, files=["src/a.py"]).fires] == ["budget:tool_calls"]


def test_triggers_fire_in_one_order_progress_then_scope_then_files_then_budgets() -> None:
    counters = Counters(
        test_runs_without_improvement=2, verification_attempts=9, files_modified=20, tool_calls=4
    )
    everything = task(
        counters, thresholds=Thresholds(max_tool_calls=5, no_test_improvement_after=3), best_pass_rate=0.9
    )
    decision = report(everything, files=["docs/x.md"], tests_passed=1, tests_failed=1)
    assert fired(decision) == ["test_stall", "verification_limit", "scope_deviation", "file_limit", "budget"]


def test_one_attempt_before_the_no_file_progress_limit_is_warned_of() -> None:
    decision = report(task(Counters(attempts_without_file_change=3)))
    assert decision.warnings == (Wording("warning_no_file_progress", {"count": 4, "threshold": 5}),)


def test_one_run_before_the_stall_limit_is_warned_of_with_both_rates() -> None:
    decision = report(
        task(Counters(test_runs_without_improvement=1), best_pass_rate=0.8), tests_passed=1, tests_failed=1
    )
    assert (
        Wording(
            "warning_test_stall", {"count": 2, "threshold": 3, "best_pass_rate": 0.8, "latest_pass_rate": 0.5}
        )
        in decision.warnings
    )


def test_one_failing_run_before_the_verification_limit_is_warned_of() -> None:
    decision = report(task(Counters(verification_attempts=8)), tests_passed=1, tests_failed=1)
    assert decision.warnings == (Wording("warning_verification_limit", {"count": 9, "threshold": 10}),)


def test_a_passing_run_one_before_the_verification_limit_is_not_warned_of() -> None:
    decision = report(task(Counters(verification_attempts=9), best_pass_rate=1.0), tests_passed=2)
    assert decision.warnings == ()


def test_a_call_that_fires_a_trigger_carries_no_warning_even_one_due() -> None:
    counters = Counters(attempts_without_file_change=3, tool_calls=4)
    assert report(task(counters)).warnings != ()
    decision = report(task(counters, thresholds=Thresholds(max_tool_calls=5)))
    assert fired(decision) == ["budget"]
    assert decision.warnings == ()


def test_the_agent_is_told_its_progress_was_recorded() -> None:
    assert report().message == Wording("message_progress_recorded", {"task_id": "t-1"})


def test_the_action_records_the_step_the_outcome_the_files_the_note_and_the_pass_rate() -> None:
    given = Report(
        files=("src/a.py",), tests_passed=1, tests_failed=1, outcome="failure", note="half", step="fix"
    )
    decision = decide(given, task=task(), files=touched(given, task()), known=set(), now=NOW)
    assert decision.action(given) == {
        "step": "fix",
        "outcome": "failure",
        "files": ["src/a.py"],
        "note": "half",
        "pass_rate": 0.5,
    }
