"""Lists of escalations: summaries by status and task, newest first, with the total that
match, cut to the tasks a scoped token may see (what list_escalations, the CLI, the console
and the resources show)."""

from __future__ import annotations

from ..models.escalations import Escalation, ReviewedEscalation
from ..models.results import ListEscalationsResult
from ..rules.bounds.token_scope import Scope
from ..store import escalation_lists as list_store
from ..store import verdicts as verdict_store
from ..store.sql import Conn
from .escalations import load_escalation
from .runtime import Runtime


def _listed(
    conn: Conn, status: str, task_id: str | None, limit: int, within: Scope | None
) -> tuple[list[Escalation], int]:
    if within is None:
        return list_store.list_escalations(conn, status=status, task_id=task_id, limit=limit)
    listed = list_store.tasks_listed(conn, status=status, task_id=task_id)
    kept = [number for number, task, project in listed if within.admits(task, project)]
    return [load_escalation(conn, number) for number in kept[:limit]], len(kept)


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
    found, total = await rt.db.read(lambda conn: _listed(conn, status, task_id, limit, within))
    return ListEscalationsResult(escalations=[list_store.summary(e) for e in found], total=total)


async def review_escalations(
    rt: Runtime,
    *,
    status: str = "pending",
    task_id: str | None = None,
    limit: int = 20,
    within: Scope | None = None,
) -> tuple[list[ReviewedEscalation], int]:
    """The rows ``list_escalations`` gives, each with its task's project, its answer and the
    operator's verdict (for operators' views only: the agent never reads a verdict), and the
    total that match."""

    def work(conn: Conn) -> tuple[list[ReviewedEscalation], int]:
        found, total = _listed(conn, status, task_id, limit, within)
        rows = []
        for escalation in found:
            judged = verdict_store.verdict_of(conn, escalation.escalation_id)
            task = escalation.context.get("task") or {}
            rows.append(
                ReviewedEscalation(
                    summary=list_store.summary(escalation),
                    project=task.get("project"),
                    response=escalation.response,
                    verdict=judged[0] if judged else None,
                    judged_by=judged[1] if judged else None,
                )
            )
        return rows, total

    return await rt.db.read(work)
