"""Escalation records."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, get_args

from ..models.escalations import (
    Escalation,
    EscalationRef,
    EscalationResponse,
    EscalationSummary,
    QueuePage,
    QueuePlace,
    ToldAtFiring,
    Trigger,
)
from ..models.limits import SQLITE_INTEGER_MAX, EscalationStatus
from ..rules.operators.announce import headline
from .migrations import AWAITING_ACKNOWLEDGEMENT
from .sql import Conn, Row, for_update, is_postgres

RESOLVED_STATUSES = tuple(status for status in get_args(EscalationStatus) if status != "pending")
# An objective trigger may join an open escalation only if that one was itself raised by a
# trigger: merging it into an agent's own question would let the agent withdraw it.
_QUESTION_TYPES = ("ask_human", "system_error")

_UPDATABLE = frozenset(
    {
        "type",
        "priority",
        "status",
        "triggers_json",
        "context_json",
        "response_options_json",
        "response_type",
        "response_content",
        "new_file_limit",
        "add_scope_json",
        "responder",
        "responded_at",
        "delivered_at",
        "acknowledged_at",
        "acknowledgement_note",
    }
)


def _escalation(row: Row) -> Escalation:
    response = None
    if row["response_type"]:
        response = EscalationResponse(
            response_type=row["response_type"],
            content=row["response_content"] or "",
            new_file_limit=row["new_file_limit"],
            add_scope=json.loads(row["add_scope_json"] or "[]"),
            responder=row["responder"],
            responded_at=row["responded_at"],
        )
    return Escalation(
        escalation_id=row["escalation_id"],
        task_id=row["task_id"],
        agent_id=row["agent_id"],
        type=row["type"],
        triggers=[Trigger.model_validate(t) for t in json.loads(row["triggers_json"])],
        priority=row["priority"],
        blocking=bool(row["blocking"]),
        status=row["status"],
        response_options=json.loads(row["response_options_json"]),
        context=json.loads(row["context_json"]),
        reason=row["reason"],
        question=row["question"],
        options=json.loads(row["options_json"]),
        response=response,
        delivered_at=row["delivered_at"],
        acknowledged_at=row["acknowledged_at"],
        acknowledgement_note=row["acknowledgement_note"],
        follow_up_of=row["follow_up_of"],
        revision=row["revision"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


def _storable(escalation_id: int) -> bool:
    # An id SQLite cannot hold names no row; binding it would fail with OverflowError (the
    # resource escalation://{id} and the CLI pass ids unbounded by a schema).
    return 0 < escalation_id <= SQLITE_INTEGER_MAX


def get(conn: Conn, escalation_id: int) -> Escalation | None:
    """The escalation, or None."""
    if not _storable(escalation_id):
        return None
    # In a write, the row stays locked until it commits: one answer, one revision at a time.
    row = conn.execute(
        "SELECT * FROM escalations WHERE escalation_id = ?" + for_update(conn),  # noqa: S608 (constant)
        (escalation_id,),
    ).fetchone()
    return _escalation(row) if row else None


def insert(
    conn: Conn,
    *,
    task_id: str,
    agent_id: str,
    generation: int,
    type_: str,
    priority: str,
    blocking: bool,
    triggers: list[Trigger],
    response_options: Sequence[str],
    context: Mapping[str, Any],
    reason: str | None,
    question: str | None,
    options: list[str],
    follow_up_of: int | None,
    now: str,
) -> int:
    """A new pending escalation; returns its id."""
    cur = conn.execute(
        "INSERT INTO escalations (task_id, agent_id, generation, type, priority, blocking,"
        " status, triggers_json, response_options_json, context_json, reason, question,"
        " options_json, follow_up_of, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING escalation_id",
        (
            task_id,
            agent_id,
            generation,
            type_,
            priority,
            int(blocking),
            json.dumps([t.model_dump() for t in triggers]),
            json.dumps(list(response_options)),
            json.dumps(context, sort_keys=True),
            reason,
            question,
            json.dumps(options),
            follow_up_of,
            now,
            now,
        ),
    )
    return int(cur.fetchone()[0])


def _update(conn: Conn, escalation_id: int, now: str, **columns: Any) -> None:
    """Set allow-listed columns; every change bumps ``revision`` (watchers key on it)."""
    unknown = set(columns) - _UPDATABLE
    if unknown:
        raise ValueError(f"not updatable: {sorted(unknown)}")
    names = sorted(columns)
    assignments = "".join(f"{name} = ?, " for name in names)
    conn.execute(
        f"UPDATE escalations SET {assignments}revision = revision + 1, updated_at = ?"  # noqa: S608 (allow-listed names)
        " WHERE escalation_id = ?",
        (*(columns[name] for name in names), now, escalation_id),
    )


def revise_triggers(
    conn: Conn,
    escalation: Escalation,
    *,
    triggers: list[Trigger],
    priority: str,
    context: Mapping[str, Any],
    response_options: Sequence[str],
    now: str,
    as_read: bool = True,
) -> Escalation:
    """The open escalation after a call fired its triggers again or added new ones: the
    triggers, the priority, the context with their evidence and the answers they allow.

    ``escalation`` is the open one as this transaction read (and locked) it; the revision is
    returned without reading it again, its context as a read would give it (JSON's types and
    key order) unless ``as_read`` is False: a caller that only names the escalation need not
    pay for parsing back what it just wrote. A column whose value did not change is not
    written again (a repeat that changes only its triggers keeps its context).
    """
    context_json = json.dumps(context, sort_keys=True)
    stored = json.loads(context_json) if as_read else dict(context)
    options = list(response_options)
    triggers_json = json.dumps([t.model_dump() for t in triggers], sort_keys=True)
    columns: dict[str, Any] = {"triggers_json": triggers_json}
    if priority != escalation.priority:
        columns["priority"] = priority
    if stored != escalation.context:
        columns["context_json"] = context_json
    if options != escalation.response_options:
        columns["response_options_json"] = json.dumps(options, sort_keys=True)
    _update(conn, escalation.escalation_id, now, **columns)
    return escalation.model_copy(
        update={
            "triggers": list(triggers),
            "priority": priority,
            "context": stored,
            "response_options": options,
            "revision": escalation.revision + 1,
            "updated_at": now,
        }
    )


def record_response(
    conn: Conn, escalation_id: int, status: str, response: EscalationResponse, now: str
) -> None:
    """The answer to a pending escalation, and the status it closes it with."""
    _update(
        conn,
        escalation_id,
        now,
        status=status,
        response_type=response.response_type,
        response_content=response.content,
        new_file_limit=response.new_file_limit,
        add_scope_json=json.dumps(response.add_scope),
        responder=response.responder,
        responded_at=response.responded_at,
    )


def mark_delivered(conn: Conn, escalation_id: int, now: str) -> None:
    """The agent has received the answer."""
    _update(conn, escalation_id, now, delivered_at=now)


def acknowledge(conn: Conn, escalation: Escalation, note: str | None, now: str) -> None:
    """The agent confirms it read the answer (which it has then received, if not before)."""
    _update(
        conn,
        escalation.escalation_id,
        now,
        acknowledged_at=now,
        acknowledgement_note=note,
        delivered_at=escalation.delivered_at or now,
    )


def close_unanswered(conn: Conn, escalation_id: int, status: str, now: str) -> None:
    """A pending escalation nobody will answer any more: its task ended or its agent was stopped."""
    _update(conn, escalation_id, now, status=status)


def open_triggered(conn: Conn, task_id: str) -> Escalation | None:
    """The task's oldest pending escalation that was raised by an objective trigger."""
    lock = for_update(conn)
    row = conn.execute(
        "SELECT * FROM escalations WHERE task_id = ? AND status = 'pending'"  # noqa: S608 (constant)
        f" AND type NOT IN (?, ?) ORDER BY escalation_id LIMIT 1{lock}",
        (task_id, *_QUESTION_TYPES),
    ).fetchone()
    return _escalation(row) if row else None


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
    return _escalation(row) if row else None


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


def get_ref(conn: Conn, escalation_id: int) -> EscalationRef | None:
    """The escalation named, or None (an unchanged poll reads no more)."""
    if not _storable(escalation_id):
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
    return _escalation(row) if row else None


def pending_for_task(conn: Conn, task_id: str) -> list[Escalation]:
    """Every pending escalation of the task, oldest first."""
    rows = conn.execute(
        "SELECT * FROM escalations WHERE task_id = ? AND status = 'pending' ORDER BY escalation_id",
        (task_id,),
    ).fetchall()
    return [_escalation(row) for row in rows]


def latest_ids_for_task(conn: Conn, task_id: str, limit: int) -> tuple[list[int], int]:
    """The ids of the task's latest ``limit`` escalations, oldest first, and how many it has."""
    rows = conn.execute(
        "SELECT escalation_id, count(*) OVER () FROM escalations WHERE task_id = ?"
        " ORDER BY escalation_id DESC LIMIT ?",
        (task_id, limit),
    ).fetchall()
    return [int(row[0]) for row in reversed(rows)], int(rows[0][1]) if rows else 0


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
    return [_escalation(row) for row in rows], total


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


def record_told_agent(conn: Conn, escalation_id: int, directive: str, message: str, now: str) -> None:
    """Keep what the agent was told when the escalation fired; the first record stays."""
    conn.execute(
        "INSERT INTO told_at_firing (escalation_id, directive, message, told_at) VALUES (?, ?, ?, ?)"
        " ON CONFLICT (escalation_id) DO NOTHING",
        (escalation_id, directive, message, now),
    )


def told_agent(conn: Conn, escalation_id: int) -> ToldAtFiring | None:
    """What the agent was told when the escalation fired, or None (raised before it was kept)."""
    if not _storable(escalation_id):
        return None
    row = conn.execute(
        "SELECT directive, message, told_at FROM told_at_firing WHERE escalation_id = ?", (escalation_id,)
    ).fetchone()
    return ToldAtFiring(directive=row[0], message=row[1], told_at=row[2]) if row else None


# The operator's queue: pending escalations, then answers not yet acknowledged. Each part is
# read newest first from its own index (status and id; migration 14's partial index), after
# a place in it: a page never reads the rows before it, nor the answered history.
_PARTS = (("status = 'pending'", False), (AWAITING_ACKNOWLEDGEMENT, True))
# The escalation's project, and whether a folder's name ends it, as each backend says it
# (SQLite, PostgreSQL).
_PROJECT = ("json_extract(context_json, '$.task.project')", "(context_json::jsonb #>> '{task,project}')")
_ENDS_WITH_FOLDER = (
    "substr({project}, -length(?) - 1) = '/' || ?",
    "right({project}, char_length(CAST(? AS TEXT)) + 1) = '/' || CAST(? AS TEXT)",
)


def _queue_filters(conn: Conn, project: str, agent_id: str, type_: str) -> tuple[str, tuple[str, ...]]:
    """The filters that are set, as SQL terms: exact values; a project by its path or by its
    folder's name (the path's last part)."""
    terms: list[str] = []
    params: list[str] = []
    if project:
        dialect = is_postgres(conn)
        column = _PROJECT[dialect]
        if "/" in project:
            terms.append(f"{column} = ?")
            params.append(project)
        else:
            ends = _ENDS_WITH_FOLDER[dialect].format(project=column)
            terms.append(f"({column} = ? OR {ends})")
            params.extend((project, project, project))
    if agent_id:
        terms.append("agent_id = ?")
        params.append(agent_id)
    if type_:
        terms.append("type = ?")
        params.append(type_)
    return "".join(f" AND {term}" for term in terms), tuple(params)


def waiting_with_tasks(
    conn: Conn, *, project: str, agent_id: str, type_: str
) -> list[tuple[QueuePlace, str, str | None]]:
    """The whole filtered queue in its order, each escalation as its place, its task and the
    task's project: what a scoped token's queue keeps only the rows of its scope from (the
    check is the scope's own, as for ``tasks_listed``)."""
    filters, params = _queue_filters(conn, project, agent_id, type_)
    listed: list[tuple[QueuePlace, str, str | None]] = []
    for where, answered in _PARTS:
        rows = conn.execute(
            "SELECT e.escalation_id, e.task_id, t.project"  # noqa: S608 (constant terms)
            f" FROM (SELECT escalation_id, task_id FROM escalations WHERE {where}{filters}) e"
            " LEFT JOIN tasks t ON t.task_id = e.task_id ORDER BY e.escalation_id DESC",
            params,
        ).fetchall()
        listed.extend((QueuePlace(answered=answered, escalation_id=int(r[0])), str(r[1]), r[2]) for r in rows)
    return listed


def waiting_for_operator(
    conn: Conn, *, project: str, agent_id: str, type_: str, after: QueuePlace | None, limit: int
) -> QueuePage:
    """The page of the operator's queue that follows ``after`` (the first page without it),
    at most ``limit`` escalations, with how many the filtered queue holds and precede it."""
    filters, params = _queue_filters(conn, project, agent_id, type_)
    found: list[Escalation] = []
    total = before = 0
    for where, answered in _PARTS:
        count_sql = f"SELECT count(*) FROM escalations WHERE {where}{filters}"  # noqa: S608 (constant terms)
        in_part = int(conn.execute(count_sql, params).fetchone()[0])
        total += in_part
        if after is not None and after.answered and not answered:
            before += in_part  # the whole pending part came before an answered place
            continue
        bound: tuple[int, ...] = ()
        beyond = ""
        if after is not None and after.answered == answered:
            beyond = " AND escalation_id < ?"
            bound = (after.escalation_id,)
            ahead_sql = f"SELECT count(*) FROM escalations WHERE {where}{filters} AND escalation_id >= ?"  # noqa: S608
            before += int(conn.execute(ahead_sql, (*params, after.escalation_id)).fetchone()[0])
        if len(found) < limit:
            rows = conn.execute(
                f"SELECT * FROM escalations WHERE {where}{filters}{beyond}"  # noqa: S608 (constant terms)
                " ORDER BY escalation_id DESC LIMIT ?",
                (*params, *bound, limit - len(found)),
            ).fetchall()
            found.extend(_escalation(row) for row in rows)
    return QueuePage(escalations=found, total=total, before=before)
