"""The escalation change feed (migration 4): every committed change, from every process.

Triggers on ``escalations`` append a row per insert and per update in the writer's own
transaction, so the feed can neither miss a change nor show one that was rolled back.
``change_id`` is SQLite's AUTOINCREMENT key: it orders changes by commit across processes
without trusting any clock.
"""

from __future__ import annotations

from ..models.operator import EscalationChange
from .sql import Conn, Row


def _change(row: Row) -> EscalationChange:
    return EscalationChange(
        change_id=row["change_id"],
        escalation_id=row["escalation_id"],
        task_id=row["task_id"],
        revision=row["revision"],
        event=row["event"],
        status=row["status"],
        at=row["changed_at"],
    )


def latest_change_id(conn: Conn) -> int:
    """The id of the newest change (0 for an empty feed): where a new follower starts."""
    row = conn.execute("SELECT COALESCE(MAX(change_id), 0) FROM escalation_changes").fetchone()
    return int(row[0]) if row else 0


def changes_after(conn: Conn, change_id: int, limit: int) -> list[EscalationChange]:
    """Up to ``limit`` changes newer than ``change_id``, oldest first."""
    rows = conn.execute(
        "SELECT c.change_id, c.escalation_id, e.task_id, c.revision, c.event, c.status,"
        " c.changed_at FROM escalation_changes c"
        " JOIN escalations e ON e.escalation_id = c.escalation_id"
        " WHERE c.change_id > ? ORDER BY c.change_id LIMIT ?",
        (change_id, limit),
    ).fetchall()
    return [_change(row) for row in rows]
