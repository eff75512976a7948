"""Review findings: failing stages accumulate, a passing stage clears its own."""

from __future__ import annotations

from ..models.feedback import ReviewFinding, ReviewResult
from ..store import feedback as feedback_store
from ..store import progress as progress_store
from ..store.sql import Conn
from .firing import direct, stop_if_ended
from .runtime import Runtime
from .tasks import load_task


async def report_review(
    rt: Runtime,
    *,
    task_id: str,
    stage: str,
    status: str,
    failure_reason: str = "",
    response: str = "",
    kind: str = "review",
) -> ReviewResult:
    """Append a finding (fail, partial_success) or resolve the stage's findings (success)."""
    now = rt.now()

    def work(conn: Conn) -> ReviewResult:
        task = load_task(conn, task_id)
        stop = stop_if_ended(rt, conn, task)
        if stop is not None:
            outstanding = feedback_store.outstanding_findings(conn, task_id)
            return ReviewResult(finding=None, cleared=0, outstanding=outstanding, **stop.model_dump())
        finding: ReviewFinding | None = None
        cleared = 0
        if status == "success":
            cleared = feedback_store.resolve_stage(conn, task_id, stage, now)
        else:
            finding = feedback_store.add_finding(
                conn,
                task_id,
                stage=stage,
                kind=kind,
                status=status,
                failure_reason=failure_reason,
                response=response,
                now=now,
            )
        progress_store.add_action(
            conn,
            task,
            "report_review",
            {"stage": stage, "kind": kind, "status": status, "cleared": cleared},
            now,
        )
        return ReviewResult(
            finding=finding,
            cleared=cleared,
            outstanding=feedback_store.outstanding_findings(conn, task_id),
            **direct(rt, conn, task).model_dump(),
        )

    return await rt.db.write(work)
