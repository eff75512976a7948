"""An operator's verdict given after the answer: from the console's page of an escalation
answered elsewhere (the CLI, the agent's client, a chat notification's link), or to change
the first one. The answer itself may carry one too (``escalations.resolve_escalation``).
"""

from __future__ import annotations

from ..errors import Conflict
from ..models.limits import Role
from ..store import verdicts as verdict_store
from ..store.sql import Conn
from .escalations import check_verdict, load_escalation
from .runtime import Runtime


async def judge_escalation(
    rt: Runtime, *, escalation_id: int, verdict: str, role: Role, judged_by: str
) -> None:
    """Keep the operator's verdict on an escalation that is no longer pending (a pending one
    is judged with its answer); a later verdict replaces an earlier one."""
    check_verdict(verdict, role)
    now = rt.now()

    def work(conn: Conn) -> None:
        escalation = load_escalation(conn, escalation_id)
        if escalation.status == "pending":
            raise Conflict(
                f"escalation_id: escalation {escalation_id} is still pending; "
                "give the verdict with the answer."
            )
        verdict_store.record_verdict(conn, escalation_id, verdict, judged_by, now)

    await rt.db.write(work)
