"""Reconstructing a step's feedback from the store (docs/feedback-memory.md).

Nothing is cached in memory: every call reads the store, so the first call of a brand-new
process renders everything earlier processes recorded. The reads are plain rows of the
columns the text needs; only the entries that fit ``max_chars`` are rendered
(``rules.guidance.feedback.render_sections``), and the result lists them by id.
"""

from __future__ import annotations

from ..models.feedback import FeedbackResult
from ..rules.guidance.feedback import render_sections
from ..store import feedback as feedback_store
from ..store.sql import Conn
from .guidance import build_guidance
from .runtime import Runtime
from .tasks import load_project


def build_feedback(rt: Runtime, conn: Conn, task_id: str, step: str, max_chars: int) -> FeedbackResult:
    """The feedback of ``step`` as it stands in the store now."""
    project = load_project(conn, task_id)  # the task must exist; guidance needs its project
    escalations = feedback_store.cycle_feedback(conn, task_id, step)
    findings = feedback_store.outstanding_entries(conn, task_id)
    responses = feedback_store.human_responses(conn, task_id)
    guidance = build_guidance(
        rt,
        conn,
        task_id=task_id,
        query=None,
        step=step,
        k=rt.settings.guidance.k,
        scope="task",
        project=project,
    ).items
    budget = render_sections(
        rt.prompts,
        step=step,
        escalations=escalations,
        retries=feedback_store.newest_retry_entries(conn, task_id, step),
        retry_count=feedback_store.retry_entry_count(conn, task_id, step),
        findings=findings,
        responses=responses,
        guidance=[item.line for item in guidance],
        max_chars=max_chars,
    )
    # The sections list what the text shows, cut by the same budget. Every value is built
    # here from the store's rows and the budget, so validating it again would only cost.
    cycles, retried, found, answered, advised = budget.kept
    return FeedbackResult.model_construct(
        task_id=task_id,
        step=step,
        cycle=feedback_store.current_cycle(conn, task_id, step),
        escalation_history=[escalations[i].cycle for i in cycles],
        retry_history=retried,
        review_findings=[findings[i].finding_id for i in found],
        human_responses=[responses[i].escalation_id for i in answered],
        guidance=[guidance[i].failure_id for i in advised],
        rendered=budget.text or rt.prompts.render("feedback_empty", task_id=task_id, step=step),
        omitted=budget.omitted,
    )


async def get_feedback(
    rt: Runtime, *, task_id: str, step: str = "main", max_chars: int = 12000
) -> FeedbackResult:
    """Everything earlier attempts of the step learned, rendered within ``max_chars``."""
    return await rt.db.read(lambda conn: build_feedback(rt, conn, task_id, step, max_chars))
