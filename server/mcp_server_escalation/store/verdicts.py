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


def verdict_counts(conn: Conn) -> list[VerdictCount]:
    """Verdicts counted per escalation type and project (one row per pair, a few dozen)."""
    rows = conn.execute(
        "SELECT e.type, t.project,"
        " SUM(CASE WHEN v.verdict = 'useful' THEN 1 ELSE 0 END),"
        " SUM(CASE WHEN v.verdict = 'false_alarm' THEN 1 ELSE 0 END)"
        " FROM verdicts v JOIN escalations e ON e.escalation_id = v.escalation_id"
        " JOIN tasks t ON t.task_id = e.task_id"
        " GROUP BY e.type, t.project ORDER BY e.type, t.project"
    ).fetchall()
    return [
        VerdictCount(type=str(row[0]), project=str(row[1]), useful=int(row[2]), false_alarm=int(row[3]))
        for row in rows
    ]
