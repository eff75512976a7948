"""The tools of a task's work: failures, progress, and the check before an edit."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ....models.failures import ErrorName, FailureMessage, FailureReport, LineNumber, PointerList
from ....models.limits import PathList, PathText, Severity, ShortText, SignalType, StepName, TaskId
from ....models.results import CheckEditResult, ProgressResult, RecordFailureResult
from ....rules.reading.classify import BlockerDetails
from ....rules.reading.pointers import pointers_by_kind
from ....services import failures, progress
from .call import IDEMPOTENT_WRITE, WRITE, Served, ToolCall


async def record_failure(
    call: ToolCall,
    task_id: TaskId,
    message: FailureMessage,
    signal_type: SignalType | None = None,
    severity: Severity | None = None,
    step: StepName = "main",
    phase: ErrorName | None = None,
    error_type: ErrorName | None = None,
    tool_name: ErrorName | None = None,
    error_code: ErrorName | None = None,
    file: PathText | None = None,
    line: LineNumber | None = None,
    attempted_action: ShortText | None = None,
    observed_outcome: ShortText | None = None,
    recommended_adjustment: ShortText | None = None,
    context_refs: PointerList = [],  # noqa: B006 (pydantic copies defaults)
    details: BlockerDetails | None = None,
) -> RecordFailureResult:
    """Record an error; repeats, blockers and transients escalate by the thresholds."""
    # Flat arguments, so the model sees every field of the report at the top level.
    report = FailureReport(
        task_id=task_id,
        message=message,
        signal_type=signal_type,
        severity=severity,
        step=step,
        phase=phase,
        error_type=error_type,
        tool_name=tool_name,
        error_code=error_code,
        file=file,
        line=line,
        attempted_action=attempted_action,
        observed_outcome=observed_outcome,
        recommended_adjustment=recommended_adjustment,
        context_refs=pointers_by_kind((pointer.kind, pointer.ref) for pointer in context_refs),
        details=details.model_dump(exclude_none=True) if details else {},
    )
    return await failures.record_failure(call.runtime, report, within=call.scope())


async def report_progress(
    call: ToolCall,
    task_id: TaskId,
    files_modified: PathList = [],  # noqa: B006
    tests_passed: Annotated[int, Field(ge=0, le=10_000_000)] | None = None,
    tests_failed: Annotated[int, Field(ge=0, le=10_000_000)] | None = None,
    outcome: Literal["success", "failure", "neutral"] = "neutral",
    note: ShortText | None = None,
    step: StepName = "main",
) -> ProgressResult:
    """Report one attempt: files changed, test counts, outcome."""
    return await progress.report_progress(
        call.runtime,
        task_id=task_id,
        files_modified=files_modified,
        tests_passed=tests_passed,
        tests_failed=tests_failed,
        outcome=outcome,
        note=note,
        step=step,
    )


async def check_edit(
    call: ToolCall,
    task_id: TaskId,
    paths: Annotated[PathList, Field(min_length=1)],
) -> CheckEditResult:
    """Ask before editing: refused paths (scope, file limit) escalate and pause the task."""
    return await progress.check_edit(call.runtime, task_id=task_id, paths=paths)


TOOLS = (Served(record_failure, WRITE), Served(report_progress, WRITE), Served(check_edit, IDEMPOTENT_WRITE))
