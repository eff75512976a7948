"""The agent tools (SPEC 4): flat typed arguments, one service call, a pydantic result.

The signature is the schema: limits and enums live in the annotations, so a bad argument
is reported by field name before any service runs. Domain errors become tool errors
(``isError``) whose text tells the model how to fix the call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any, Literal, TypeVar

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.types import ToolAnnotations
from pydantic import Field

from ..errors import EscalationError
from ..models.feedback import AttemptResult, FeedbackResult, ReviewResult
from ..models.guidance import FailureView, GuidanceResult
from ..models.limits import (
    LIST_MAX,
    EscalationId,
    GlobList,
    LargeText,
    Name,
    Options,
    Path,
    PathList,
    Revision,
    Role,
    Severity,
    ShortText,
    SignalType,
    StepList,
    StepName,
    TaskId,
    WaitSeconds,
)
from ..models.results import (
    AcknowledgeResult,
    CheckEditResult,
    EndTaskResult,
    EscalationResult,
    ListEscalationsResult,
    ProgressResult,
    RaiseEscalationResult,
    RecordFailureResult,
    ResolveResult,
    StartTaskResult,
    TaskView,
)
from ..models.thresholds import ThresholdOverrides
from ..prompts import PromptBook
from ..rules.classify import BlockerDetails
from ..services import attempts, escalations, failures, guidance, progress, reviews, tasks
from ..services import feedback as feedback_service
from ..services.runtime import Runtime
from ..settings import Settings
from .app_context import AppContext
from .holders import STDIO_HOLDER, TaskHolders
from .registry import ToolFunction, describe_tools, structured_tool

Ctx = Context[AppContext]

_WRITE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)
_IDEMPOTENT_WRITE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
_READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)


@contextmanager
def tool_errors() -> Iterator[None]:
    """Domain errors become tool errors the model reads; anything else is a bug."""
    try:
        yield
    except EscalationError as exc:
        raise ToolError(str(exc)) from exc


def _rt(ctx: Ctx) -> Runtime:
    return ctx.request_context.lifespan_context.runtime


def _holders(ctx: Ctx) -> TaskHolders:
    return ctx.request_context.lifespan_context.holders


ToolFn = TypeVar("ToolFn", bound=ToolFunction)


def build_tools(
    settings: Settings, prompts: PromptBook, *, http: bool = False, use_published: bool = True
) -> list[Tool]:
    """Every agent tool, described by ``prompts``, ready for ``MCPServer(tools=...)``."""
    tools: list[Tool] = []

    def caller_role() -> Role:
        # Over HTTP the bearer token decides; on stdio there is no token, only --role (and
        # the auth machinery is not even imported: it costs cold start).
        if not http:
            return settings.role
        from .http_auth import request_role  # noqa: PLC0415

        return request_role(settings.role)

    def caller_connection(ctx: Ctx) -> str | None:
        # Which connection the call came on (adapters/holders.py): the process on stdio,
        # the MCP session over HTTP; None for a sessionless HTTP request.
        if not http:
            return STDIO_HOLDER
        headers = ctx.headers
        return headers.get("mcp-session-id") if headers else None

    def tool(annotations: ToolAnnotations, text: str | None = None) -> Callable[[ToolFn], ToolFn]:
        def register(fn: ToolFn) -> ToolFn:
            tools.append(structured_tool(fn, annotations, use_published=use_published, text=text))
            return fn

        return register

    @tool(_WRITE)
    async def start_task(
        title: Annotated[str, Field(min_length=1, max_length=1024)],
        ctx: Ctx,
        specification: ShortText = "",
        scope: GlobList = [],  # noqa: B006 (pydantic copies defaults)
        task_id: TaskId | None = None,
        agent_id: Name = "agent",
        project: Path | None = None,
        baseline_pass_rate: Annotated[float | None, Field(ge=0.0, le=1.0)] = None,
        thresholds: ThresholdOverrides | None = None,
    ) -> StartTaskResult:
        """Start (or resume, or take over) a task; call once before any other tool."""
        with tool_errors():
            started = await tasks.start_task(
                _rt(ctx),
                title=title,
                specification=specification,
                scope=scope,
                task_id=task_id,
                agent_id=agent_id,
                project=project,
                baseline_pass_rate=baseline_pass_rate,
                thresholds=thresholds,
            )
        _holders(ctx).hold(caller_connection(ctx), started.task_id, started.task.generation)
        return started

    @tool(_WRITE)
    async def end_task(
        task_id: TaskId,
        outcome: Literal["completed", "abandoned"],
        ctx: Ctx,
        note: ShortText | None = None,
    ) -> EndTaskResult:
        """End a task; 'completed' needs a passing latest test run and no open escalation."""
        with tool_errors():
            return await tasks.end_task(_rt(ctx), task_id=task_id, outcome=outcome, note=note)

    @tool(_READ)
    async def get_task(task_id: TaskId, ctx: Ctx) -> TaskView:
        """A task's status, counters, thresholds, files, test history and open escalation."""
        with tool_errors():
            return await tasks.get_task(_rt(ctx), task_id)

    @tool(_WRITE)
    async def record_failure(
        task_id: TaskId,
        message: Annotated[ShortText, Field(min_length=1)],
        ctx: Ctx,
        signal_type: SignalType | None = None,
        severity: Severity | None = None,
        step: StepName = "main",
        phase: Annotated[str, Field(max_length=256)] | None = None,
        error_type: Annotated[str, Field(max_length=256)] | None = None,
        tool_name: Annotated[str, Field(max_length=256)] | None = None,
        error_code: Annotated[str, Field(max_length=256)] | None = None,
        file: Path | None = None,
        line: Annotated[int, Field(ge=0, le=100_000_000)] | None = None,
        attempted_action: ShortText | None = None,
        observed_outcome: ShortText | None = None,
        recommended_adjustment: ShortText | None = None,
        context_refs: Annotated[
            dict[str, Any],
            Field(max_length=LIST_MAX),
        ] = {},  # noqa: B006
        details: BlockerDetails | None = None,
    ) -> RecordFailureResult:
        """Record an error; repeats, blockers and transients escalate by the thresholds."""
        with tool_errors():
            return await failures.record_failure(
                _rt(ctx),
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
                context_refs=context_refs,
                details=details.model_dump(exclude_none=True) if details else None,
            )

    @tool(_WRITE)
    async def report_progress(
        task_id: TaskId,
        ctx: Ctx,
        files_modified: PathList = [],  # noqa: B006
        tests_passed: Annotated[int, Field(ge=0, le=10_000_000)] | None = None,
        tests_failed: Annotated[int, Field(ge=0, le=10_000_000)] | None = None,
        outcome: Literal["success", "failure", "neutral"] = "neutral",
        note: ShortText | None = None,
        step: StepName = "main",
    ) -> ProgressResult:
        """Report one attempt: files changed, test counts, outcome."""
        with tool_errors():
            return await progress.report_progress(
                _rt(ctx),
                task_id=task_id,
                files_modified=files_modified,
                tests_passed=tests_passed,
                tests_failed=tests_failed,
                outcome=outcome,
                note=note,
                step=step,
            )

    @tool(_IDEMPOTENT_WRITE)
    async def check_edit(
        task_id: TaskId,
        paths: Annotated[PathList, Field(min_length=1)],
        ctx: Ctx,
    ) -> CheckEditResult:
        """Ask before editing: refused paths (scope, file limit) escalate and pause the task."""
        with tool_errors():
            return await progress.check_edit(_rt(ctx), task_id=task_id, paths=paths)

    @tool(_WRITE)
    async def raise_escalation(
        task_id: TaskId,
        reason: Annotated[ShortText, Field(min_length=1)],
        ctx: Ctx,
        kind: Literal["ask_human", "system_error"] = "ask_human",
        question: ShortText | None = None,
        options: Options = [],  # noqa: B006
        blocking: bool = True,
        follow_up_of: EscalationId | None = None,
    ) -> RaiseEscalationResult:
        """Ask a human (or report an unrecoverable error); blocking questions pause the task."""
        with tool_errors():
            return await escalations.raise_escalation(
                _rt(ctx),
                task_id=task_id,
                reason=reason,
                kind=kind,
                question=question,
                options=options,
                blocking=blocking,
                follow_up_of=follow_up_of,
            )

    @tool(_READ)
    async def get_escalation(
        escalation_id: EscalationId,
        ctx: Ctx,
        wait_seconds: WaitSeconds = 0,
        known_revision: Revision | None = None,
    ) -> EscalationResult:
        """The escalation (whole unless known_revision is current); waits for an answer and delivers it."""
        with tool_errors():
            return await escalations.get_escalation(
                _rt(ctx),
                escalation_id=escalation_id,
                wait_seconds=wait_seconds,
                # Only the agent receives an answer; an operator looking at it delivers nothing.
                deliver=caller_role() == "agent",
                known_revision=known_revision,
            )

    @tool(_IDEMPOTENT_WRITE)
    async def acknowledge_response(
        escalation_id: EscalationId, ctx: Ctx, note: ShortText | None = None
    ) -> AcknowledgeResult:
        """Confirm you read the human's answer; the task resumes (or stays terminated)."""
        with tool_errors():
            return await escalations.acknowledge_response(_rt(ctx), escalation_id=escalation_id, note=note)

    @tool(_READ)
    async def list_escalations(
        ctx: Ctx,
        status: Literal["pending", "resolved", "all"] = "pending",
        task_id: TaskId | None = None,
        limit: Annotated[int, Field(ge=1, le=200)] = 20,
    ) -> ListEscalationsResult:
        """Escalation summaries, newest first."""
        with tool_errors():
            return await escalations.list_escalations(_rt(ctx), status=status, task_id=task_id, limit=limit)

    @tool(
        ToolAnnotations(
            read_only_hint=False,
            destructive_hint=True,
            idempotent_hint=False,
            open_world_hint=False,
        )
    )
    async def resolve_escalation(
        escalation_id: EscalationId,
        response_type: Literal["guidance", "override", "terminate", "approve", "withdraw"],
        ctx: Ctx,
        content: ShortText = "",
        new_file_limit: Annotated[int, Field(ge=1, le=1_000_000)] | None = None,
        add_scope: GlobList = [],  # noqa: B006
        responder: Name | None = None,
    ) -> ResolveResult:
        """Answer an escalation (operator role); an agent may only withdraw its own question."""
        with tool_errors():
            return await escalations.resolve_escalation(
                _rt(ctx),
                escalation_id=escalation_id,
                response_type=response_type,
                content=content,
                new_file_limit=new_file_limit,
                add_scope=add_scope,
                responder=responder,
                role=caller_role(),
                held=_holders(ctx).held(caller_connection(ctx)),
            )

    @tool(_WRITE)
    async def record_attempt(
        task_id: TaskId,
        step: StepName,
        status: Literal["accepted", "rejected"],
        ctx: Ctx,
        feedback: ShortText = "",
        guard: Annotated[str, Field(max_length=256)] | None = None,
        artifact: LargeText | None = None,
        upstream: StepList = [],  # noqa: B006
    ) -> AttemptResult:
        """Record a verdict on a step's output; stagnation starts an escalation cycle."""
        with tool_errors():
            return await attempts.record_attempt(
                _rt(ctx),
                task_id=task_id,
                step=step,
                status=status,
                feedback=feedback,
                guard=guard,
                artifact=artifact,
                upstream=upstream,
            )

    @tool(_WRITE)
    async def report_review(
        task_id: TaskId,
        stage: StepName,
        status: Literal["success", "fail", "partial_success"],
        ctx: Ctx,
        failure_reason: ShortText = "",
        response: LargeText = "",
        kind: Literal["review", "tool"] = "review",
    ) -> ReviewResult:
        """Report a review or tool stage; failures accumulate, a pass clears the stage."""
        with tool_errors():
            return await reviews.report_review(
                _rt(ctx),
                task_id=task_id,
                stage=stage,
                status=status,
                failure_reason=failure_reason,
                response=response,
                kind=kind,
            )

    @tool(_READ, text="rendered")  # the model reads the feedback as written
    async def get_feedback(
        task_id: TaskId,
        ctx: Ctx,
        step: StepName = "main",
        max_chars: Annotated[int, Field(ge=200, le=1_000_000)] = 12000,
    ) -> FeedbackResult:
        """Everything earlier attempts of a step learned, reconstructed from the store."""
        with tool_errors():
            return await feedback_service.get_feedback(
                _rt(ctx), task_id=task_id, step=step, max_chars=max_chars
            )

    @tool(_READ, text="rendered")
    async def get_guidance(
        task_id: TaskId,
        ctx: Ctx,
        query: ShortText | None = None,
        step: StepName | None = None,
        k: Annotated[int, Field(ge=1, le=20)] = 5,
        scope: Literal["task", "project"] = "task",
    ) -> GuidanceResult:
        """The few past failures that matter now, as compact structured guidance."""
        with tool_errors():
            return await guidance.get_guidance(
                _rt(ctx), task_id=task_id, query=query, step=step, k=k, scope=scope
            )

    @tool(_WRITE)
    async def update_failure(
        failure_id: Annotated[str, Field(min_length=1, max_length=64)],
        ctx: Ctx,
        status: Literal["active", "resolved", "superseded"] | None = None,
        superseded_by: Annotated[str, Field(min_length=1, max_length=64)] | None = None,
        outcome: Literal["helpful", "harmful"] | None = None,
        note: ShortText | None = None,
    ) -> FailureView:
        """Resolve or supersede a failure record, or count whether its guidance helped."""
        with tool_errors():
            return await guidance.update_failure(
                _rt(ctx),
                failure_id=failure_id,
                status=status,
                superseded_by=superseded_by,
                outcome=outcome,
                note=note,
            )

    describe_tools(tools, prompts)
    return tools
