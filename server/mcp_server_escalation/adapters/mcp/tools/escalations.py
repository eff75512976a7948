"""The escalation tools: ask a human, wait for and acknowledge the answer, list, resolve."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ....models.limits import (
    EscalationId,
    Flag,
    GlobList,
    Name,
    Options,
    Revision,
    ShortText,
    TaskId,
    WaitSeconds,
)
from ....models.results import (
    AcknowledgeResult,
    EscalationResult,
    ListEscalationsResult,
    RaiseEscalationResult,
    ResolveResult,
)
from ....services import escalation_answers, escalation_delivery, escalation_lists, escalation_raising
from ..waits import fitted_wait
from .call import DESTRUCTIVE, IDEMPOTENT_WRITE, READ, WRITE, Served, ToolCall


async def raise_escalation(
    call: ToolCall,
    task_id: TaskId,
    reason: Annotated[ShortText, Field(min_length=1)],
    kind: Literal["ask_human", "system_error"] = "ask_human",
    question: ShortText | None = None,
    options: Options = [],  # noqa: B006 (pydantic copies defaults)
    blocking: Flag = True,
    follow_up_of: EscalationId | None = None,
) -> RaiseEscalationResult:
    """Ask a human (or report an unrecoverable error); blocking questions pause the task."""
    return await escalation_raising.raise_escalation(
        call.runtime,
        task_id=task_id,
        reason=reason,
        kind=kind,
        question=question,
        options=options,
        blocking=blocking,
        follow_up_of=follow_up_of,
    )


async def get_escalation(
    call: ToolCall,
    escalation_id: EscalationId,
    wait_seconds: WaitSeconds = 0,
    known_revision: Revision | None = None,
) -> EscalationResult:
    """The escalation (whole unless known_revision is current); waits for an answer and delivers it."""

    # The wait fits the connection (adapters/mcp/waits.py); the client hears how it goes.
    async def progress(waited: float, whole: float) -> None:
        waiting = call.runtime.prompts.render("progress_waiting", escalation_id=escalation_id)
        await call.report_progress(waited, whole, waiting)

    return await escalation_delivery.get_escalation(
        call.runtime,
        escalation_id=escalation_id,
        wait_seconds=fitted_wait(wait_seconds),
        on_wait=progress,
        # Only the agent receives an answer; an operator looking at it delivers nothing.
        deliver=call.role() == "agent",
        known_revision=known_revision,
    )


async def acknowledge_response(
    call: ToolCall, escalation_id: EscalationId, note: ShortText | None = None
) -> AcknowledgeResult:
    """Confirm you read the human's answer; the task resumes (or stays terminated)."""
    return await escalation_delivery.acknowledge_response(
        call.runtime, escalation_id=escalation_id, note=note
    )


async def list_escalations(
    call: ToolCall,
    status: Literal["pending", "resolved", "all"] = "pending",
    task_id: TaskId | None = None,
    limit: Annotated[int, Field(ge=1, le=200)] = 20,
) -> ListEscalationsResult:
    """Escalation summaries, newest first."""
    return await escalation_lists.list_escalations(
        call.runtime, status=status, task_id=task_id, limit=limit, within=call.scope()
    )


async def resolve_escalation(
    call: ToolCall,
    escalation_id: EscalationId,
    response_type: Literal["guidance", "override", "terminate", "approve", "withdraw"],
    content: ShortText = "",
    new_file_limit: Annotated[int, Field(ge=1, le=1_000_000)] | None = None,
    add_scope: GlobList = [],  # noqa: B006
    responder: Name | None = None,
    agent_id: Name | None = None,
) -> ResolveResult:
    """Answer an escalation (operator role); an agent may only withdraw its own question."""
    return await escalation_answers.resolve_escalation(
        call.runtime,
        escalation_id=escalation_id,
        response_type=response_type,
        content=content,
        new_file_limit=new_file_limit,
        add_scope=add_scope,
        responder=call.responder(responder),
        role=call.role(),
        held=call.holders.held(call.connection()),
        agent_id=agent_id,
    )


TOOLS = (
    Served(raise_escalation, WRITE),
    Served(get_escalation, READ),
    Served(acknowledge_response, IDEMPOTENT_WRITE),
    Served(list_escalations, READ),
    Served(resolve_escalation, DESTRUCTIVE),
)
