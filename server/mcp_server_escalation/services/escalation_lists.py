"""Lists of escalations: summaries by status and task, newest first, with the total that
match, cut to the tasks a scoped token may see (what list_escalations, the CLI, the console
and the resources show)."""

from __future__ import annotations

from ..models.escalations import Escalation
from ..models.results import ListEscalationsResult
from ..rules.bounds.token_scope import Scope
from ..store import escalation_lists as list_store
from ..store.sql import Conn
from .escalations import load_escalation
from .runtime import Runtime


async def list_escalations(
    rt: Runtime,
    *,
    status: str = "pending",
    task_id: str | None = None,
    limit: int = 20,
    within: Scope | None = None,
) -> ListEscalationsResult:
    """Escalation summaries, newest first, with the total that match; ``within``: only those
    of the tasks a scoped token may see (None: every task's)."""

    def work(conn: Conn) -> tuple[list[Escalation], int]:
        if within is None:
            return list_store.list_escalations(conn, status=status, task_id=task_id, limit=limit)
        listed = list_store.tasks_listed(conn, status=status, task_id=task_id)
        kept = [number for number, task, project in listed if within.admits(task, project)]
        return [load_escalation(conn, number) for number in kept[:limit]], len(kept)

    found, total = await rt.db.read(work)
    return ListEscalationsResult(escalations=[list_store.summary(e) for e in found], total=total)
