"""What reaches the agent: the answer it waits for and receives, and its acknowledgement.

``get_escalation`` waits (up to 60 s) for an answer, marks it delivered, and answers a poll
that finds nothing new in a few words; ``acknowledge_response`` confirms the agent read the
answer: the counters its triggers measured start again and the task resumes (or stays
terminated). A wait that times out is never an answer: the escalation stays pending.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio

from ..errors import Conflict, InvalidInput, NotFound
from ..models.escalations import Escalation, EscalationRef, EscalationResponse
from ..models.limits import ENDED_STATUSES, WAIT_MAX_SECONDS, Directive
from ..models.results import AcknowledgeResult, EscalationResult
from ..models.tasks import Task
from ..rules.decide.triggers import ack_resets, budget_resets
from ..store import escalation_lookups
from ..store import escalations as escalation_store
from ..store import progress as progress_store
from ..store import tasks as task_store
from ..store.sql import Conn
from .escalations import escalation_message, load_escalation
from .firing import direct, stop_if_ended, sync_pause
from .runtime import Runtime
from .tasks import load_task

# How often a waiting get_escalation looks at the store for an answer written by another
# process (the CLI, another server): well inside the 2 s in which an answer must reach the
# waiting agent (benchmarks/README.md); a local answer wakes it at once.
POLL_SECONDS = 0.2
PROGRESS_SECONDS = 1.0
# (seconds waited, the whole wait): told during a wait (adapters/mcp/waits.py)
WaitListener = Callable[[float, float], Awaitable[None]]


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
        state = await rt.db.read(lambda conn: escalation_lookups.response_state(conn, escalation_id))
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
    if wait_seconds > 0:
        # A wrong id or revision is refused at once, not after a minute's wait for it.
        current = await rt.db.read(lambda conn: escalation_lookups.get_ref(conn, escalation_id))
        _check_revision(_found(current, escalation_id), known_revision)
        await _wait_for_change(rt, escalation_id, wait_seconds, on_wait)
    now = rt.now()

    def work(conn: Conn) -> EscalationResult:
        # The escalation's row is read once: its short form answers a poll that finds nothing
        # new, the whole record is built from the same row, and delivering it revises that.
        named = _found(escalation_lookups.get_named(conn, escalation_id), escalation_id)
        _check_revision(named.ref, known_revision)
        if named.ref.revision == known_revision:
            return _unchanged(rt, conn, named.ref, named.task_id)
        escalation = named.whole()
        if deliver and escalation.response is not None and escalation.delivered_at is None:
            escalation = escalation_store.mark_delivered(conn, escalation, now)
        task = load_task(conn, escalation.task_id)
        directed = direct(rt, conn, task)
        message = escalation_message(rt, escalation, task, directed.message)
        return _whole(escalation, directed.directive, message, directed.holding)

    return await rt.db.write(work)


F = TypeVar("F")


def _found(found: F | None, escalation_id: int) -> F:
    """What was read of the escalation, or a NotFound naming the field."""
    if found is None:
        raise NotFound("escalation_id", escalation_id, "list_escalations shows the ids.")
    return found


def _check_revision(current: EscalationRef, known_revision: int | None) -> None:
    """An InvalidInput for a revision the escalation never had."""
    escalation_id = current.escalation_id
    if known_revision is not None and known_revision > current.revision:
        raise InvalidInput(
            "known_revision",
            f"{known_revision} is above escalation {escalation_id}'s revision {current.revision}; "
            "pass the revision of the last answer that held the record, or leave it out",
        )


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


def _unchanged(rt: Runtime, conn: Conn, named: EscalationRef, task_id: str) -> EscalationResult:
    """The compact answer of a poll that finds nothing new: status, revision, what to do."""
    escalation_id = named.escalation_id
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
    resets = ack_resets([trigger.type for trigger in escalation.triggers])
    resets.update(budget_resets([t.key for t in escalation.triggers], now))
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
