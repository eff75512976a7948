"""Turning fired triggers into escalations, and keeping the task's pause in step.

Used inside the caller's write transaction, so the counters that fired a trigger and the
escalation it created commit together or not at all.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Concatenate, ParamSpec, TypeAlias, TypeVar

from ..models.escalations import Escalation, Trigger
from ..models.limits import ENDED_STATUSES
from ..models.results import Directed
from ..models.tasks import Task
from ..rules.bounds.evidence import clip, recent_summaries, refreshed_run, scope_shown, stored_summary
from ..rules.decide.triggers import Firing, response_options
from ..rules.wording.directives import decide
from ..store import escalation_lookups
from ..store import escalations as escalation_store
from ..store import progress as progress_store
from ..store import tasks as task_store
from ..store.sql import Conn
from .runtime import Runtime

# The latest actions an escalation shows, as bounded summaries (rules/bounds/evidence.py); the
# task's history keeps them all, whole. Ten is what `escalations show` prints; twenty
# identical record_failure entries were most of a stuck agent's escalation.
RECENT_ACTIONS = 10
# What is kept of the message an escalation's agent was told when it fired: a message is a
# sentence or two and a headline (500 characters); a longer one is clipped in the middle.
TOLD_MESSAGE_CHARS = 4000


@dataclass(frozen=True)
class Run:
    """The growing history behind a trigger (occurrences of an error, attempts without a
    change): the field of the evidence that shows it, its latest items, and its count."""

    field: str
    latest: list[dict[str, Any]]
    count: int


@dataclass(frozen=True)
class Evidence:
    """A fired trigger with the facts an operator needs to judge it.

    ``key`` tells triggers of one type apart: two different errors that each repeat are two
    triggers with their own occurrences, never one overwriting the other. It is also where
    the facts live: ``context.evidence[key]``, once per trigger (the trigger itself refers
    to them by its key). ``run``, when the trigger measures a run that keeps growing, is
    folded into bounded evidence (``rules/bounds/evidence.py``).
    """

    firing: Firing
    summary: str
    facts: dict[str, Any]
    key: str = ""
    run: Run | None = None

    @property
    def identity(self) -> str:
        """The trigger's identity within an escalation."""
        return self.key or self.firing.type

    def facts_after(self, previous: dict[str, Any] | None) -> dict[str, Any]:
        """The facts to store, given this trigger's facts already on the open escalation."""
        if self.run is None:
            return self.facts
        before = (previous or {}).get(self.run.field)
        return {**self.facts, self.run.field: refreshed_run(before, self.run.latest, self.run.count)}

    def trigger(self, now: str) -> Trigger:
        """A new trigger record for this firing."""
        return Trigger(
            type=self.firing.type,
            criteria=self.firing.criteria,
            observed=self.firing.observed,
            summary=self.summary,
            at=now,
            key=self.identity,
        )


@dataclass(frozen=True)
class Fired:
    """What a call's triggers did to the task's open escalation.

    ``news``: the call created the escalation or added a trigger to it, so the agent should
    read it whole; a repeat that only refreshed a trigger is no news. ``created``: the call
    created it (what the call tells its agent is then kept: ``keep_told``). ``task``: the
    task as the firing left it, so the call need not read it again.
    """

    escalation: Escalation
    news: bool
    task: Task
    created: bool = False

    @property
    def shown(self) -> Escalation | None:
        """The escalation as the call's result carries it: whole when it is news, else null."""
        return self.escalation if self.news else None


def task_context(task: Task) -> dict[str, Any]:
    """The task as an escalation shows it: its texts clipped and the first globs of its
    scope, so a task at its input limits (a 64 KB specification, 500 globs) still makes an
    escalation a model can read; ``task://{task_id}`` shows it whole."""
    return {
        "task_id": task.task_id,
        "title": clip(task.title),
        "specification": clip(task.specification),
        "scope": scope_shown(task.scope),
        "scope_count": len(task.scope),
        "project": task.project,
        "agent_id": task.agent_id,
        "status": task.status,
        "approach": task.approach,
        "thresholds": task.thresholds.model_dump(),
    }


def recent_actions(conn: Conn, task_id: str) -> list[dict[str, Any]]:
    """The task's latest actions as an escalation shows them: summaries, bounded each and in all."""
    return recent_summaries(progress_store.recent_action_rows(conn, task_id, RECENT_ACTIONS), stored_summary)


def escalation_context(conn: Conn, task: Task, evidence: dict[str, Any]) -> dict[str, Any]:
    """An escalation's context: the task, its counters, its latest actions and the evidence."""
    return {
        "task": task_context(task),
        "counters": task.counters.model_dump(),
        "recent_actions": recent_actions(conn, task.task_id),
        "evidence": evidence,
    }


def fire(
    rt: Runtime, conn: Conn, task: Task, fired: list[Evidence], *, task_is_current: bool = False
) -> Fired | None:
    """One escalation for every trigger of this call, or the additions to the open one.

    A trigger already on the open escalation (same key) refreshes its measurement and
    evidence and counts ``fired_count`` instead of piling up duplicates; any other trigger
    is appended with its own evidence. Each trigger's facts are ``context.evidence[key]``.
    ``task`` is read again, with this call's writes, unless ``task_is_current`` says the
    caller already keeps it in step with them; ``Fired.task`` is the task the firing leaves.
    """
    if not fired:
        return None
    now = rt.now()
    if not task_is_current:
        task = task_store.get(conn, task.task_id) or task
    open_escalation = escalation_lookups.open_triggered(conn, task.task_id)
    if open_escalation is None:
        escalation_id, news = _open(conn, task, fired, now), True
        escalation = escalation_store.get(conn, escalation_id)
        if escalation is None:
            raise RuntimeError(f"escalation {escalation_id} vanished inside its own transaction")
    else:
        # The open escalation was read (and locked) once; its revision is built from that
        # reading rather than read and parsed again (the stuck agent's path, every repeat).
        escalation, news = _add(conn, task, open_escalation, fired, now)
    held = _held(rt, conn, task, escalation)
    return Fired(escalation, news, held, created=open_escalation is None)


def _open(conn: Conn, task: Task, fired: list[Evidence], now: str) -> int:
    """A new escalation with every trigger of this call; its id."""
    triggers = [e.trigger(now) for e in _unique(fired)]
    evidence: dict[str, Any] = {e.identity: e.facts_after(None) for e in _unique(fired)}
    escalation_id = escalation_store.insert(
        conn,
        task_id=task.task_id,
        agent_id=task.agent_id,
        generation=task.generation,
        type_=triggers[0].type,
        priority=_priority(fired),
        blocking=True,
        triggers=triggers,
        response_options=response_options([t.type for t in triggers]),
        context=escalation_context(conn, task, evidence),
        reason=None,
        question=None,
        options=[],
        follow_up_of=None,
        now=now,
    )
    detail = {"escalation_id": escalation_id, "triggers": [t.type for t in triggers]}
    progress_store.add_action(conn, task, "escalation_created", detail, now)
    return escalation_id


def _add(
    conn: Conn, task: Task, open_escalation: Escalation, fired: list[Evidence], now: str
) -> tuple[Escalation, bool]:
    """This call's triggers added to (or refreshed on) the open escalation; the escalation
    as stored now, and whether a trigger was new to it."""
    triggers, evidence, news = _merged(open_escalation, _unique(fired), now)
    priority = "high" if open_escalation.priority == "high" else _priority(fired)
    if news:
        context = escalation_context(conn, task, evidence)
    else:
        context = _refreshed(open_escalation, task, evidence)
    return escalation_store.revise_triggers(
        conn,
        open_escalation,
        triggers=triggers,
        priority=priority,
        context=context,
        response_options=response_options([t.type for t in triggers]),
        now=now,
        as_read=news,
    ), news


def _refreshed(open_escalation: Escalation, task: Task, evidence: dict[str, Any]) -> dict[str, Any]:
    """The context after triggers already on the escalation fired again: their evidence and
    the counters refreshed, the task and its actions as they were when the escalation fired
    or last gained a trigger. A stuck agent's repeats are counted in the evidence; as recent
    actions they would only push out the actions that led up to the escalation (and
    rebuilding them was a fifth of every repeat, ``benchmarks/bench_user_paths.py``)."""
    return {**open_escalation.context, "counters": task.counters.model_dump(), "evidence": evidence}


def _merged(
    open_escalation: Escalation, fired: list[Evidence], now: str
) -> tuple[list[Trigger], dict[str, Any], bool]:
    """The open escalation's triggers and evidence with this call's folded in, and whether
    one of them was new to it."""
    triggers = list(open_escalation.triggers)
    # Facts under a key no trigger has are dropped: an escalation stored before evidence
    # was bounded and keyed by trigger held it per type, and grew with every repeat.
    keys = {t.key or t.type for t in triggers}
    evidence = {k: v for k, v in open_escalation.context.get("evidence", {}).items() if k in keys}
    news = False
    for e in fired:
        index = next((i for i, t in enumerate(triggers) if (t.key or t.type) == e.identity), None)
        if index is None:
            triggers.append(e.trigger(now))
            news = True
        else:
            old = triggers[index]
            triggers[index] = old.model_copy(
                update={
                    "observed": e.firing.observed,
                    "summary": e.summary,
                    "at": now,
                    "fired_count": old.fired_count + 1,
                }
            )
        evidence[e.identity] = e.facts_after(evidence.get(e.identity))
    return triggers, evidence, news


def _held(rt: Runtime, conn: Conn, task: Task, escalation: Escalation) -> Task:
    """The task as the escalation just fired leaves it: ``sync_pause`` without its reads.

    The fired escalation is pending, and blocking (``_open`` makes every one so), so it
    holds the task: a live task is paused, and nothing else need be read to know it.
    """
    if not escalation.blocking:
        return sync_pause(rt, conn, task.task_id)
    if task.status in ENDED_STATUSES or task.status == "paused":
        return task
    now = rt.now()
    task_store.set_status(conn, task.task_id, "paused", now)
    return task.model_copy(update={"status": "paused", "updated_at": now})


def _unique(fired: list[Evidence]) -> list[Evidence]:
    seen: set[str] = set()
    unique: list[Evidence] = []
    for e in fired:
        if e.identity not in seen:
            seen.add(e.identity)
            unique.append(e)
    return unique


def _priority(fired: list[Evidence]) -> str:
    return "high" if any(e.firing.priority == "high" for e in fired) else "normal"


def current_task(conn: Conn, task: Task, fired: Fired | None, **changes: Any) -> Task:
    """The task after this call: reloaded when an escalation changed it, else ``task`` with
    the ``changes`` this call made (saves a read on the hot path of every tool call)."""
    if fired is None:
        return task.model_copy(update=changes) if changes else task
    fresh = task_store.get(conn, task.task_id)
    if fresh is None:
        raise RuntimeError(f"task {task.task_id} vanished inside its own transaction")
    return fresh


def sync_pause(rt: Runtime, conn: Conn, task_id: str) -> Task:
    """A live task is ``paused`` exactly while a blocking escalation holds it."""
    task = task_store.get(conn, task_id)
    if task is None:
        raise RuntimeError(f"task {task_id} vanished inside its own transaction")
    if task.status in ENDED_STATUSES:
        return task
    holding = escalation_lookups.holding(conn, task_id)
    wanted = "paused" if holding is not None else "active"
    if task.status != wanted:
        task_store.set_status(conn, task_id, wanted, rt.now())
        task = task.model_copy(update={"status": wanted})
    return task


def direct(
    rt: Runtime,
    conn: Conn,
    task: Task,
    proceed_template: str | None = None,
    **values: Any,
) -> Directed:
    """The directive for the task now, worded from prompts/.

    When the task may proceed and the caller has a more specific message (``proceed_template``
    with its ``values``), that message is used instead of the generic one.
    """
    holding = escalation_lookups.holding(conn, task.task_id)
    decision = decide(task, holding)
    if decision.directive == "proceed" and proceed_template is not None:
        return Directed(directive="proceed", message=rt.prompts.render(proceed_template, **values))
    return Directed(
        directive=decision.directive,
        message=rt.prompts.render(decision.template, **decision.values),
        holding=holding if decision.directive == "pause" else None,
    )


def keep_told(rt: Runtime, conn: Conn, escalation_id: int, directed: Directed) -> None:
    """Keep what the call that created the escalation tells its agent (the console shows it)."""
    message = clip(directed.message, TOLD_MESSAGE_CHARS)
    escalation_store.record_told_agent(conn, escalation_id, directed.directive, message, rt.now())


def keep_told_if_created(rt: Runtime, conn: Conn, fired: Fired | None, directed: Directed) -> None:
    """``keep_told`` when this call's triggers created the escalation; a later call tells
    its agent other things, and they are not what it was told when the escalation fired."""
    if fired is not None and fired.created:
        keep_told(rt, conn, fired.escalation.escalation_id, directed)


def stop_if_ended(rt: Runtime, conn: Conn, task: Task) -> Directed | None:
    """The ``stop`` directive of a task that ended, else None.

    A write on an ended task returns this in a normal result and stores nothing: a model
    reads an error as a call to retry differently, and this one must not be retried at all.
    """
    if task.status not in ENDED_STATUSES:
        return None
    return direct(rt, conn, task)


async def publish_fired(rt: Runtime, fired: Fired | None) -> None:
    """Announce an escalation a trigger created (revision 1) or added a trigger to, after the
    commit. A repeat that only refreshed a trigger is left to the change feed's next poll
    (``services/changes.py``): a stuck agent's every call woke the feed to read back the
    change it had just written, for clients that its result already told."""
    if fired is not None and fired.news:
        escalation = fired.escalation
        await rt.publish(escalation, "created" if escalation.revision == 1 else "updated")


T = TypeVar("T")
P = ParamSpec("P")
# A call's whole write, as one synchronous body: its result and what its triggers fired.
# Built before the transaction (validation, classification), run inside one, so a hook can
# run it in the same transaction as the claim of the event it records (services/hooks.py).
Recording: TypeAlias = Callable[[Conn], tuple[T, Fired | None]]


def committed(
    build: Callable[Concatenate[Runtime, P], Recording[T]],
) -> Callable[Concatenate[Runtime, P], Coroutine[Any, Any, T]]:
    """The call that runs ``build``'s recording in its own transaction and then announces it."""

    async def call(rt: Runtime, /, *args: P.args, **kwargs: P.kwargs) -> T:
        result, fired = await rt.db.write(build(rt, *args, **kwargs))
        await publish_fired(rt, fired)
        return result

    call.__doc__ = build.__doc__
    return call
