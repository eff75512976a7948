"""Operators' verdicts on escalations: was it useful, or a false alarm (migration 15).

One row per escalation, written with the answer (or later, replacing the first), with who
judged it. A table of its own that nothing agent-facing reads: an agent never sees a verdict.
"""

from __future__ import annotations

from ..models.reports import VerdictCount
from .sql import Conn


def record_verdict(conn: Conn, escalation_id: int, verdict: str, judged_by: str, now: str) -> None:
    """Keep the operator's verdict on the escalation (a later one replaces it)."""
    conn.execute(
        "INSERT INTO verdicts (escalation_id, verdict, judged_by, judged_at) VALUES (?, ?, ?, ?)"
        " ON CONFLICT (escalation_id) DO UPDATE SET verdict = excluded.verdict,"
        " judged_by = excluded.judged_by, judged_at = excluded.judged_at",
        (escalation_id, verdict, judged_by, now),
    )


def verdict_of(conn: Conn, escalation_id: int) -> tuple[str, str, str] | None:
    """(verdict, judged by, when) of one escalation, or None."""
    row = conn.execute(
        "SELECT verdict, judged_by, judged_at FROM verdicts WHERE escalation_id = ?", (escalation_id,)
    ).fetchone()
    return (str(row[0]), str(row[1]), str(row[2])) if row else None


def verdict_counts(conn: Conn) -> list[tuple[str, str, VerdictCount]]:
    """Verdicts counted per escalation type and task, each with the task and its project, by
    type then project: a scoped token's stats keep only its scope's (the check is the
    scope's own) and ``rules/operators/verdicts.py`` sums them per type and project."""
    rows = conn.execute(
        "SELECT e.task_id, e.type, t.project,"
        " SUM(CASE WHEN v.verdict = 'useful' THEN 1 ELSE 0 END),"
        " SUM(CASE WHEN v.verdict = 'false_alarm' THEN 1 ELSE 0 END)"
        " FROM verdicts v JOIN escalations e ON e.escalation_id = v.escalation_id"
        " JOIN tasks t ON t.task_id = e.task_id"
        " GROUP BY e.type, t.project, e.task_id ORDER BY e.type, t.project, e.task_id"
    ).fetchall()
    return [
        (
            str(row[0]),
            str(row[2]),
            VerdictCount(type=str(row[1]), project=str(row[2]), useful=int(row[3]), false_alarm=int(row[4])),
        )
        for row in rows
    ]
