"""An escalation as it is read: loaded, shown to the operator, told to the agent.

Reading delivers nothing: only ``get_escalation`` marks an answer delivered
(services/escalation_delivery.py). The rest of the human-response loop lives beside this
module, one job each: the agent raises a question (escalation_raising), a human answers it
(escalation_answers, with the checks an answer passes in escalation_answer_checks), the
agent receives and acknowledges the answer (escalation_delivery); lists are in
escalation_lists.
"""

from __future__ import annotations

from ..errors import NotFound
from ..models.escalations import Escalation
from ..models.limits import ENDED_STATUSES
from ..models.tasks import Task
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
