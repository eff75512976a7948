"""An operator's verdict given after the answer: from the console's page of an escalation
answered elsewhere (the CLI, the agent's client, a chat notification's link), or to change
the first one. The answer itself may carry one too (``escalation_answers.resolve_escalation``).
The check every verdict passes, and the reading of one, are here for both.
"""

from __future__ import annotations

from ..errors import Conflict, Forbidden, InvalidInput
from ..models.limits import Role
from ..rules.operators.verdicts import VERDICTS
from ..store import verdicts as verdict_store
from ..store.sql import Conn
from .escalations import load_escalation
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


async def verdict_of(rt: Runtime, escalation_id: int) -> tuple[str, str, str] | None:
    """The operator's verdict on the escalation (verdict, who, when), for operators' views only."""
    return await rt.db.read(lambda conn: verdict_store.verdict_of(conn, escalation_id))


def check_verdict(verdict: str | None, role: Role) -> None:
    """A verdict is an operator's, and one of the two."""
    if verdict is None:
        return
    if role != "operator":
        raise Forbidden("verdict: only an operator judges an escalation; an agent gives no verdict.")
    if verdict not in VERDICTS:
        raise InvalidInput("verdict", f"{verdict[:40]!r} is not one of {', '.join(VERDICTS)}")
