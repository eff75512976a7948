"""The agent raises an escalation itself: a question for a human, or an error it cannot recover from.

Triggers fire escalations of their own (services/firing.py); this is the agent's door. A
blocking question pauses the task at once, and the agent is told how to wait for the answer.
"""

from __future__ import annotations

from ..errors import InvalidInput
from ..models.escalations import Trigger
from ..models.results import RaiseEscalationResult
from ..rules.decide.triggers import response_options
from ..rules.operators.announce import HEADLINE_CHARS
from ..rules.reading.salient import headline, one_line
from ..store import escalations as escalation_store
from ..store import progress as progress_store
from ..store.sql import Conn
from .escalations import load_escalation
from .firing import direct, escalation_context, keep_told, stop_if_ended, sync_pause
from .runtime import Runtime
from .tasks import load_task


async def raise_escalation(
    rt: Runtime,
    *,
    task_id: str,
    reason: str,
    kind: str = "ask_human",
    question: str | None = None,
    options: list[str] | None = None,
    blocking: bool = True,
    follow_up_of: int | None = None,
    key: str | None = None,
) -> RaiseEscalationResult:
    """The agent asks a human (or reports an unrecoverable error) on its own initiative.

    ``key`` names what the question is about when a caller must find it again (a host's
    permission request), else the trigger is keyed by ``kind``."""
    now = rt.now()

    def work(conn: Conn) -> RaiseEscalationResult:
        task = load_task(conn, task_id)
        stop = stop_if_ended(rt, conn, task)
        if stop is not None:
            return RaiseEscalationResult(escalation=None, **stop.model_dump())
        if follow_up_of is not None:
            _check_follow_up(conn, follow_up_of, task_id)
        escalation_id = escalation_store.insert(
            conn,
            task_id=task_id,
            agent_id=task.agent_id,
            generation=task.generation,
            type_=kind,
            priority="normal",
            blocking=blocking,
            triggers=[_agent_trigger(rt, kind, reason, key, now)],
            response_options=response_options([kind]),
            context=escalation_context(
                conn, task, {kind: {"reason": reason, "question": question, "options": options or []}}
            ),
            reason=reason,
            question=question,
            options=options or [],
            follow_up_of=follow_up_of,
            now=now,
        )
        progress_store.add_action(
            conn, task, "raise_escalation", {"escalation_id": escalation_id, "kind": kind}, now
        )
        return _raised(rt, conn, task_id, escalation_id)

    result = await rt.db.write(work)
    if result.escalation is not None:
        await rt.publish(result.escalation, "created")
    return result


def _check_follow_up(conn: Conn, follow_up_of: int, task_id: str) -> None:
    """A follow-up names an earlier escalation of the same task."""
    earlier = escalation_store.get(conn, follow_up_of)
    if earlier is None:
        raise InvalidInput(
            "follow_up_of", f"no escalation with id {follow_up_of}; list_escalations shows the ids"
        )
    if earlier.task_id != task_id:
        raise InvalidInput(
            "follow_up_of",
            f"escalation {follow_up_of} belongs to task {earlier.task_id!r}, not {task_id!r}",
        )


def _agent_trigger(rt: Runtime, kind: str, reason: str, key: str | None, now: str) -> Trigger:
    """The trigger of an escalation the agent raised itself."""
    # A summary is one line; the whole reason stays in ``reason`` and the trigger's
    # ``observed``. A system error's reason is often a pasted tool output: its error line.
    pick = headline if kind == "system_error" else one_line
    return Trigger(
        type=kind,
        criteria={"raised_by": "agent"},
        observed={"reason": reason},
        summary=rt.prompts.render(f"trigger_{kind}", reason=pick(reason, HEADLINE_CHARS)),
        at=now,
        key=key or kind,
    )


def _raised(rt: Runtime, conn: Conn, task_id: str, escalation_id: int) -> RaiseEscalationResult:
    """The task paused (when blocking) and the agent told what to do while it waits."""
    task = sync_pause(rt, conn, task_id)
    escalation = load_escalation(conn, escalation_id)
    directed = direct(
        rt, conn, task, "message_escalation_raised", task_id=task_id, escalation_id=escalation_id
    )
    keep_told(rt, conn, escalation_id, directed)
    return RaiseEscalationResult(escalation=escalation, **directed.model_dump())
