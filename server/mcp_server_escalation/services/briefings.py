"""Texts for the MCP prompts: a step's retry briefing, the findings to fix, an escalation
briefing for the operator, and the resume instructions after a human answer."""

from __future__ import annotations

from ..models.escalations import Escalation
from ..rules.guidance.feedback import finding_values
from ..rules.operators.announce import answer_flags, offered_answers
from ..rules.reading.salient import headline
from ..rules.wording.directives import decide
from ..rules.wording.fact_lines import facts_lines, pairs_line
from ..rules.wording.words import trigger_words
from ..store import escalation_lookups
from ..store import feedback as feedback_store
from ..store.sql import Conn
from .escalations import load_escalation
from .feedback import build_feedback
from .runtime import Runtime
from .tasks import load_task

PROMPT_FEEDBACK_CHARS = 12000


async def retry_with_feedback(rt: Runtime, task_id: str, step: str) -> str:
    """The briefing for the next attempt of ``step``: all earlier feedback, then the ask."""

    def work(conn: Conn) -> str:
        feedback = build_feedback(rt, conn, task_id, step, PROMPT_FEEDBACK_CHARS)
        return rt.prompts.render(
            "prompt_retry_with_feedback", task_id=task_id, step=step, feedback=feedback.rendered
        )

    return await rt.db.read(work)


async def fix_review_findings(rt: Runtime, task_id: str) -> str:
    """Every outstanding finding of the task, to fix in one pass."""

    def work(conn: Conn) -> str:
        load_task(conn, task_id)
        findings = feedback_store.outstanding_findings(conn, task_id)
        if not findings:
            return rt.prompts.render("prompt_no_findings", task_id=task_id)
        entries = [rt.prompts.render("feedback_finding_entry", **finding_values(f)) for f in findings]
        return rt.prompts.render("prompt_fix_review_findings", task_id=task_id, findings="\n\n".join(entries))

    return await rt.db.read(work)


# The briefing's evidence lines: wide enough that a path and its error share a line.
BRIEFING_WIDTH = 120


def _evidence_lines(e: Escalation) -> str:
    """The escalation's evidence as labelled lines under each trigger (never JSON)."""
    errors = {t.key: headline(t.summary) for t in e.triggers}
    lines: list[str] = []
    for key, facts in sorted(e.context.get("evidence", {}).items()):
        lines.append(trigger_words(key))
        if isinstance(facts, dict):
            lines += facts_lines(facts, BRIEFING_WIDTH, "  ", errors.get(key, ""))
    return "\n".join(lines)


async def escalation_briefing(rt: Runtime, escalation_id: int) -> str:
    """What an operator needs to answer the escalation, in one text."""

    def work(conn: Conn) -> str:
        e = load_escalation(conn, escalation_id)
        task = e.context.get("task", {})
        triggers = "\n".join(
            rt.prompts.render(
                "prompt_briefing_trigger",
                type=t.type,
                summary=t.summary,
                criteria=pairs_line(t.criteria),
                observed=pairs_line(t.observed),
            )
            for t in e.triggers
        )
        return rt.prompts.render(
            "prompt_escalation_briefing",
            escalation_id=e.escalation_id,
            type=e.type,
            status=e.status,
            priority=e.priority,
            task_id=e.task_id,
            title=task.get("title", ""),
            specification=task.get("specification") or None,
            scope=task.get("scope") or [],
            agent_id=e.agent_id,
            triggers=triggers,
            evidence=_evidence_lines(e) or None,
            response_options=", ".join(offered_answers(e)),
            answer_flags=" | ".join(answer_flags(e)),
        )

    return await rt.db.read(work)


async def resume_after_response(rt: Runtime, escalation_id: int) -> str:
    """How the agent resumes after the human's answer (or why it cannot yet)."""

    def work(conn: Conn) -> str:
        e = load_escalation(conn, escalation_id)
        if e.response is None or e.response.response_type == "withdraw":
            return rt.prompts.render(
                "prompt_resume_no_response",
                escalation_id=escalation_id,
                task_id=e.task_id,
                status=e.status,
            )
        task = load_task(conn, e.task_id)
        directive = decide(task, escalation_lookups.holding(conn, e.task_id)).directive
        return rt.prompts.render(
            "prompt_resume_after_response",
            escalation_id=escalation_id,
            task_id=e.task_id,
            type=e.type,
            response_type=e.response.response_type,
            content=e.response.content or None,
            directive=directive,
        )

    return await rt.db.read(work)
