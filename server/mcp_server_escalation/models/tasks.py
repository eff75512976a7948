"""Tasks, their counters and their progress history."""

from __future__ import annotations

from pydantic import Field

from .base import Record
from .limits import TaskStatus
from .thresholds import Thresholds


class Counters(Record):
    """The measured values the triggers compare with thresholds (current agent only)."""

    consecutive_same_error: int = 0
    last_fingerprint: str | None = None
    # The triggers' own bookkeeping: kept in the store, read by the rules, left out of every
    # result (exclude): no reader, model or person, acts on an operation key or a run it may
    # come back to, and they made every result that carries the counters longer.
    last_failed_operation: str | None = Field(
        None,
        exclude=True,
        description="Key of the operation that failed last; its success ends the run of errors",
    )
    previous_fingerprint: str | None = Field(
        None, exclude=True, description="The run of errors the last failure interrupted, to come back to"
    )
    previous_count: int = Field(0, exclude=True, description="That run's count")
    previous_operation: str | None = Field(
        None, exclude=True, description="Key of that run's failing operation"
    )
    changed_since_error: list[str] = Field(
        default_factory=list,
        exclude=True,
        description="Names of files changed since the current run's error last occurred (remedies tried)",
    )
    changed_since_previous: list[str] = Field(
        default_factory=list, exclude=True, description="The same, for the interrupted run"
    )
    failed_command_files: list[str] = Field(
        default_factory=list,
        exclude=True,
        description="Names of files the failing command names (its check, no remedy)",
    )
    previous_command_files: list[str] = Field(
        default_factory=list, exclude=True, description="The same, for the interrupted run"
    )
    last_test_operation: str | None = Field(
        None,
        exclude=True,
        description="Key of the latest test command; its own best rate is the stall baseline",
    )
    test_operation_best: float | None = Field(
        None, exclude=True, description="Best pass rate of that test command"
    )
    verification_attempts: int = 0
    attempts_without_file_change: int = 0
    test_runs_without_improvement: int = 0
    files_modified: int = Field(0, description="Distinct normalised paths modified")
    tool_calls: int = Field(0, description="Recorded tool calls (the max_tool_calls budget)")
    failing_test_runs: int = Field(0, description="Test runs with failures (max_failing_test_runs)")
    budget_since: str | None = Field(
        None, description="Where max_minutes counts from; null: the task's start"
    )


class Task(Record):
    """One piece of agent work."""

    task_id: str
    title: str
    specification: str
    scope: list[str]
    project: str
    agent_id: str
    generation: int = Field(description="Assignment number; bumps when another agent takes over")
    status: TaskStatus
    thresholds: Thresholds
    baseline_pass_rate: float | None
    best_pass_rate: float | None
    approach: str | None = Field(description="An operator's override: the approach to follow")
    end_note: str | None
    counters: Counters
    created_at: str
    updated_at: str
    ended_at: str | None


class TestRun(Record):
    """One reported test run and whether it beat every earlier pass rate."""

    __test__ = False  # not a pytest class

    at: str
    step: str
    agent_id: str
    passed: int
    failed: int
    pass_rate: float
    improved: bool


class ProgressEntry(Record):
    """One report_progress call: an attempt."""

    at: str
    step: str
    agent_id: str
    outcome: str
    files: list[str]
    note: str | None
    tests_passed: int | None
    tests_failed: int | None
    pass_rate: float | None


class Action(Record):
    """One entry of a task's action history (what the agent did, in order)."""

    at: str
    agent_id: str
    kind: str
    detail: dict[str, object]


class TimelineEntry(Record):
    """One entry of a task's timeline, in words: what happened, what it said, the files touched."""

    number: int = Field(description="Its place in the task's history, 1 for the first action")
    action_id: int
    at: str
    agent_id: str
    what: str = Field(description="What happened, in words: failure, attempt, progress report, ...")
    said: str = Field(description="Its details on one line, in words")
    files: list[str]
    failure_id: str | None = None
    escalation_id: int | None = None


class TimelinePage(Record):
    """A page of a task's timeline, oldest first, and where it stands in the whole."""

    task_id: str
    entries: list[TimelineEntry]
    total: int = Field(description="Entries in the task's whole timeline")
    before: int = Field(description="Entries before this page")
    next_after: int | None = Field(description="The action id the next page starts after; None on the last")
