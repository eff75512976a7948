"""The operator's queue: pending escalations, then answers not yet acknowledged, a page at a
time after a place in it (the console's queue; services/operator_queue.py)."""

from __future__ import annotations

from ..models.escalations import Escalation, QueuePage, QueuePlace
from .escalations import escalation_of_row
from .migrations import AWAITING_ACKNOWLEDGEMENT
from .sql import Conn, is_postgres

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
            found.extend(escalation_of_row(row) for row in rows)
    return QueuePage(escalations=found, total=total, before=before)
