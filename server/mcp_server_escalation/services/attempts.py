"""Attempt verdicts and escalation cycles: the store's side of ``rules.decide.attempts``.

``record_attempt`` reads what the rules need (the task, the step's cycle and its latest
attempts), asks ``rules.decide.attempts.decide`` what follows, and writes that: the attempt, the
counters, a new cycle's summary for the step and every upstream step named, and the
escalation its triggers fire, all in one transaction, so the next agent (any process)
reconstructs it. A stagnation that goes to a human carries the cycles' summaries (those
that fired it and the latest since, as ``rules/bounds/evidence.py`` bounds a run;
``get_feedback`` shows every one).
"""

from __future__ import annotations

from ..models.feedback import Attempt, AttemptResult, Stagnation
from ..models.tasks import Task
from ..rules.bounds.evidence import RUN_READ, TEST_RUNS_SHOWN, latest_only
from ..rules.decide.attempts import AttemptDecision, CycleStart, Verdict, decide, stagnation_window
from ..rules.decide.decisions import Fires
from ..rules.guidance.feedback import failure_summary
from ..store import feedback as feedback_store
from ..store import progress as progress_store
from ..store import tasks as task_store
from ..store.sql import Conn
from .budgets import budget_evidence
from .firing import (
    Evidence,
    Fired,
    Run,
    current_task,
    direct,
    fire,
    keep_told_if_created,
    publish_fired,
    stop_if_ended,
)
from .gathering import gatherer
from .headlines import lead_with_latest_error
from .runtime import Runtime
from .tasks import load_task


async def record_attempt(
    rt: Runtime,
    *,
    task_id: str,
    step: str,
    status: str,
    feedback: str = "",
    guard: str | None = None,
    artifact: str | None = None,
    upstream: list[str] | None = None,
) -> AttemptResult:
    """Store a verdict; a rejected one may start an escalation cycle or reach a human."""
    verdict = Verdict(task_id, step, status, tuple(upstream or ()))
    now = rt.now()

    def work(conn: Conn) -> tuple[AttemptResult, Fired | None]:
        return _record(rt, conn, verdict, feedback=feedback, guard=guard, artifact=artifact, now=now)

    result, changed = await rt.db.write(work)
    await publish_fired(rt, changed)
    return result


def _record(
    rt: Runtime,
    conn: Conn,
    verdict: Verdict,
    *,
    feedback: str,
    guard: str | None,
    artifact: str | None,
    now: str,
) -> tuple[AttemptResult, Fired | None]:
    """Read, decide, write, fire, direct: the whole of one verdict, inside its transaction."""
    task = load_task(conn, verdict.task_id)
    cycle = feedback_store.current_cycle(conn, verdict.task_id, verdict.step)
    stop = stop_if_ended(rt, conn, task)
    if stop is not None:
        ended = AttemptResult(
            attempt_number=None, cycle=cycle, stagnation=None, escalation=None, **stop.model_dump()
        )
        return ended, None
    number = feedback_store.insert_attempt(
        conn,
        task,
        step=verdict.step,
        cycle=cycle,
        status=verdict.status,
        feedback=feedback,
        guard=guard,
        artifact=artifact,
        now=now,
    )
    decision = decide(
        verdict,
        attempt_number=number,
        cycle=cycle,
        counters=task.counters,
        thresholds=task.thresholds,
        recent=_cycle_attempts(conn, task, verdict, cycle),
    )
    task_store.save_counters(conn, verdict.task_id, decision.counters, now)
    action = {"step": verdict.step, "attempt_number": number, "status": verdict.status, "guard": guard}
    progress_store.add_action(conn, task, "record_attempt", action, now)
    stagnation = _start_cycle(rt, conn, verdict, cycle, decision, now)
    changed = fire(rt, conn, task, _evidence(rt, conn, task, verdict.step, decision, now))
    task = current_task(conn, task, changed, counters=decision.counters)
    directed = direct(rt, conn, task, decision.message.template, **decision.message.values)
    keep_told_if_created(rt, conn, changed, directed)
    shown = changed.shown if changed else None
    result = AttemptResult(
        attempt_number=number, cycle=cycle, stagnation=stagnation, escalation=shown, **directed.model_dump()
    )
    return result, changed


def _cycle_attempts(conn: Conn, task: Task, verdict: Verdict, cycle: int) -> list[Attempt]:
    """The cycle's latest attempts a rejection is judged by; an accepted verdict needs none."""
    if not verdict.rejected:
        return []
    window = stagnation_window(task.thresholds)
    return feedback_store.attempts(conn, task.task_id, verdict.step, cycle=cycle, limit=window)


def _start_cycle(
    rt: Runtime, conn: Conn, verdict: Verdict, cycle: int, decision: AttemptDecision, now: str
) -> Stagnation | None:
    """The failure summary of a stagnation, stored for every step it goes to."""
    start: CycleStart | None = decision.cycle_start
    if start is None:
        return None
    summary = failure_summary(rt.prompts, verdict.step, cycle, list(start.similar))
    for target in start.targets:
        feedback_store.add_cycle_feedback(
            conn,
            verdict.task_id,
            step=target,
            source_step=verdict.step,
            source_cycle=cycle,
            summary=summary,
            now=now,
        )
    return Stagnation(
        similar_count=len(start.similar),
        failure_summary=summary,
        escalated_to=list(start.targets),
        new_cycle=start.new_cycle,
        human_escalation=decision.stagnation is not None,
    )


def _evidence(
    rt: Runtime, conn: Conn, task: Task, step: str, decision: AttemptDecision, now: str
) -> list[Evidence]:
    """What an operator needs to judge each trigger the verdict fired, read after its writes."""
    fired: list[Evidence] = []
    if decision.stagnation is not None:
        fired.append(_stagnation_evidence(rt, conn, task, step, decision.stagnation))
    if decision.verification_limit is not None:
        fired.append(_verification_evidence(rt, conn, task, step, decision.verification_limit))
    fired.extend(budget_evidence(rt, conn, task, decision.counters, now))
    return fired


@gatherer("cycle summaries")
def _stagnation_evidence(rt: Runtime, conn: Conn, task: Task, step: str, fires: Fires) -> Evidence:
    """The step's cycle summaries (the one just stored included) as a run."""
    cycles = [c for c in feedback_store.cycle_feedback(conn, task.task_id, step) if c.source_step == step]
    run = Run("cycle_summaries", [c.model_dump() for c in cycles[-RUN_READ:]], len(cycles))
    summary = rt.prompts.render(fires.summary.template, **fires.summary.values)
    return Evidence(fires.firing, summary, {"step": step}, key=fires.key, run=run)


def _verification_evidence(rt: Runtime, conn: Conn, task: Task, step: str, fires: Fires) -> Evidence:
    """The step's latest attempts and the task's latest test runs, led by its latest error.

    A verdict's own evidence of the verification limit, beside the record's (the test runs'
    history a report gathers): the CLI and the console show it as labelled lines."""
    history = feedback_store.attempts(conn, task.task_id, step, limit=RUN_READ)
    runs = progress_store.list_test_runs(conn, task.task_id, TEST_RUNS_SHOWN)
    summary = lead_with_latest_error(rt, conn, task.task_id, fires.summary.template, **fires.summary.values)
    facts = {
        "attempts": latest_only([a.model_dump(exclude={"artifact"}) for a in history], RUN_READ),
        "test_runs": [r.model_dump() for r in runs],
    }
    return Evidence(fires.firing, summary, facts, key=fires.key)
