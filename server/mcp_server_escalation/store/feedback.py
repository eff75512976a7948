"""Attempts, escalation feedback per cycle, and review findings."""

from __future__ import annotations

from collections.abc import Iterator

from ..models.feedback import (
    Attempt,
    CycleFeedback,
    FindingEntry,
    HumanResponse,
    RetryEntry,
    ReviewFinding,
)
from ..models.tasks import Task
from ..rules.bounds.evidence import clip_sides, clipped
from .sql import Conn, Row


def _attempt(row: Row) -> Attempt:
    return Attempt(
        attempt_number=row["attempt_number"],
        cycle=row["cycle"],
        step=row["step"],
        status=row["status"],
        feedback=row["feedback"],
        guard=row["guard"],
        artifact=row["artifact"],
        agent_id=row["agent_id"],
        at=row["created_at"],
    )


def current_cycle(conn: Conn, task_id: str, step: str) -> int:
    """1 + the stagnation cycles the step itself has completed."""
    row = conn.execute(
        "SELECT COUNT(*) FROM escalation_feedback WHERE task_id = ? AND step = ? AND source_step = ?",
        (task_id, step, step),
    ).fetchone()
    return 1 + (int(row[0]) if row else 0)


def insert_attempt(
    conn: Conn,
    task: Task,
    *,
    step: str,
    cycle: int,
    status: str,
    feedback: str,
    guard: str | None,
    artifact: str | None,
    now: str,
) -> int:
    """Store a verdict; returns its attempt number within the step."""
    row = conn.execute(
        "SELECT COALESCE(MAX(attempt_number), 0) FROM attempts WHERE task_id = ? AND step = ?",
        (task.task_id, step),
    ).fetchone()
    number = (int(row[0]) if row else 0) + 1
    conn.execute(
        "INSERT INTO attempts (task_id, step, attempt_number, cycle, status, feedback, guard,"
        " artifact, agent_id, generation, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            task.task_id,
            step,
            number,
            cycle,
            status,
            feedback,
            guard,
            artifact,
            task.agent_id,
            task.generation,
            now,
        ),
    )
    return number


def attempts(
    conn: Conn,
    task_id: str,
    step: str,
    *,
    status: str | None = None,
    cycle: int | None = None,
    limit: int = 1000,
) -> list[Attempt]:
    """The step's latest attempts (optionally of one status and cycle), oldest first."""
    clauses = ["task_id = ?", "step = ?"]
    params: list[object] = [task_id, step]
    if status is not None:
        clauses.append("status = ?")
        params.append(status)
    if cycle is not None:
        clauses.append("cycle = ?")
        params.append(cycle)
    where = " AND ".join(clauses)
    rows = conn.execute(
        f"SELECT * FROM (SELECT * FROM attempts WHERE {where} ORDER BY attempt_id DESC LIMIT ?) AS latest"  # noqa: S608 (fixed clauses)
        " ORDER BY attempt_id",
        (*params, limit),
    ).fetchall()
    return [_attempt(row) for row in rows]


def retry_entry_count(conn: Conn, task_id: str, step: str) -> int:
    """How many entries the step's retry history has."""
    row = conn.execute(
        "SELECT COUNT(*) FROM retry_entries WHERE task_id = ? AND step = ?", (task_id, step)
    ).fetchone()
    return int(row[0]) if row else 0


def newest_retry_entries(conn: Conn, task_id: str, step: str) -> Iterator[RetryEntry]:
    """The step's retry entries, newest first (by their latest attempt; ties: the later
    entry first), read one by one as the caller asks (the budget stops early)."""
    cursor = conn.execute(
        "SELECT feedback, attempts, attempt_count, first_attempt, last_guard, last_at"
        " FROM retry_entries WHERE task_id = ? AND step = ?"
        " ORDER BY last_at DESC, first_attempt DESC",
        (task_id, step),
    )
    cursor.row_factory = None  # plain tuples
    try:
        for row in cursor:
            yield RetryEntry._make(row)
    finally:
        cursor.close()  # also when the caller stops early, before its transaction ends


def steps_with_rejected_latest(conn: Conn, task_id: str) -> list[str]:
    """Steps whose latest attempt was rejected (the double-entry rule)."""
    rows = conn.execute(
        "SELECT a.step FROM attempts a WHERE a.task_id = ? AND a.status = 'rejected'"
        " AND a.attempt_id = (SELECT MAX(b.attempt_id) FROM attempts b"
        "                     WHERE b.task_id = a.task_id AND b.step = a.step)"
        " ORDER BY a.step",
        (task_id,),
    ).fetchall()
    return [row[0] for row in rows]


def add_cycle_feedback(
    conn: Conn,
    task_id: str,
    *,
    step: str,
    source_step: str,
    source_cycle: int,
    summary: str,
    now: str,
) -> None:
    """Escalation feedback for ``step`` from a stagnation cycle of ``source_step``."""
    conn.execute(
        "INSERT INTO escalation_feedback (task_id, step, source_step, source_cycle, summary,"
        " created_at) VALUES (?, ?, ?, ?, ?, ?)",
        (task_id, step, source_step, source_cycle, summary, now),
    )


def cycle_feedback(conn: Conn, task_id: str, step: str) -> list[CycleFeedback]:
    """Every escalation feedback entry of the step, oldest first, numbered from 1."""
    rows = conn.execute(
        "SELECT * FROM escalation_feedback WHERE task_id = ? AND step = ? ORDER BY feedback_id",
        (task_id, step),
    ).fetchall()
    return [
        CycleFeedback(
            cycle=index,
            source_step=row["source_step"],
            source_cycle=row["source_cycle"],
            summary=row["summary"],
            at=row["created_at"],
        )
        for index, row in enumerate(rows, start=1)
    ]


def _finding(row: Row) -> ReviewFinding:
    return ReviewFinding(
        finding_id=row["finding_id"],
        stage=row["stage"],
        kind=row["kind"],
        iteration=row["iteration"],
        status=row["status"],
        failure_reason=row["failure_reason"],
        response=row["response"],
        at=row["created_at"],
        resolved_at=row["resolved_at"],
    )


def add_finding(
    conn: Conn,
    task_id: str,
    *,
    stage: str,
    kind: str,
    status: str,
    failure_reason: str,
    response: str,
    now: str,
) -> ReviewFinding:
    """Append a finding; its iteration is the stage's earlier findings + 1."""
    row = conn.execute(
        "SELECT COUNT(*) FROM review_findings WHERE task_id = ? AND stage = ?", (task_id, stage)
    ).fetchone()
    iteration = (int(row[0]) if row else 0) + 1
    cur = conn.execute(
        "INSERT INTO review_findings (task_id, stage, kind, iteration, status, failure_reason,"
        " response, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING *",
        (task_id, stage, kind, iteration, status, failure_reason, response, now),
    )
    inserted = cur.fetchone()
    if inserted is None:
        raise RuntimeError("finding vanished inside its own transaction")
    return _finding(inserted)


def resolve_stage(conn: Conn, task_id: str, stage: str, now: str) -> int:
    """Resolve the stage's outstanding findings (kept for history); returns how many."""
    cur = conn.execute(
        "UPDATE review_findings SET resolved_at = ? WHERE task_id = ? AND stage = ? AND resolved_at IS NULL",
        (now, task_id, stage),
    )
    return cur.rowcount


# A task's outstanding findings: unresolved, by stage then oldest first.
_OUTSTANDING = "FROM review_findings WHERE task_id = ? AND resolved_at IS NULL ORDER BY stage, finding_id"


def outstanding_findings(conn: Conn, task_id: str) -> list[ReviewFinding]:
    """The task's unresolved findings, by stage then oldest first."""
    rows = conn.execute(f"SELECT * {_OUTSTANDING}", (task_id,)).fetchall()
    return [_finding(row) for row in rows]


def latest_outstanding(
    conn: Conn, task_id: str, shown: int, text_chars: int
) -> tuple[list[ReviewFinding], int]:
    """The latest ``shown`` unresolved findings (by stage, then oldest first) with their texts
    clipped to ``text_chars`` (``rules.bounds.evidence.clip``), and how many are unresolved. Only the
    head and tail of a long text are read: a review's response may hold 1 Mi characters, and
    every outstanding one was read whole with each report."""
    counted = conn.execute(
        "SELECT COUNT(*) FROM review_findings WHERE task_id = ? AND resolved_at IS NULL", (task_id,)
    ).fetchone()
    head, tail = clip_sides(text_chars)
    rows = conn.execute(
        "SELECT finding_id, stage, kind, iteration, status, created_at, resolved_at,"
        " length(failure_reason), substr(failure_reason, 1, ?), CASE WHEN length(failure_reason) > ?"
        " THEN substr(failure_reason, length(failure_reason) - ? + 1) ELSE '' END,"
        " length(response), substr(response, 1, ?), CASE WHEN length(response) > ?"
        " THEN substr(response, length(response) - ? + 1) ELSE '' END"
        " FROM review_findings WHERE task_id = ? AND resolved_at IS NULL ORDER BY finding_id DESC LIMIT ?",
        (text_chars, text_chars, tail, text_chars, text_chars, tail, task_id, shown),
    ).fetchall()
    findings = [
        ReviewFinding(
            finding_id=row[0],
            stage=row[1],
            kind=row[2],
            iteration=row[3],
            status=row[4],
            at=row[5],
            resolved_at=row[6],
            failure_reason=_shown(row[7], row[8], row[9], head),
            response=_shown(row[10], row[11], row[12], head),
        )
        for row in rows
    ]
    findings.sort(key=lambda f: (f.stage, f.finding_id))
    return findings, int(counted[0]) if counted else 0


def _shown(length: int, start: str, end: str, head: int) -> str:
    """A text from its ``length``, its first characters and (when longer than them) its last."""
    return clipped(start[:head], end, length) if end else start


def outstanding_entries(conn: Conn, task_id: str) -> list[FindingEntry]:
    """``outstanding_findings`` as plain rows, for feedback reconstruction."""
    rows = conn.execute(
        "SELECT finding_id, stage, kind, iteration, status, failure_reason, response, created_at"
        f" {_OUTSTANDING}",
        (task_id,),
    ).fetchall()
    return list(map(FindingEntry._make, rows))


def human_responses(conn: Conn, task_id: str) -> list[HumanResponse]:
    """Every human answer to the task's escalations, oldest first (withdrawals excluded)."""
    rows = conn.execute(
        "SELECT escalation_id, type, response_type, COALESCE(response_content, ''), responder,"
        " responded_at FROM escalations"
        " WHERE task_id = ? AND response_type IS NOT NULL AND response_type NOT IN ('', 'withdraw')"
        " ORDER BY escalation_id",
        (task_id,),
    ).fetchall()
    return [HumanResponse(*row) for row in rows]
