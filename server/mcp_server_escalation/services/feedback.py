"""Reconstructing a step's feedback from the store (SPEC 5, seed 000).

Nothing is cached in memory: every call reads the store, so the first call of a brand-new
process renders everything earlier processes recorded.
"""

from __future__ import annotations

from ..models.feedback import FeedbackResult, HumanResponse
from ..rules.feedback import collapse_retries, render_sections
from ..store import escalations as escalation_store
from ..store import feedback as feedback_store
from ..store.db import Conn
from .guidance import build_guidance
from .runtime import Runtime
from .tasks import load_task

MAX_ATTEMPTS = 1000


def human_responses(conn: Conn, task_id: str) -> list[HumanResponse]:
    """Every human answer to the task's escalations, oldest first (withdrawals excluded)."""
    return [
        HumanResponse(
            escalation_id=e.escalation_id,
            type=e.type,
            response_type=e.response.response_type,
            content=e.response.content,
            responder=e.response.responder,
            at=e.response.responded_at,
            new_file_limit=e.response.new_file_limit,
            add_scope=e.response.add_scope,
        )
        for e in escalation_store.for_task(conn, task_id)
        if e.response is not None and e.response.response_type != "withdraw"
    ]


def build_feedback(rt: Runtime, conn: Conn, task_id: str, step: str, max_chars: int) -> FeedbackResult:
    """The feedback of ``step`` as it stands in the store now."""
    load_task(conn, task_id)
    escalations = feedback_store.cycle_feedback(conn, task_id, step)
    rejected = feedback_store.attempts(conn, task_id, step, status="rejected", limit=MAX_ATTEMPTS)
    retries = collapse_retries(rejected)
    findings = feedback_store.outstanding_findings(conn, task_id)
    responses = human_responses(conn, task_id)
    guidance = build_guidance(
        rt, conn, task_id=task_id, query=None, step=step, k=rt.settings.guidance.k, scope="task"
    ).items
    rendered, omitted, kept = render_sections(
        rt.prompts,
        step=step,
        escalations=escalations,
        retries=retries,
        findings=findings,
        responses=responses,
        guidance=[item.line for item in guidance],
        max_chars=max_chars,
    )
    # The structured sections obey the same budget as the text: what was cut is cut.
    marks = iter(kept)
    escalations = [e for e in escalations if next(marks)]
    retries = [r for r in retries if next(marks)]
    findings = [f for f in findings if next(marks)]
    responses = [h for h in responses if next(marks)]
    guidance = [g for g in guidance if next(marks)]
    return FeedbackResult(
        task_id=task_id,
        step=step,
        cycle=feedback_store.current_cycle(conn, task_id, step),
        escalation_history=escalations,
        retry_history=retries,
        review_findings=findings,
        human_responses=responses,
        guidance=guidance,
        rendered=rendered or rt.prompts.render("feedback_empty", task_id=task_id, step=step),
        omitted=omitted,
    )


async def get_feedback(
    rt: Runtime, *, task_id: str, step: str = "main", max_chars: int = 12000
) -> FeedbackResult:
    """Everything earlier attempts of the step learned, rendered within ``max_chars``."""
    return await rt.db.read(lambda conn: build_feedback(rt, conn, task_id, step, max_chars))
