"""Review findings: failing stages accumulate, a passing stage clears its own."""

from __future__ import annotations

from ..models.feedback import ReviewFinding, ReviewResult
from ..rules.bounds.evidence import clip
from ..store import feedback as feedback_store
from ..store import progress as progress_store
from ..store.sql import Conn
from .firing import direct, stop_if_ended
from .runtime import Runtime
from .tasks import load_task

# What a result shows of the outstanding findings: the latest few, their texts clipped. A
# review's response may hold 1 Mi characters, and every earlier one was returned whole with
# each call (8 MB in one result); get_feedback and task://{task_id}/feedback/{step} show them.
FINDINGS_SHOWN = 10
FINDING_TEXT_SHOWN = 300


def _summary(finding: ReviewFinding) -> ReviewFinding:
    return finding.model_copy(
        update={
            "failure_reason": clip(finding.failure_reason, FINDING_TEXT_SHOWN),
            "response": clip(finding.response, FINDING_TEXT_SHOWN),
        }
    )


def _outstanding(conn: Conn, task_id: str) -> dict[str, object]:
    shown, count = feedback_store.latest_outstanding(conn, task_id, FINDINGS_SHOWN, FINDING_TEXT_SHOWN)
    return {"outstanding": shown, "outstanding_count": count}


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
            return ReviewResult(finding=None, cleared=0, **_outstanding(conn, task_id), **stop.model_dump())
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
            finding=_summary(finding) if finding else None,
            cleared=cleared,
            **_outstanding(conn, task_id),
            **direct(rt, conn, task).model_dump(),
        )

    return await rt.db.write(work)
