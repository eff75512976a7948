"""The feedback tools: verdicts and reviews of a step's output, what earlier attempts
learned, and the guidance of past failures."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ....models.feedback import AttemptResult, FeedbackResult, ReviewResult
from ....models.guidance import FailureView, GuidanceResult
from ....models.limits import LargeText, ShortText, StepList, StepName, TaskId
from ....services import attempts, guidance, reviews
from ....services import feedback as feedback_service
from .call import READ, WRITE, Served, ToolCall


async def record_attempt(
    call: ToolCall,
    task_id: TaskId,
    step: StepName,
    status: Literal["accepted", "rejected"],
    feedback: ShortText = "",
    guard: Annotated[str, Field(max_length=256)] | None = None,
    artifact: LargeText | None = None,
    upstream: StepList = [],  # noqa: B006 (pydantic copies defaults)
) -> AttemptResult:
    """Record a verdict on a step's output; stagnation starts an escalation cycle."""
    return await attempts.record_attempt(
        call.runtime,
        task_id=task_id,
        step=step,
        status=status,
        feedback=feedback,
        guard=guard,
        artifact=artifact,
        upstream=upstream,
    )


async def report_review(
    call: ToolCall,
    task_id: TaskId,
    stage: StepName,
    status: Literal["success", "fail", "partial_success"],
    failure_reason: ShortText = "",
    response: LargeText = "",
    kind: Literal["review", "tool"] = "review",
) -> ReviewResult:
    """Report a review or tool stage; failures accumulate, a pass clears the stage."""
    return await reviews.report_review(
        call.runtime,
        task_id=task_id,
        stage=stage,
        status=status,
        failure_reason=failure_reason,
        response=response,
        kind=kind,
    )


async def get_feedback(
    call: ToolCall,
    task_id: TaskId,
    step: StepName = "main",
    max_chars: Annotated[int, Field(ge=200, le=1_000_000)] = 12000,
) -> FeedbackResult:
    """Everything earlier attempts of a step learned, reconstructed from the store."""
    return await feedback_service.get_feedback(call.runtime, task_id=task_id, step=step, max_chars=max_chars)


async def get_guidance(
    call: ToolCall,
    task_id: TaskId,
    query: ShortText | None = None,
    step: StepName | None = None,
    k: Annotated[int, Field(ge=1, le=20)] = 5,
    scope: Literal["task", "project"] = "task",
) -> GuidanceResult:
    """The few past failures that matter now, as compact structured guidance."""
    return await guidance.get_guidance(
        call.runtime, task_id=task_id, query=query, step=step, k=k, scope=scope, within=call.scope()
    )


async def update_failure(
    call: ToolCall,
    failure_id: Annotated[str, Field(min_length=1, max_length=64)],
    status: Literal["active", "resolved", "superseded"] | None = None,
    superseded_by: Annotated[str, Field(min_length=1, max_length=64)] | None = None,
    outcome: Literal["helpful", "harmful"] | None = None,
    note: ShortText | None = None,
) -> FailureView:
    """Resolve or supersede a failure record, or count whether its guidance helped."""
    return await guidance.update_failure(
        call.runtime,
        failure_id=failure_id,
        status=status,
        superseded_by=superseded_by,
        outcome=outcome,
        note=note,
    )


# The model reads the feedback and the guidance as rendered, not as JSON (registry.tool_result).
RENDERED = "rendered"

TOOLS = (
    Served(record_attempt, WRITE),
    Served(report_review, WRITE),
    Served(get_feedback, READ, RENDERED),
    Served(get_guidance, READ, RENDERED),
    Served(update_failure, WRITE),
)
