"""Tool results: what every agent-facing call returns.

Services build these; the MCP adapter returns them as structured output and the CLI
prints them as JSON, so both doors show the same fields.
"""

from __future__ import annotations

from pydantic import Field

from .base import Record
from .escalations import Escalation, EscalationRef, EscalationSummary
from .limits import Directive, EscalationStatus, Severity, TaskStatus
from .tasks import Counters, Task, TestRun
from .thresholds import Thresholds


class Directed(Record):
    """Every agent-facing result says what to do next."""

    directive: Directive = Field(description="proceed | pause | stop")
    message: str = Field(description="One sentence: what to do next")
    holding: EscalationRef | None = Field(
        None, description="The escalation that holds the task; set whenever the directive is pause"
    )


class StartTaskResult(Directed):
    task_id: str
    status: TaskStatus
    agent_id: str
    thresholds: Thresholds
    counters: Counters
    reassigned: bool = Field(description="True when this call handed the task to a new agent")
    created: bool = Field(description="True when this call created the task")
    task: Task


class EndTaskResult(Directed):
    task_id: str
    status: TaskStatus
    note: str | None
    closed_escalations: list[int] = Field(description="Escalations closed because the task ended")


class TaskView(Directed):
    task: Task
    counters: Counters
    thresholds: Thresholds
    modified_files: list[str] = Field(description="The latest 50 distinct modified paths, oldest first")
    modified_count: int = Field(description="How many distinct paths the task modified")
    test_history: list[TestRun]
    pending_escalation: EscalationRef | None = Field(
        description="The escalation holding the task (pending, or answered and unacknowledged); "
        "get_escalation shows it whole"
    )
    escalation_ids: list[int] = Field(description="The latest 20 escalations of the task, oldest first")
    escalation_count: int
    failure_records: int
    failure_occurrences: int


class FailureSummary(Record):
    failure_id: str
    fingerprint: str
    signal_type: str
    classified_by: str = Field(description="'caller' or the pattern that chose signal_type")
    severity: Severity
    occurrence_count: int
    consecutive_count: int = Field(
        description="The same error in a run (at most one other error between), this one included"
    )
    status: str
    details: dict[str, object]


# The whole escalation travels with a result only when the call made something new of it:
# created it or added a trigger. A repeat that refreshed a trigger, or a call refused while
# the task is held, names it in ``holding`` instead.
FIRED_ESCALATION = "The escalation this call created or added a trigger to (whole); else null"


WARNING = "Set one step before a threshold pages a human: what is repeating and what to try instead"


class RecordFailureResult(Directed):
    failure: FailureSummary | None = Field(description="Null when nothing was recorded (the task ended)")
    escalation: Escalation | None = Field(description=FIRED_ESCALATION)
    warning: str | None = Field(None, description=WARNING)


class ProgressResult(Directed):
    counters: Counters
    test_run: TestRun | None
    escalation: Escalation | None = Field(description=FIRED_ESCALATION)
    warning: str | None = Field(None, description=WARNING)


class PathVerdict(Record):
    path: str = Field(description="As given")
    normalised: str = Field(description="Relative to the project root, POSIX")
    allowed: bool
    reason: str | None


class CheckEditResult(Directed):
    allowed: bool
    reasons: list[str]
    paths: list[PathVerdict]
    escalation: Escalation | None = Field(description=FIRED_ESCALATION)


class EscalationResult(Directed):
    escalation: Escalation | None = Field(
        description="The whole record; null when known_revision is its current revision (nothing new)"
    )
    escalation_id: int
    status: EscalationStatus
    revision: int = Field(description="Pass it as known_revision to be told only of changes")
    unchanged: bool = Field(description="True when the record was left out: you have this revision")


class RaiseEscalationResult(Directed):
    escalation: Escalation | None = Field(description="Null when nothing was raised (the task ended)")


class AcknowledgeResult(Directed):
    escalation: Escalation
    task_status: TaskStatus
    task: Task


class ListEscalationsResult(Record):
    escalations: list[EscalationSummary]
    total: int = Field(description="How many match the filter in all")


class ResolveResult(Record):
    escalation: Escalation
    task_status: TaskStatus
