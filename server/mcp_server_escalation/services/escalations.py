"""An escalation as it is read: loaded, shown to the operator, told to the agent, listed.

Reading delivers nothing: only ``get_escalation`` marks an answer delivered
(services/escalation_delivery.py). The rest of the human-response loop lives beside this
module, one job each: the agent raises a question (escalation_raising), a human answers it
(escalation_answers, with the checks an answer passes in escalation_answer_checks), the
agent receives and acknowledges the answer (escalation_delivery).
"""

from __future__ import annotations

from ..errors import NotFound
from ..models.escalations import Escalation
from ..models.limits import ENDED_STATUSES
from ..models.results import ListEscalationsResult
from ..models.tasks import Task
from ..rules.bounds.token_scope import Scope
from ..store import escalation_lists
from ..store import escalations as escalation_store
from ..store.sql import Conn
from .firing import direct
from .runtime import Runtime
from .tasks import load_task


def load_escalation(conn: Conn, escalation_id: int) -> Escalation:
    """The escalation or a NotFound naming the field."""
    escalation = escalation_store.get(conn, escalation_id)
    if escalation is None:
        raise NotFound("escalation_id", escalation_id, "list_escalations shows the ids.")
    return escalation


async def show_escalation(rt: Runtime, escalation_id: int) -> Escalation:
    """The escalation as the operator sees it (reading it delivers nothing)."""
    return await rt.db.read(lambda conn: load_escalation(conn, escalation_id))


async def agent_message(rt: Runtime, escalation_id: int) -> str:
    """What ``get_escalation`` tells the agent about this escalation now (reading delivers nothing)."""

    def read(conn: Conn) -> str:
        escalation = load_escalation(conn, escalation_id)
        task = load_task(conn, escalation.task_id)
        return escalation_message(rt, escalation, task, direct(rt, conn, task).message)

    return await rt.db.read(read)


def escalation_message(rt: Runtime, escalation: Escalation, task: Task, fallback: str) -> str:
    """What the agent is told about the escalation now: wait, act on the answer, or (once
    the answer is acknowledged, or the task ended) what the task itself says."""
    if task.status in ENDED_STATUSES:
        return fallback
    if escalation.status == "pending":
        return rt.prompts.render(
            "message_escalation_waiting",
            task_id=task.task_id,
            escalation_id=escalation.escalation_id,
            type=escalation.type,
            revision=escalation.revision,
        )
    response = escalation.response
    if response is not None and response.response_type != "withdraw" and escalation.acknowledged_at is None:
        return rt.prompts.render(
            "message_escalation_answered",
            task_id=task.task_id,
            escalation_id=escalation.escalation_id,
            response_type=response.response_type,
            content=response.content,
        )
    if escalation.status in ("agent_terminated", "withdrawn") or escalation.acknowledged_at:
        return fallback
    return rt.prompts.render(
        "message_escalation_closed",
        task_id=task.task_id,
        escalation_id=escalation.escalation_id,
        status=escalation.status,
    )


async def list_escalations(
    rt: Runtime,
    *,
    status: str = "pending",
    task_id: str | None = None,
    limit: int = 20,
    within: Scope | None = None,
) -> ListEscalationsResult:
    """Escalation summaries, newest first, with the total that match; ``within``: only those
    of the tasks a scoped token may see (None: every task's)."""

    def work(conn: Conn) -> tuple[list[Escalation], int]:
        if within is None:
            return escalation_lists.list_escalations(conn, status=status, task_id=task_id, limit=limit)
        listed = escalation_lists.tasks_listed(conn, status=status, task_id=task_id)
        kept = [number for number, task, project in listed if within.admits(task, project)]
        return [load_escalation(conn, number) for number in kept[:limit]], len(kept)

    found, total = await rt.db.read(work)
    return ListEscalationsResult(escalations=[escalation_lists.summary(e) for e in found], total=total)
