"""A task's escalations, found the way its calls ask for them.

The one that holds the task (blocking and pending, or answered and not yet acknowledged),
whole or only named; the open one a trigger may join; the newest with a trigger's key; the
pending ones; the latest ids; and the reads a waiting or polling agent makes (an escalation
named, read once; its status and revision; its task).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..models.escalations import Escalation, EscalationRef
from ..rules.triggers.records import RAISED_BY_AGENT
from .escalations import escalation_of_row, storable_id
from .sql import Conn, Row, for_update, is_postgres

# An objective trigger may join an open escalation only if that one was itself raised by a
# trigger: merging it into an agent's own question would let the agent withdraw it.
_QUESTION_TYPES = RAISED_BY_AGENT
_QUESTION_MARKS = ", ".join("?" * len(_QUESTION_TYPES))


def open_triggered(conn: Conn, task_id: str) -> Escalation | None:
    """The task's oldest pending escalation that was raised by an objective trigger."""
    lock = for_update(conn)
    row = conn.execute(
        "SELECT * FROM escalations WHERE task_id = ? AND status = 'pending'"  # noqa: S608 (constant)
        f" AND type NOT IN ({_QUESTION_MARKS}) ORDER BY escalation_id LIMIT 1{lock}",
        (task_id, *_QUESTION_TYPES),
    ).fetchone()
    return escalation_of_row(row) if row else None


# The escalation that holds a task: blocking and pending, or answered but unacknowledged.
# Pending ones come first (the agent must wait), then the oldest unacknowledged answer.
_HOLDING = (
    " FROM escalations WHERE task_id = ? AND blocking = 1 AND ("
    "   status = 'pending' OR (response_type IS NOT NULL AND response_type != 'withdraw'"
    "   AND acknowledged_at IS NULL AND status != 'agent_terminated'))"
    " ORDER BY status != 'pending', escalation_id LIMIT 1"
)
_REF_COLUMNS = "escalation_id, type, status, revision, response_type"


def blocking_open(conn: Conn, task_id: str) -> Escalation | None:
    """The escalation that holds the task, whole."""
    row = conn.execute(f"SELECT *{_HOLDING}", (task_id,)).fetchone()
    return escalation_of_row(row) if row else None


def _ref(row: Row) -> EscalationRef:
    return EscalationRef(
        escalation_id=row["escalation_id"],
        type=row["type"],
        status=row["status"],
        revision=row["revision"],
        response_type=row["response_type"],
    )


def holding(conn: Conn, task_id: str) -> EscalationRef | None:
    """The escalation that holds the task, named (its record is not read: every call asks)."""
    row = conn.execute(f"SELECT {_REF_COLUMNS}{_HOLDING}", (task_id,)).fetchone()
    return _ref(row) if row else None


@dataclass(frozen=True)
class Named:
    """An escalation read once by its id: its short form and its task at once, the whole
    record built from the same row only when the caller needs it (a poll that finds
    nothing new parses none of it)."""

    ref: EscalationRef
    task_id: str
    row: Row

    def whole(self) -> Escalation:
        """The escalation the row holds."""
        return escalation_of_row(self.row)


def get_named(conn: Conn, escalation_id: int) -> Named | None:
    """The escalation named, read once (and, in a write, locked until it commits), or None."""
    if not storable_id(escalation_id):
        return None
    row = conn.execute(
        "SELECT * FROM escalations WHERE escalation_id = ?" + for_update(conn),  # noqa: S608 (constant)
        (escalation_id,),
    ).fetchone()
    return Named(_ref(row), str(row["task_id"]), row) if row else None


def get_ref(conn: Conn, escalation_id: int) -> EscalationRef | None:
    """The escalation named, or None (an unchanged poll reads no more)."""
    if not storable_id(escalation_id):
        return None
    row = conn.execute(
        f"SELECT {_REF_COLUMNS} FROM escalations WHERE escalation_id = ?",  # noqa: S608 (constant)
        (escalation_id,),
    ).fetchone()
    return _ref(row) if row else None


# The keys of an escalation's triggers, as each backend reads its JSON text (SQLite, PostgreSQL).
_TRIGGER_KEYS = (
    "SELECT 1 FROM json_each(triggers_json) WHERE json_extract(value, '$.key')",
    "SELECT 1 FROM jsonb_array_elements(triggers_json::jsonb) AS t (value) WHERE t.value ->> 'key'",
)


def latest_with_key(conn: Conn, task_id: str, key: str) -> Escalation | None:
    """The task's newest escalation with a trigger of that ``key``, or None."""
    row = conn.execute(
        f"SELECT * FROM escalations WHERE task_id = ? AND EXISTS ({_TRIGGER_KEYS[is_postgres(conn)]} = ?)"  # noqa: S608 (constant)
        " ORDER BY escalation_id DESC LIMIT 1",
        (task_id, key),
    ).fetchone()
    return escalation_of_row(row) if row else None


def pending_for_task(conn: Conn, task_id: str) -> list[Escalation]:
    """Every pending escalation of the task, oldest first."""
    rows = conn.execute(
        "SELECT * FROM escalations WHERE task_id = ? AND status = 'pending' ORDER BY escalation_id",
        (task_id,),
    ).fetchall()
    return [escalation_of_row(row) for row in rows]


def latest_ids_for_task(conn: Conn, task_id: str, limit: int) -> tuple[list[int], int]:
    """The ids of the task's latest ``limit`` escalations, oldest first, and how many it has."""
    rows = conn.execute(
        "SELECT escalation_id, count(*) OVER () FROM escalations WHERE task_id = ?"
        " ORDER BY escalation_id DESC LIMIT ?",
        (task_id, limit),
    ).fetchall()
    return [int(row[0]) for row in reversed(rows)], int(rows[0][1]) if rows else 0


def response_state(conn: Conn, escalation_id: int) -> tuple[str, int] | None:
    """(status, revision): the cheap poll behind get_escalation's wait."""
    row = conn.execute(
        "SELECT status, revision FROM escalations WHERE escalation_id = ?", (escalation_id,)
    ).fetchone()
    return (row[0], row[1]) if row else None


def task_of(conn: Conn, escalation_id: int) -> str:
    """The task an escalation belongs to (the escalation exists)."""
    row = conn.execute("SELECT task_id FROM escalations WHERE escalation_id = ?", (escalation_id,)).fetchone()
    if row is None:
        raise LookupError(f"escalation {escalation_id} vanished")
    return str(row[0])
