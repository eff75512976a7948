"""A human answers an escalation: the answer recorded and its effects on the task.

Response effects: guidance -> ``resolved``; override -> ``resolved_with_override`` and the
text becomes the task's approach; terminate -> ``resolved_with_termination`` and the task
is ``terminated_by_human`` at once; approve -> ``resolved_with_approval`` with the new file
limit and scope applied to the task at once; withdraw (the agent's own question only) ->
``withdrawn``. The checks an answer passes first are in escalation_answer_checks.py.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import InvalidInput, TaskEnded
from ..models.escalations import Escalation, EscalationResponse
from ..models.limits import ENDED_STATUSES, Role
from ..models.results import ResolveResult
from ..models.tasks import Task
from ..store import escalation_lookups
from ..store import escalations as escalation_store
from ..store import progress as progress_store
from ..store import tasks as task_store
from ..store import verdicts as verdict_store
from ..store.sql import Conn
from .escalation_answer_checks import (
    check_agent_may_withdraw,
    check_answer,
    check_answerable,
    check_approval_values,
)
from .escalations import load_escalation
from .firing import sync_pause
from .runtime import Runtime
from .tasks import load_task
from .verdicts import check_verdict

_STATUS_BY_RESPONSE = {
    "guidance": "resolved",
    "override": "resolved_with_override",
    "terminate": "resolved_with_termination",
    "approve": "resolved_with_approval",
    "withdraw": "withdrawn",
}


async def resolve_escalation(
    rt: Runtime,
    *,
    escalation_id: int,
    response_type: str,
    content: str = "",
    new_file_limit: int | None = None,
    add_scope: list[str] | None = None,
    responder: str | None = None,
    role: Role,
    held: Mapping[str, int] | None = None,
    agent_id: str | None = None,
    expected_revision: int | None = None,
    verdict: str | None = None,
) -> ResolveResult:
    """Answer an escalation; an agent-role caller may only withdraw a question of a task it
    holds (``held``: task id -> the generation it was held at, see adapters/mcp/holders.py;
    None: the caller comes on no connection the server can tell apart, so it holds none), or
    whose current agent it names (``agent_id``, as given to ``start_task``): a client that
    opens a session per call never calls twice on one connection.

    ``expected_revision``: the revision the answer was made on (the console's form). An
    escalation that changed since, new evidence or another answer, is a Conflict: the human
    answered something they did not see.

    ``verdict``: the operator's judgement of the escalation, useful or a false alarm, kept with
    the answer and who gave it; an agent may not give one (nor ever read one)."""
    check_verdict(verdict, role)
    add_scope = sorted(set(add_scope or []))
    check_approval_values(new_file_limit, add_scope)
    now = rt.now()
    recorded_responder = _recorded_responder(role, responder)

    def work(conn: Conn) -> ResolveResult:
        escalation = load_escalation(conn, escalation_id)
        if role == "agent":
            check_agent_may_withdraw(conn, escalation, response_type, held, agent_id)
        check_answerable(escalation, expected_revision)
        check_answer(escalation, response_type, content, new_file_limit, add_scope)
        task = load_task(conn, escalation.task_id)
        if task.status in ENDED_STATUSES:
            raise TaskEnded(f"escalation_id: task {task.task_id!r} is already {task.status}.").because(
                "task_ended", escalation_id=escalation_id, task_id=task.task_id, task_status=task.status
            )
        _apply_effects(conn, task, escalation, response_type, content, new_file_limit, add_scope, now)
        response = EscalationResponse(
            response_type=response_type,
            content=content,
            new_file_limit=new_file_limit,
            add_scope=add_scope,
            responder=recorded_responder,
            responded_at=now,
        )
        if verdict is not None:
            verdict_store.record_verdict(conn, escalation_id, verdict, recorded_responder or role, now)
        return _record_answer(rt, conn, task, escalation_id, response)

    result = await rt.db.write(work)
    await rt.publish(result.escalation, "resolved")
    return result


def _record_answer(
    rt: Runtime, conn: Conn, task: Task, escalation_id: int, response: EscalationResponse
) -> ResolveResult:
    """The answer stored and logged, the task's pause brought in line with it."""
    now, response_type = response.responded_at, response.response_type
    escalation_store.record_response(conn, escalation_id, _STATUS_BY_RESPONSE[response_type], response, now)
    progress_store.add_action(
        conn,
        task,
        "escalation_answered",
        {"escalation_id": escalation_id, "response_type": response_type, "responder": response.responder},
        now,
    )
    task = sync_pause(rt, conn, task.task_id)
    escalation = load_escalation(conn, escalation_id)
    if response_type == "terminate":
        # The agent is stopped: its other open questions can no longer be acted on.
        for other in escalation_lookups.pending_for_task(conn, task.task_id):
            escalation_store.close_unanswered(conn, other.escalation_id, "agent_terminated", now)
    return ResolveResult(escalation=escalation, task_status=task.status)


def _recorded_responder(role: Role, responder: str | None) -> str:
    """Who answered, as stored: an agent's name always says it is an agent's.

    An operator's answer is the human's word; a name an agent gives ("operator:carol") is
    only the agent's claim, so it is kept behind ``agent:`` and never read as a human's.
    """
    if role == "operator":
        return responder or "operator"
    if not responder:
        return "agent"
    return responder if responder.startswith("agent:") else f"agent:{responder}"


def _apply_effects(
    conn: Conn,
    task: Task,
    escalation: Escalation,
    response_type: str,
    content: str,
    new_file_limit: int | None,
    add_scope: list[str],
    now: str,
) -> None:
    if response_type == "terminate":
        task_store.end(conn, task.task_id, "terminated_by_human", content or None, now)
    elif response_type == "override":
        task_store.set_approach(conn, task.task_id, content, now)
    elif response_type == "approve":
        thresholds = task.thresholds
        needed = task.counters.files_modified + len(_proposed_files(escalation))
        if new_file_limit is None and needed > thresholds.files_modified_exceeds:
            # Approving a file-limit escalation without a number admits exactly the files
            # that were proposed, or reported modified: the smallest change that lets the
            # agent go on.
            new_file_limit = needed
        if new_file_limit is not None:
            if new_file_limit < task.counters.files_modified:
                raise InvalidInput(
                    "new_file_limit",
                    f"{new_file_limit} is below the {task.counters.files_modified} files "
                    "the task has already modified",
                ).because(
                    "limit_below_modified",
                    limit=new_file_limit,
                    modified=task.counters.files_modified,
                    task_id=task.task_id,
                )
            thresholds = thresholds.model_copy(update={"files_modified_exceeds": new_file_limit})
        scope = list(task.scope)
        widen = add_scope or (_out_of_scope_paths(escalation) if task.scope else [])
        scope = sorted(set(scope) | set(widen))
        task_store.set_limits(conn, task.task_id, thresholds, scope, now)


def _proposed_files(escalation: Escalation) -> list[str]:
    facts = escalation.context.get("evidence", {}).get("file_limit") or {}
    return list(facts.get("proposed_files", []))


def _out_of_scope_paths(escalation: Escalation) -> list[str]:
    facts = escalation.context.get("evidence", {}).get("scope_deviation") or {}
    return [p for p in facts.get("out_of_scope_paths", []) if not p.startswith("/")]
