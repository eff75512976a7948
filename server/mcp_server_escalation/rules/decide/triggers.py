"""The objective triggers (docs/triggers.md) as pure functions of counters and thresholds.

A counter changes only through these functions, and a trigger fires only when the call
that changed its counter brings it to the threshold (``>=``, so a counter that keeps
rising while an escalation is open keeps adding evidence to that escalation). No trigger
looks at a score: each compares a count or a rate with a configured number.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from ...models.limits import EscalationType, Priority, ResponseType
from ...models.tasks import Counters
from ...models.thresholds import Thresholds
from ..triggers.records import BY_TYPE, RECORDS

# The answers an operator may give each trigger type (its record's).
RESPONSE_OPTIONS: dict[str, tuple[ResponseType, ...]] = {r.type: r.answers for r in RECORDS}
_OPTION_ORDER: tuple[ResponseType, ...] = (
    "approve",
    "guidance",
    "override",
    "terminate",
    "withdraw",
)

# Each counter of a task and the threshold it is compared with, as the operator's views list
# them (``tasks show``, the console's task page): every record's, in the records' order.
COUNTER_LIMITS: tuple[tuple[str, str], ...] = tuple(pair for r in RECORDS for pair in r.limits)

# The counters each trigger type measures; an acknowledged human answer starts them afresh,
# so one answer buys the agent a full new allowance rather than an instant re-escalation.
COUNTER_RESET_ON_ACK: dict[str, tuple[str, ...]] = {
    r.type: r.resets_on_ack for r in RECORDS if r.resets_on_ack
}


@dataclass(frozen=True)
class Firing:
    """A trigger that fired: its type, the threshold, and what was measured."""

    type: EscalationType
    criteria: dict[str, Any]
    observed: dict[str, Any]

    @property
    def priority(self) -> Priority:
        """Its record's: external blockers are urgent (a human must act, the agent cannot)."""
        return BY_TYPE[self.type].priority


def ack_resets(types: list[str]) -> dict[str, object]:
    """The counters an acknowledged answer to triggers of ``types`` starts again, each with
    its value for a new task (0, no fingerprint)."""
    fields = Counters.model_fields
    return {name: fields[name].default for t in types for name in COUNTER_RESET_ON_ACK.get(t, ())}


def response_options(types: list[str]) -> list[ResponseType]:
    """The union of the answers allowed for every trigger type, in a fixed order."""
    allowed = {option for t in types for option in RESPONSE_OPTIONS[t]}
    return [option for option in _OPTION_ORDER if option in allowed]


def after_failure(counters: Counters, fingerprint: str, operation: str | None = None) -> Counters:
    """The counts after a failure: a run of the same error goes on through one other failure.

    The same fingerprint as the current run: +1. The fingerprint of the run one other failure
    interrupted: that run goes on, +1 (fix A, break B, back to A is going round in circles,
    and so is alternating between two errors). Anything else starts a run at 1 and keeps
    the run it interrupts to come back to; a second failure of the interrupting error ends
    the run before it. ``operation`` (a key of ``rules.reading.shell_work.operation_key``) is what
    failed: its later success ends its run (``after_success``)."""
    c = counters
    if c.consecutive_same_error > 0 and c.last_fingerprint == fingerprint:
        current, previous = _Run(fingerprint, c.consecutive_same_error + 1, operation), _NO_RUN
    elif c.previous_count > 0 and c.previous_fingerprint == fingerprint:
        current, previous = _Run(fingerprint, c.previous_count + 1, operation), _current_run(c)
    else:
        current, previous = _Run(fingerprint, 1, operation), _current_run(c)
    return _with_runs(c, current, previous)


def after_success(counters: Counters, operation: str | None = None) -> Counters:
    """A success of the operation that failed ends its run of identical errors.

    An agent edits and reads between its tries; those commands succeeding say nothing about
    the failure, so a success of another operation leaves the runs as they are. A success
    that names no operation (an agent's own ``report_progress(outcome="success")``) ends
    both."""
    current, previous = _current_run(counters), _previous_run(counters)
    if operation is None or current.operation == operation:
        current = _NO_RUN
    if operation is None or previous.operation == operation:
        previous = _NO_RUN
    return _with_runs(counters, current, previous)


class _Run(NamedTuple):
    """A run of one error: its fingerprint, how many times it occurred, what failed."""

    fingerprint: str | None
    times: int
    operation: str | None


_NO_RUN = _Run(None, 0, None)


def _current_run(c: Counters) -> _Run:
    return _Run(c.last_fingerprint, c.consecutive_same_error, c.last_failed_operation)


def _previous_run(c: Counters) -> _Run:
    return _Run(c.previous_fingerprint, c.previous_count, c.previous_operation)


def _with_runs(c: Counters, current: _Run, previous: _Run) -> Counters:
    return c.model_copy(
        update={
            "consecutive_same_error": current.times,
            "last_fingerprint": current.fingerprint,
            "last_failed_operation": current.operation,
            "previous_fingerprint": previous.fingerprint,
            "previous_count": previous.times,
            "previous_operation": previous.operation,
        }
    )


def after_attempt(counters: Counters, *, changed_files: bool, succeeded: bool = False) -> Counters:
    """One report_progress call: with files it resets the no-change run, without it extends it.

    A successful attempt without files (every test passing, a check that passed) leaves the
    run as it is: it is verifying work done, not trying again without changing anything."""
    if succeeded and not changed_files:
        return counters
    value = 0 if changed_files else counters.attempts_without_file_change + 1
    return counters.model_copy(update={"attempts_without_file_change": value})


def after_verification(counters: Counters, *, passed: bool = False) -> Counters:
    """A test run with failures or a rejected verdict is one more verification attempt.

    A check that passed is not a try that failed: agents run passing tests again and again
    to confirm their work, and counting those paused runs that were going well."""
    if passed:
        return counters
    return counters.model_copy(update={"verification_attempts": counters.verification_attempts + 1})


def test_baseline(counters: Counters, best_of_task: float | None, operation: str | None) -> float | None:
    """The best earlier pass rate a test run is measured against.

    When the caller names the test command (the host hooks do), only earlier runs of that
    command count: another selection of tests (``-k other``, one file instead of the suite)
    is another measure, and comparing their rates found stalls in runs that were fine."""
    if operation is None:
        return best_of_task
    return counters.test_operation_best if operation == counters.last_test_operation else None


def after_test_run(
    counters: Counters,
    *,
    rate: float,
    improved: bool,
    all_passed: bool = False,
    operation: str | None = None,
) -> Counters:
    """Improvement, or every test passing, resets the stall count; anything else extends it.

    A run where every test passes cannot improve: repeating it is checking, not a stall."""
    value = 0 if improved or all_passed else counters.test_runs_without_improvement + 1
    same = operation is not None and operation == counters.last_test_operation
    best = max(rate, counters.test_operation_best or 0.0) if same else rate
    return counters.model_copy(
        update={
            "test_runs_without_improvement": value,
            "last_test_operation": operation,
            "test_operation_best": best if operation is not None else None,
        }
    )


def pass_rate(passed: int, failed: int) -> float:
    """Share of passing tests, rounded so that equal rates compare equal."""
    return round(passed / (passed + failed), 4)


def test_improved(rate: float, best_earlier: float | None) -> bool:
    """Strictly above the best earlier rate; the first run of a task with no baseline counts."""
    return best_earlier is None or rate > best_earlier


test_improved.__test__ = False  # type: ignore[attr-defined]  # not a pytest test


def warning_due(count: int, threshold: int, t: Thresholds) -> bool:
    """True at exactly ``warn_before`` counts short of ``threshold`` (once per run).

    Never at the first count: one failure, or one attempt, is nothing to warn about."""
    at = threshold - t.warn_before
    return t.warn_before > 0 and at >= 2 and count == at


def repeated_error(
    counters: Counters, t: Thresholds, *, transient: bool, refusal: bool = False
) -> Firing | None:
    """Same error ``same_error_repeated`` times in a run (``after_failure``), a tool's refusal
    once more (``repeat_allowance``); a transient one becomes a blocker."""
    allowance = repeat_allowance(t, blocker=False, declared=False, refusal=refusal)
    if counters.consecutive_same_error < allowance:
        return None
    criteria: dict[str, Any] = {"same_error_repeated": t.same_error_repeated}
    if refusal:
        criteria["refusal_repeated"] = allowance
    return Firing(
        "external_blocker" if transient else "repeated_error",
        criteria,
        {
            "consecutive_same_error": counters.consecutive_same_error,
            "fingerprint": counters.last_fingerprint,
        },
    )


def at_limit(kind: EscalationType, counters: Counters, t: Thresholds) -> Firing | None:
    """A counting trigger of one counter and one threshold (its record's ``limits``) whose
    count reached its threshold: what it measured against what it allows."""
    [(counter, threshold)] = BY_TYPE[kind].limits
    count, limit = getattr(counters, counter), getattr(t, threshold)
    if count < limit:
        return None
    return Firing(kind, {threshold: limit}, {counter: count})


def verification_limit(counters: Counters, t: Thresholds) -> Firing | None:
    """Total verification attempts of the task reached the limit."""
    return at_limit("verification_limit", counters, t)


def no_file_progress(counters: Counters, t: Thresholds) -> Firing | None:
    """Too many attempts in a row changed no file."""
    return at_limit("no_file_progress", counters, t)


def test_stall(counters: Counters, t: Thresholds, *, best: float | None, latest: float) -> Firing | None:
    """Too many test runs in a row without a better pass rate."""
    if counters.test_runs_without_improvement < t.no_test_improvement_after:
        return None
    return Firing(
        "test_stall",
        {"no_test_improvement_after": t.no_test_improvement_after},
        {
            "test_runs_without_improvement": counters.test_runs_without_improvement,
            "best_pass_rate": best,
            "latest_pass_rate": latest,
        },
    )


def file_limit(count_after: int, t: Thresholds, proposed: list[str]) -> Firing | None:
    """More distinct files than ``files_modified_exceeds``."""
    if count_after <= t.files_modified_exceeds:
        return None
    return Firing(
        "file_limit",
        {"files_modified_exceeds": t.files_modified_exceeds},
        {"files_modified": count_after, "proposed": proposed},
    )


def scope_deviation(outside: list[str], scope: list[str], t: Thresholds) -> Firing | None:
    """A change outside the task's scope globs (or the project root)."""
    if not outside or not t.spec_deviation_detected:
        return None
    return Firing(
        "scope_deviation",
        {"spec_deviation_detected": True, "scope": scope},
        {"out_of_scope_paths": outside},
    )


def repeat_allowance(t: Thresholds, *, blocker: bool, declared: bool, refusal: bool = False) -> int:
    """How often one failure may occur in a run (``after_failure``) before it escalates.

    A tool's refusal of a malformed call (``tool_refusal``: the text to replace is not in
    the file, the file already exists) changed nothing and told the model why; models fix
    such a call by themselves. The count at which another error pages warns instead, and
    only the same refusal once more pages: it outlived a warning.

    A blocker the caller declares (``signal_type`` given) escalates at once: the agent says
    it cannot go on. One read off a tool's output by the patterns (``No module named x``)
    escalates once it repeats ``blocker_repeated`` times in a row: agents work around most
    of them at the next step (the scratch script run from the wrong folder, a test runner
    not installed while another is). Any other failure has ``same_error_repeated``."""
    if refusal:
        return t.same_error_repeated + 1
    if not blocker:
        return t.same_error_repeated
    return 1 if declared else t.blocker_repeated


def external_blocker(signal_type: str, details: dict[str, Any], *, repeated: int = 1) -> Firing:
    """A blocker the agent cannot fix by trying again (``repeat_allowance`` says when)."""
    return Firing(
        "external_blocker",
        {
            "immediate": repeated == 1,
            "signal_types": ["missing_dependency", "permission_denied", "api_unavailable"],
        },
        {"signal_type": signal_type, "consecutive_same_error": repeated, **details},
    )


def stagnation(cycles_done: int, t: Thresholds, *, step: str, similar_count: int) -> Firing | None:
    """A step that stagnated in more automatic cycles than allowed goes to a human."""
    if cycles_done <= t.max_escalation_cycles:
        return None
    return Firing(
        "stagnation",
        {
            "max_escalation_cycles": t.max_escalation_cycles,
            "stagnation_patience": t.stagnation_patience,
            "stagnation_similarity": t.stagnation_similarity,
        },
        {"step": step, "cycles": cycles_done, "similar_count": similar_count},
    )


# The budgets (docs/triggers.md, "Budgets"): the threshold that caps each, by the name its trigger key
# and evidence carry (``budget:tool_calls``).
BUDGET_THRESHOLDS: dict[str, str] = {
    "tool_calls": "max_tool_calls",
    "minutes": "max_minutes",
    "failing_test_runs": "max_failing_test_runs",
}
BUDGET_KEY_PREFIX = "budget:"


def after_tool_call(counters: Counters) -> Counters:
    """One more recorded tool call of the task."""
    return counters.model_copy(update={"tool_calls": counters.tool_calls + 1})


def after_failing_test_run(counters: Counters) -> Counters:
    """One more test run with at least one failing test."""
    return counters.model_copy(update={"failing_test_runs": counters.failing_test_runs + 1})


def minutes_between(since: datetime, now: datetime) -> int:
    """Whole minutes from ``since`` to ``now`` (never negative: a clock may step back)."""
    return max(0, int((now - since).total_seconds() // 60))


def budgets(counters: Counters, t: Thresholds, *, since: datetime, now: datetime) -> list[Firing]:
    """Every budget the task has used up: count (or minutes since ``since``) at its cap."""
    used = {
        "tool_calls": counters.tool_calls,
        "minutes": minutes_between(since, now),
        "failing_test_runs": counters.failing_test_runs,
    }
    fired: list[Firing] = []
    for name, threshold in BUDGET_THRESHOLDS.items():
        limit = getattr(t, threshold)
        if limit is None or used[name] < limit:
            continue
        fired.append(Firing("budget", {threshold: limit}, {"budget": name, "used": used[name]}))
    return fired


def budget_resets(trigger_keys: list[str], now: str) -> dict[str, Any]:
    """What an acknowledged answer to a budget restarts: every budget, from ``now``.

    The answer is a checkpoint: a human has just looked at the whole task, so each budget
    grants its full allowance again and its evidence counts from one moment (``since``).
    """
    if not any(key.startswith(BUDGET_KEY_PREFIX) for key in trigger_keys):
        return {}
    return {**ack_resets(["budget"]), "budget_since": now}
