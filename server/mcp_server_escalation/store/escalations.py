"""Escalation records: a row read into its model, a new escalation written, and every change
to one, each bumping its ``revision`` (watchers key on it).

What the agent was told when an escalation fired is kept here too, once, beside the record
(table ``told_at_firing``): the console's escalation page shows it.

The rest of the escalations table is read beside this module, one reader each:
escalation_lookups (a task's escalations as its calls ask for them), escalation_lists (the
lists by status) and operator_queue (the console's queue, a page at a time).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..models.escalations import Escalation, EscalationResponse, ToldAtFiring, Trigger
from ..models.limits import SQLITE_INTEGER_MAX
from .sql import Conn, Row, for_update

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


def escalation_of_row(row: Row) -> Escalation:
    """The escalation a row of the table holds."""
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


def storable_id(escalation_id: int) -> bool:
    """Whether SQLite can hold the id at all (an id it cannot hold names no row)."""
    # An id SQLite cannot hold names no row; binding it would fail with OverflowError (the
    # resource escalation://{id} and the CLI pass ids unbounded by a schema).
    return 0 < escalation_id <= SQLITE_INTEGER_MAX


def get(conn: Conn, escalation_id: int) -> Escalation | None:
    """The escalation, or None."""
    if not storable_id(escalation_id):
        return None
    # In a write, the row stays locked until it commits: one answer, one revision at a time.
    row = conn.execute(
        "SELECT * FROM escalations WHERE escalation_id = ?" + for_update(conn),  # noqa: S608 (constant)
        (escalation_id,),
    ).fetchone()
    return escalation_of_row(row) if row else None


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


def mark_delivered(conn: Conn, escalation: Escalation, now: str) -> Escalation:
    """The agent has received the answer: the escalation as this transaction read it, at
    its new revision (returned without reading it again)."""
    _update(conn, escalation.escalation_id, now, delivered_at=now)
    return escalation.model_copy(
        update={"delivered_at": now, "revision": escalation.revision + 1, "updated_at": now}
    )


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


def record_told_agent(conn: Conn, escalation_id: int, directive: str, message: str, now: str) -> None:
    """Keep what the agent was told when the escalation fired; the first record stays."""
    conn.execute(
        "INSERT INTO told_at_firing (escalation_id, directive, message, told_at) VALUES (?, ?, ?, ?)"
        " ON CONFLICT (escalation_id) DO NOTHING",
        (escalation_id, directive, message, now),
    )


def told_agent(conn: Conn, escalation_id: int) -> ToldAtFiring | None:
    """What the agent was told when the escalation fired, or None (raised before it was kept)."""
    if not storable_id(escalation_id):
        return None
    row = conn.execute(
        "SELECT directive, message, told_at FROM told_at_firing WHERE escalation_id = ?", (escalation_id,)
    ).fetchone()
    return ToldAtFiring(directive=row[0], message=row[1], told_at=row[2]) if row else None
