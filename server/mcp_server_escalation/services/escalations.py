"""The human-response loop: raise, wait, answer, acknowledge.

Response effects: guidance -> ``resolved``; override -> ``resolved_with_override`` and the
text becomes the task's approach; terminate -> ``resolved_with_termination`` and the task
is ``terminated_by_human`` at once; approve -> ``resolved_with_approval`` with the new file
limit and scope applied to the task at once; withdraw (the agent's own question only) ->
``withdrawn``. A wait that times out is never an answer: the escalation stays pending.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

import anyio

from ..errors import Conflict, Forbidden, InvalidInput, NotFound, TaskEnded
from ..models.escalations import Escalation, EscalationRef, EscalationResponse, Trigger
from ..models.limits import (
    ENDED_STATUSES,
    FILE_LIMIT_MAX,
    LIST_MAX,
    PATH_MAX,
    TEXT_MAX,
    WAIT_MAX_SECONDS,
    Directive,
    Role,
)
from ..models.results import (
    AcknowledgeResult,
    EscalationResult,
    ListEscalationsResult,
    RaiseEscalationResult,
    ResolveResult,
)
from ..models.tasks import Task
from ..rules.bounds.token_scope import Scope
from ..rules.decide.triggers import COUNTER_RESET_ON_ACK, budget_resets, response_options
from ..rules.operators.announce import HEADLINE_CHARS
from ..rules.operators.verdicts import VERDICTS
from ..rules.reading.salient import headline, one_line
from ..store import escalations as escalation_store
from ..store import progress as progress_store
from ..store import tasks as task_store
from ..store import verdicts as verdict_store
from ..store.sql import Conn
from .firing import direct, escalation_context, keep_told, stop_if_ended, sync_pause
from .runtime import Runtime
from .tasks import load_task

# How often a waiting get_escalation looks at the store for an answer written by another
# process (the CLI, another server): well inside the 2 s in which an answer must reach the
# waiting agent (benchmarks/README.md); a local answer wakes it at once.
POLL_SECONDS = 0.2
PROGRESS_SECONDS = 1.0
# (seconds waited, the whole wait): told during a wait (adapters/mcp/waits.py)
WaitListener = Callable[[float, float], Awaitable[None]]

_STATUS_BY_RESPONSE = {
    "guidance": "resolved",
    "override": "resolved_with_override",
    "terminate": "resolved_with_termination",
    "approve": "resolved_with_approval",
    "withdraw": "withdrawn",
}


def load_escalation(conn: Conn, escalation_id: int) -> Escalation:
    """The escalation or a NotFound naming the field."""
    escalation = escalation_store.get(conn, escalation_id)
    if escalation is None:
        raise NotFound("escalation_id", escalation_id, "list_escalations shows the ids.")
    return escalation


async def show_escalation(rt: Runtime, escalation_id: int) -> Escalation:
    """The escalation as the operator sees it (reading it delivers nothing)."""
    return await rt.db.read(lambda conn: load_escalation(conn, escalation_id))


async def agent_message(rt: Runtime, escalation_id: int) -> str:
    """What ``get_escalation`` tells the agent about this escalation now (reading delivers nothing)."""

    def read(conn: Conn) -> str:
        escalation = load_escalation(conn, escalation_id)
        task = load_task(conn, escalation.task_id)
        return _escalation_message(rt, escalation, task, direct(rt, conn, task).message)

    return await rt.db.read(read)


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


async def _wait_for_change(
    rt: Runtime, escalation_id: int, wait_seconds: float, on_wait: WaitListener | None = None
) -> None:
    """Return when the escalation is no longer pending or the wait is over; ``on_wait``
    hears (seconds waited, the whole wait) about every ``PROGRESS_SECONDS``."""
    # The tool refuses a wait outside 0-60 s by name; other doors (the demo) are clamped.
    whole = min(max(wait_seconds, 0.0), WAIT_MAX_SECONDS)
    started = anyio.current_time()
    deadline, next_progress = started + whole, started + PROGRESS_SECONDS
    while True:
        state = await rt.db.read(lambda conn: escalation_store.response_state(conn, escalation_id))
        if state is None or state[0] != "pending":
            return
        now = anyio.current_time()
        if now >= deadline:
            return
        if on_wait is not None and now >= next_progress:
            next_progress = now + PROGRESS_SECONDS
            await on_wait(now - started, whole)
        changed = rt.changed()
        with anyio.move_on_after(min(POLL_SECONDS, deadline - now)):
            await changed.wait()


async def get_escalation(
    rt: Runtime,
    *,
    escalation_id: int,
    wait_seconds: float = 0,
    deliver: bool = True,
    known_revision: int | None = None,
    on_wait: WaitListener | None = None,
) -> EscalationResult:
    """The escalation, waiting up to ``wait_seconds`` (0-60) for an answer; ``deliver`` marks it
    delivered; ``on_wait`` hears how the wait goes (the client's progress notifications).

    ``known_revision``: the revision the caller last received whole. While the escalation is
    still at that revision the answer leaves the record out (a waiting agent polls it every
    30 s, and each whole record went into its context again); any change sends it whole.
    """
    current = await rt.db.read(lambda conn: escalation_store.get_ref(conn, escalation_id))
    if current is None:
        raise NotFound("escalation_id", escalation_id, "list_escalations shows the ids.")
    if known_revision is not None and known_revision > current.revision:
        raise InvalidInput(
            "known_revision",
            f"{known_revision} is above escalation {escalation_id}'s revision {current.revision}; "
            "pass the revision of the last answer that held the record, or leave it out",
        )
    if wait_seconds > 0:
        await _wait_for_change(rt, escalation_id, wait_seconds, on_wait)
    now = rt.now()

    def work(conn: Conn) -> EscalationResult:
        named = escalation_store.get_ref(conn, escalation_id)
        if named is None:
            raise NotFound("escalation_id", escalation_id, "list_escalations shows the ids.")
        if named.revision == known_revision:
            return _unchanged(rt, conn, named)
        escalation = load_escalation(conn, escalation_id)
        if deliver and escalation.response is not None and escalation.delivered_at is None:
            escalation_store.mark_delivered(conn, escalation_id, now)
            escalation = load_escalation(conn, escalation_id)
        task = load_task(conn, escalation.task_id)
        directed = direct(rt, conn, task)
        message = _escalation_message(rt, escalation, task, directed.message)
        return _whole(escalation, directed.directive, message, directed.holding)

    return await rt.db.write(work)


def _whole(
    escalation: Escalation, directive: Directive, message: str, holding: EscalationRef | None
) -> EscalationResult:
    return EscalationResult(
        escalation=escalation,
        escalation_id=escalation.escalation_id,
        status=escalation.status,
        revision=escalation.revision,
        unchanged=False,
        directive=directive,
        message=message,
        holding=holding,
    )


def _unchanged(rt: Runtime, conn: Conn, named: EscalationRef) -> EscalationResult:
    """The compact answer of a poll that finds nothing new: status, revision, what to do."""
    escalation_id = named.escalation_id
    task_id = escalation_store.task_of(conn, escalation_id)
    task = load_task(conn, task_id)
    directed = direct(rt, conn, task)
    message = directed.message
    if named.status == "pending" and task.status not in ENDED_STATUSES:
        message = rt.prompts.render(
            "message_escalation_unchanged",
            task_id=task_id,
            escalation_id=escalation_id,
            type=named.type,
            revision=named.revision,
        )
    return EscalationResult(
        escalation=None,
        escalation_id=escalation_id,
        status=named.status,
        revision=named.revision,
        unchanged=True,
        directive=directed.directive,
        message=message,
        holding=directed.holding,
    )


def _escalation_message(rt: Runtime, escalation: Escalation, task: Task, fallback: str) -> str:
    if task.status in ENDED_STATUSES:
        return fallback
    if escalation.status == "pending":
        return rt.prompts.render(
            "message_escalation_waiting",
            task_id=task.task_id,
            escalation_id=escalation.escalation_id,
            type=escalation.type,
            revision=escalation.revision,
        )
    response = escalation.response
    if response is not None and response.response_type != "withdraw" and escalation.acknowledged_at is None:
        return rt.prompts.render(
            "message_escalation_answered",
            task_id=task.task_id,
            escalation_id=escalation.escalation_id,
            response_type=response.response_type,
            content=response.content,
        )
    if escalation.status in ("agent_terminated", "withdrawn") or escalation.acknowledged_at:
        return fallback
    return rt.prompts.render(
        "message_escalation_closed",
        task_id=task.task_id,
        escalation_id=escalation.escalation_id,
        status=escalation.status,
    )


async def acknowledge_response(
    rt: Runtime, *, escalation_id: int, note: str | None = None
) -> AcknowledgeResult:
    """The agent confirms it read the answer; the task resumes (or stays terminated)."""
    now = rt.now()

    def work(conn: Conn) -> AcknowledgeResult:
        escalation = load_escalation(conn, escalation_id)
        response = escalation.response
        if response is None:
            return _nothing_to_acknowledge(rt, conn, escalation)
        if escalation.acknowledged_at is None and response.response_type != "withdraw":
            _acknowledge(conn, load_task(conn, escalation.task_id), escalation, response, note, now)
        task = sync_pause(rt, conn, escalation.task_id)
        escalation = load_escalation(conn, escalation_id)
        template, values = _ack_wording(task, escalation, response.response_type)
        directed = direct(rt, conn, task, template, **values)
        if response.response_type == "terminate":
            directed.message = rt.prompts.render(template, **values)
        return AcknowledgeResult(
            escalation=escalation, task_status=task.status, task=task, **directed.model_dump()
        )

    result = await rt.db.write(work)
    if result.escalation.response is not None:  # else nothing changed (an ended task's question)
        await rt.publish(result.escalation, "acknowledged")
    return result


def _nothing_to_acknowledge(rt: Runtime, conn: Conn, escalation: Escalation) -> AcknowledgeResult:
    """No answer yet: after the task ended, the question was closed unanswered (the agent is
    told to stop); otherwise a Conflict that says how to wait for the answer."""
    task = load_task(conn, escalation.task_id)
    stop = stop_if_ended(rt, conn, task)
    if stop is not None:
        return AcknowledgeResult(
            escalation=escalation, task_status=task.status, task=task, **stop.model_dump()
        )
    escalation_id = escalation.escalation_id
    raise Conflict(
        f"escalation_id: escalation {escalation_id} has no response yet (status "
        f"{escalation.status}); wait for it with get_escalation({escalation_id}, wait_seconds=30)."
    )


def _acknowledge(
    conn: Conn, task: Task, escalation: Escalation, response: EscalationResponse, note: str | None, now: str
) -> None:
    """Mark the answer read, reset the counters its triggers measured, and log it."""
    escalation_store.acknowledge(conn, escalation, note, now)
    resets = _counter_resets(escalation, now)
    if task.status not in ENDED_STATUSES and resets:
        counters = task.counters.model_copy(update=resets)
        task_store.save_counters(conn, task.task_id, counters, now)
    progress_store.add_action(
        conn,
        task,
        "acknowledge_response",
        {"escalation_id": escalation.escalation_id, "response_type": response.response_type, "note": note},
        now,
    )


def _counter_resets(escalation: Escalation, now: str) -> dict[str, object]:
    """The counters (and budgets) an acknowledged escalation's triggers start again."""
    resets: dict[str, object] = {
        name: 0 for trigger in escalation.triggers for name in COUNTER_RESET_ON_ACK.get(trigger.type, ())
    }
    resets.update(budget_resets([t.key for t in escalation.triggers], now))
    if "consecutive_same_error" in resets:
        resets["last_fingerprint"] = None
        resets["last_failed_operation"] = None
    return resets


def _ack_wording(task: Task, escalation: Escalation, response_type: str) -> tuple[str, dict[str, object]]:
    content = escalation.response.content if escalation.response else ""
    if response_type == "approve":
        return "message_acknowledged_approval", {
            "task_id": task.task_id,
            "file_limit": task.thresholds.files_modified_exceeds,
            "scope": task.scope or ["(any)"],
        }
    if response_type == "withdraw":
        return "message_escalation_closed", {
            "task_id": task.task_id,
            "escalation_id": escalation.escalation_id,
            "status": escalation.status,
        }
    template = {
        "guidance": "message_acknowledged_guidance",
        "override": "message_acknowledged_override",
        "terminate": "message_acknowledged_termination",
    }[response_type]
    return template, {"task_id": task.task_id, "content": content}


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
            return escalation_store.list_escalations(conn, status=status, task_id=task_id, limit=limit)
        listed = escalation_store.tasks_listed(conn, status=status, task_id=task_id)
        kept = [number for number, task, project in listed if within.admits(task, project)]
        return [load_escalation(conn, number) for number in kept[:limit]], len(kept)

    found, total = await rt.db.read(work)
    return ListEscalationsResult(escalations=[escalation_store.summary(e) for e in found], total=total)


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
    _check_approval_values(new_file_limit, add_scope)
    now = rt.now()
    recorded_responder = _recorded_responder(role, responder)

    def work(conn: Conn) -> ResolveResult:
        escalation = load_escalation(conn, escalation_id)
        if role == "agent":
            _check_agent_may_withdraw(conn, escalation, response_type, held, agent_id)
        _check_answerable(escalation, expected_revision)
        _check_answer(escalation, response_type, content, new_file_limit, add_scope)
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


def _check_answerable(escalation: Escalation, expected_revision: int | None) -> None:
    """Only a pending escalation is answered, and only as the human saw it."""
    escalation_id = escalation.escalation_id
    if escalation.status != "pending":
        raise Conflict(
            f"escalation_id: escalation {escalation_id} is already {escalation.status}; "
            "only a pending escalation can be answered."
        ).because(
            "answered" if escalation.response is not None else "closed",
            escalation_id=escalation_id,
            status=escalation.status,
            task_id=escalation.task_id,
        )
    if expected_revision is not None and expected_revision != escalation.revision:
        raise Conflict(
            f"revision: escalation {escalation_id} changed since revision {expected_revision} "
            f"(it is at revision {escalation.revision}); read it again before answering."
        ).because("changed", escalation_id=escalation_id, seen=expected_revision, current=escalation.revision)


def _check_answer(
    escalation: Escalation,
    response_type: str,
    content: str,
    new_file_limit: int | None,
    add_scope: list[str],
) -> None:
    """The answer is one this escalation offers, with what that kind of answer needs."""
    if response_type not in escalation.response_options:
        raise InvalidInput(
            "response_type",
            f"{response_type!r} is not an option for this {escalation.type} escalation; "
            f"choose one of {escalation.response_options}",
        ).because(
            "not_an_answer",
            escalation_id=escalation.escalation_id,
            type=escalation.type,
            response_type=response_type,
            options=tuple(escalation.response_options),
        )
    if response_type in ("guidance", "override") and not content.strip():
        raise InvalidInput(
            "content", f"a {response_type} response needs text (1 to {TEXT_MAX} characters)"
        ).because("needs_text", response_type=response_type)
    if response_type != "approve" and (new_file_limit is not None or add_scope):
        raise InvalidInput(
            "new_file_limit",
            "new_file_limit and add_scope go only with response_type 'approve'",
        ).because("approve_only", response_type=response_type)


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
        for other in escalation_store.pending_for_task(conn, task.task_id):
            escalation_store.close_unanswered(conn, other.escalation_id, "agent_terminated", now)
    return ResolveResult(escalation=escalation, task_status=task.status)


def _check_approval_values(new_file_limit: int | None, add_scope: list[str]) -> None:
    """The tool's schema bounds for an approval, for the doors without one (the console's form)."""
    if new_file_limit is not None and not 1 <= new_file_limit <= FILE_LIMIT_MAX:
        raise InvalidInput(
            "new_file_limit", f"{new_file_limit} is not between 1 and {FILE_LIMIT_MAX}"
        ).because("file_limit_range", limit=new_file_limit, high=FILE_LIMIT_MAX)
    longest = max((len(glob) for glob in add_scope), default=0)
    if len(add_scope) > LIST_MAX or longest > PATH_MAX:
        raise InvalidInput(
            "add_scope", f"at most {LIST_MAX} globs of at most {PATH_MAX} characters each"
        ).because("scope_too_large", count=len(add_scope), longest=longest, globs=LIST_MAX, chars=PATH_MAX)


def _check_agent_may_withdraw(
    conn: Conn,
    escalation: Escalation,
    response_type: str,
    held: Mapping[str, int] | None,
    agent_id: str | None,
) -> None:
    if not (response_type == "withdraw" and escalation.type == "ask_human"):
        raise Forbidden(
            f"response_type: this server runs in the agent role, which may only withdraw "
            f"its own ask_human question; {response_type!r} on a {escalation.type} "
            "escalation must come from a human operator (the CLI "
            "'mcp-server-escalation escalations respond' or a server started with --role operator)."
        )
    task = load_task(conn, escalation.task_id)
    # The agent named is the one start_task gave the task to: as much as the connection
    # proves (any caller may call start_task with that agent_id and so hold it).
    if agent_id is not None and agent_id == task.agent_id:
        return
    if held is not None and held.get(task.task_id) == task.generation:
        return
    how = (
        "this request came without an MCP session (sessionless HTTP), so it holds no task by its connection"
        if held is None
        else "this connection does not hold it (no start_task for it on this connection)"
    )
    raise Forbidden(
        f"escalation_id: escalation {escalation.escalation_id} is a question of task "
        f"{task.task_id!r}, and {how}: an agent withdraws only questions of a task it started, "
        "resumed or took over with start_task, on the same connection or naming the same "
        f"agent_id. If it is your task, call resolve_escalation again with agent_id set to the "
        f"agent_id you gave start_task, or call start_task(task_id={task.task_id!r}) first; "
        "otherwise a human operator answers it ('mcp-server-escalation escalations respond')."
    )


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
        proposed = _proposed_files(escalation)
        if new_file_limit is None and proposed:
            # Approving a file-limit escalation without a number admits exactly the files
            # that were proposed: the smallest change that lets the agent go on.
            new_file_limit = max(
                thresholds.files_modified_exceeds, task.counters.files_modified + len(proposed)
            )
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
