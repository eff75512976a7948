"""What the operator console shows: the queue of escalations waiting for a human.

The queue is the pending escalations and the answered ones whose answer the agent has not
acknowledged yet (an answer nobody has read is still the operator's business). Both lists
are bounded; the filters are the operator's query string, applied to those rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePath

from ..models.escalations import Escalation, ToldAtFiring
from ..store import escalations as escalation_store
from ..store.db import Conn
from .runtime import Runtime

QUEUE_ROWS = 200


@dataclass(frozen=True)
class QueueFilter:
    """The query string's filters (exact values); an empty value matches every row."""

    project: str = ""
    agent: str = ""
    type: str = ""

    def matches(self, escalation: Escalation) -> bool:
        """Does the escalation pass every filter that is set?"""
        project = str(escalation.context.get("task", {}).get("project") or "")
        # A project is stored as its folder's path; its last part is the name people type.
        return (
            (not self.project or self.project in (project, PurePath(project).name))
            and (not self.agent or escalation.agent_id == self.agent)
            and (not self.type or escalation.type == self.type)
        )


def awaits_acknowledgement(escalation: Escalation) -> bool:
    """Answered by a human, not yet acknowledged by the agent."""
    response = escalation.response
    return (
        response is not None
        and response.response_type != "withdraw"
        and escalation.acknowledged_at is None
        and escalation.status != "pending"
    )


async def queue(rt: Runtime, wanted: QueueFilter) -> list[Escalation]:
    """Pending escalations (newest first), then answered ones not yet acknowledged."""

    def read(conn: Conn) -> list[Escalation]:
        pending, _ = escalation_store.list_escalations(conn, status="pending", task_id=None, limit=QUEUE_ROWS)
        answered, _ = escalation_store.list_escalations(
            conn, status="resolved", task_id=None, limit=QUEUE_ROWS
        )
        return pending + [e for e in answered if awaits_acknowledgement(e)]

    return [e for e in await rt.db.read(read) if wanted.matches(e)]


async def told_when_fired(rt: Runtime, escalation_id: int) -> ToldAtFiring | None:
    """What the escalation's agent was told when it fired, or None when it was raised before
    that was kept."""
    return await rt.db.read(lambda conn: escalation_store.told_agent(conn, escalation_id))
