"""What the edit gate decides (rules/decide/edits.py), without a database.

``decide_edit`` gets the task, the paths the agent is about to change and which of them the
task already modified, and says for each path whether it may be changed and why not, which
new paths the task counts, which triggers a refusal fires and what the agent is told;
services/progress.py only writes it and gathers the evidence.
"""

from __future__ import annotations

from mcp_server_escalation.models.tasks import Counters, Task
from mcp_server_escalation.models.thresholds import Thresholds
from mcp_server_escalation.rules.decide.decisions import Wording
from mcp_server_escalation.rules.decide.edits import (
    EditDecision,
    decide_edit,
    file_limit_fires,
    inactive_reason,
    normalised,
    refused_all,
)
from rule_support import a_task


def task(
    files_modified: int = 0,
    *,
    status: str = "active",
    scope: list[str] | None = None,
    thresholds: Thresholds | None = None,
) -> Task:
    return a_task(
        scope=scope if scope is not None else ["src/**"],
        status=status,
        thresholds=thresholds or Thresholds(files_modified_exceeds=3),
        counters=Counters(files_modified=files_modified),
    )


def check(paths: list[str], on: Task | None = None, known: set[str] | None = None) -> EditDecision:
    """``decide_edit`` on ``paths``, as the service calls it."""
    on = on or task()
    return decide_edit(paths, normalised(paths, on), task=on, known=known or set())


def reasons(decision: EditDecision) -> list[str | None]:
    return [c.refusal.template if c.refusal else None for c in decision.paths]


def test_paths_inside_the_scope_and_the_limit_are_allowed_and_counted_as_the_task_counts_them() -> None:
    decision = check(["/repo/src/b.py", "src/a.py"])
    assert decision.allowed
    assert [(c.given, c.normalised) for c in decision.paths] == [
        ("/repo/src/b.py", "src/b.py"),
        ("src/a.py", "src/a.py"),
    ]
    assert decision.counted == ("src/a.py", "src/b.py")
    assert decision.fires == ()


def test_an_allowed_edit_tells_the_agent_how_many_paths_it_asked_for() -> None:
    decision = check(["src/a.py", "src/a.py", "src/b.py"], known={"src/b.py"})
    assert decision.message == Wording("message_edit_allowed", {"task_id": "t-1", "count": 3})


def test_a_path_outside_the_project_is_refused_as_given_and_fires_a_scope_deviation() -> None:
    decision = check(["../elsewhere/x.py"])
    assert not decision.allowed
    assert decision.paths[0].refusal == Wording("reason_outside_root", {"path": "../elsewhere/x.py"})
    assert [f.firing.type for f in decision.fires] == ["scope_deviation"]
    assert decision.fires[0].facts["out_of_scope_paths"] == ["/elsewhere/x.py"]


def test_a_path_outside_the_scope_is_refused_naming_the_scope() -> None:
    decision = check(["docs/readme.md", "src/a.py"])
    assert decision.paths[0].refusal == Wording(
        "reason_out_of_scope", {"path": "docs/readme.md", "scope": ["src/**"]}
    )
    assert decision.paths[1].refusal is None
    assert not decision.allowed


def test_a_task_that_does_not_check_its_scope_allows_a_path_outside_it() -> None:
    unchecked = task(thresholds=Thresholds(spec_deviation_detected=False))
    assert check(["docs/readme.md"], unchecked).allowed


def test_a_path_outside_the_project_is_refused_even_when_the_scope_is_not_checked_and_fires_nothing() -> None:
    decision = check(["../elsewhere/x.py"], task(thresholds=Thresholds(spec_deviation_detected=False)))
    assert reasons(decision) == ["reason_outside_root"]
    assert decision.fires == ()


def test_the_first_new_path_past_the_limit_is_refused_with_the_count_it_would_make() -> None:
    decision = check(["src/a.py", "src/b.py"], task(files_modified=2))
    assert reasons(decision) == [None, "reason_file_limit"]
    assert decision.paths[1].refusal == Wording(
        "reason_file_limit", {"path": "src/b.py", "count": 4, "limit": 3}
    )


def test_a_refused_file_limit_proposes_every_new_path_of_the_call_not_only_those_past_it() -> None:
    decision = check(["src/b.py", "src/a.py"], task(files_modified=2))
    assert [f.firing.type for f in decision.fires] == ["file_limit"]
    assert decision.fires[0].summary == Wording(
        "trigger_file_limit", {"count": 4, "limit": 3, "proposed": "src/a.py, src/b.py"}
    )
    assert decision.fires[0].facts == {"proposed_files": ["src/a.py", "src/b.py"], "limit": 3}


def test_paths_the_task_already_modified_and_repeats_in_one_call_count_once() -> None:
    decision = check(
        ["src/a.py", "src/b.py", "src/b.py", "./src/b.py"], task(files_modified=3), known={"src/a.py"}
    )
    assert reasons(decision) == [None, "reason_file_limit", None, None]
    assert decision.counted == ("src/b.py",)


def test_a_file_limit_refusal_and_a_scope_refusal_fire_both_scope_first() -> None:
    decision = check(["docs/x.md", "src/a.py"], task(files_modified=3))
    assert [f.firing.type for f in decision.fires] == ["scope_deviation", "file_limit"]


def test_a_task_with_no_scope_names_it_as_any_when_a_path_leaves_the_project() -> None:
    decision = check(["../elsewhere/x.py"], task(scope=[]))
    assert decision.fires[0].summary == Wording(
        "trigger_scope_deviation", {"paths": "/elsewhere/x.py", "scope": ["(any)"]}
    )
    assert decision.fires[0].facts["scope"] == []


def test_the_history_records_each_path_as_the_task_counts_it_and_the_verdict() -> None:
    assert check(["./src/a.py", "docs/x.md"]).action == {
        "paths": ["src/a.py", "docs/x.md"],
        "allowed": False,
        "refused": ["docs/x.md"],
    }


def test_an_active_task_no_escalation_holds_may_edit() -> None:
    assert inactive_reason(task(), None) is None


def test_a_task_an_escalation_holds_refuses_every_path_naming_the_escalation() -> None:
    reason = inactive_reason(task(status="paused"), 7)
    assert reason == Wording("reason_task_not_active", {"status": "paused", "escalation_id": 7})
    refused = refused_all(reason, ["src/a.py", "./src/b.py"], normalised(["src/a.py", "./src/b.py"], task()))
    assert [(c.normalised, c.refusal) for c in refused] == [("src/a.py", reason), ("src/b.py", reason)]


def test_a_task_that_ended_refuses_every_path_with_no_escalation_to_name() -> None:
    reason = inactive_reason(task(status="completed"), None)
    assert reason == Wording("reason_task_not_active", {"status": "completed", "escalation_id": "-"})


def test_the_file_limit_fires_only_past_the_limit() -> None:
    limit = Thresholds(files_modified_exceeds=3)
    assert file_limit_fires(3, limit, ["src/a.py"]) is None
    assert file_limit_fires(4, limit, ["src/a.py"]) is not None
