"""Lists of escalations by status (pending, resolved, all), newest first, and the list row
of one: what list_escalations, the CLI and the resources show."""

from __future__ import annotations

from typing import get_args

from ..models.escalations import Escalation, EscalationSummary
from ..models.limits import EscalationStatus
from ..rules.operators.announce import headline
from .escalations import escalation_of_row
from .sql import Conn

RESOLVED_STATUSES = tuple(status for status in get_args(EscalationStatus) if status != "pending")


def _status_filter(status: str) -> tuple[str, tuple[str, ...]]:
    if status == "pending":
        return "status = 'pending'", ()
    if status == "resolved":
        return f"status IN ({', '.join('?' * len(RESOLVED_STATUSES))})", RESOLVED_STATUSES
    return "1 = 1", ()


def list_escalations(
    conn: Conn, *, status: str, task_id: str | None, limit: int
) -> tuple[list[Escalation], int]:
    """A page of escalations (newest first) and how many match in all."""
    clause, params = _status_filter(status)
    if task_id is not None:
        clause += " AND task_id = ?"
        params = (*params, task_id)
    row = conn.execute(f"SELECT COUNT(*) FROM escalations WHERE {clause}", params).fetchone()  # noqa: S608
    total = int(row[0]) if row else 0
    rows = conn.execute(
        f"SELECT * FROM escalations WHERE {clause} ORDER BY escalation_id DESC LIMIT ?",  # noqa: S608
        (*params, limit),
    ).fetchall()
    return [escalation_of_row(row) for row in rows], total


def tasks_listed(conn: Conn, *, status: str, task_id: str | None) -> list[tuple[int, str, str | None]]:
    """Every escalation of the status (newest first) as (id, task, the task's project): what a
    scoped token's list keeps only the rows of its scope from (the check is the scope's own)."""
    clause, params = _status_filter(status)
    if task_id is not None:
        clause += " AND task_id = ?"
        params = (*params, task_id)
    rows = conn.execute(
        "SELECT e.escalation_id, e.task_id, t.project"  # noqa: S608 (allow-listed clause)
        f" FROM (SELECT escalation_id, task_id FROM escalations WHERE {clause}) e"
        " LEFT JOIN tasks t ON t.task_id = e.task_id ORDER BY e.escalation_id DESC",
        params,
    ).fetchall()
    return [(int(row[0]), str(row[1]), row[2]) for row in rows]


def summary(escalation: Escalation) -> EscalationSummary:
    """The list row of an escalation."""
    return EscalationSummary(
        escalation_id=escalation.escalation_id,
        task_id=escalation.task_id,
        agent_id=escalation.agent_id,
        type=escalation.type,
        trigger_types=[t.type for t in escalation.triggers],
        priority=escalation.priority,
        blocking=escalation.blocking,
        status=escalation.status,
        headline=headline(escalation),
        created_at=escalation.created_at,
        updated_at=escalation.updated_at,
    )
