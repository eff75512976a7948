"""Attempt verdicts and escalation cycles (seed 000).

A rejected attempt may complete a stagnation: the step's last ``stagnation_patience``
rejected attempts of its current cycle, pairwise similar (``rules.similarity``). Then the
failure summary is stored as escalation feedback for the step and every upstream step
named, and the step's cycle goes up; all of it in the store, so the next agent (any
process) reconstructs it. Past ``max_escalation_cycles`` a human gets a ``stagnation``
escalation carrying the cycles' summaries (those that fired it and the latest since, as
``rules/evidence.py`` bounds a run; ``get_feedback`` shows every one).
"""

from __future__ import annotations

from ..models.feedback import Attempt, AttemptResult, Stagnation
from ..rules import triggers
from ..rules.evidence import RUN_READ, TEST_RUNS_SHOWN, latest_only
from ..rules.feedback import failure_summary
from ..rules.similarity import similar_run
from ..store import feedback as feedback_store
from ..store import progress as progress_store
from ..store import tasks as task_store
from ..store.db import Conn
from .budgets import budget_evidence, count_call
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
from .headlines import lead_with_latest_error
from .runtime import Runtime
from .tasks import load_task

HISTORY = 50


def _trailing_rejected(attempts: list[Attempt]) -> list[Attempt]:
    """The rejected attempts after the cycle's last accepted one."""
    run: list[Attempt] = []
    for attempt in reversed(attempts):
        if attempt.status != "rejected":
            break
        run.append(attempt)
    return list(reversed(run))


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
    now = rt.now()

    def work(conn: Conn) -> tuple[AttemptResult, Fired | None]:
        task = load_task(conn, task_id)
        cycle = feedback_store.current_cycle(conn, task_id, step)
        stop = stop_if_ended(rt, conn, task)
        if stop is not None:
            ended = AttemptResult(
                attempt_number=None, cycle=cycle, stagnation=None, escalation=None, **stop.model_dump()
            )
            return ended, None
        t = task.thresholds
        number = feedback_store.insert_attempt(
            conn,
            task,
            step=step,
            cycle=cycle,
            status=status,
            feedback=feedback,
            guard=guard,
            artifact=artifact,
            now=now,
        )
        counters = triggers.after_verification(task.counters, passed=status != "rejected")
        counters = count_call(counters)
        task_store.save_counters(conn, task_id, counters, now)
        progress_store.add_action(
            conn,
            task,
            "record_attempt",
            {"step": step, "attempt_number": number, "status": status, "guard": guard},
            now,
        )
        fired: list[Evidence] = []
        stagnation: Stagnation | None = None
        if status == "rejected":
            window = max(t.stagnation_patience * 4, HISTORY)
            recent = feedback_store.attempts(conn, task_id, step, cycle=cycle, limit=window)
            rejected = _trailing_rejected(recent)
            similar = similar_run(
                [a.feedback for a in rejected], t.stagnation_patience, t.stagnation_similarity
            )
            if similar:
                stagnation = _start_cycle(
                    rt, conn, task_id, step, cycle, rejected[-similar:], upstream or [], now
                )
                human = triggers.stagnation(cycle, t, step=step, similar_count=similar)
                if human is not None:
                    stagnation = stagnation.model_copy(update={"human_escalation": True})
                    cycles = [
                        c for c in feedback_store.cycle_feedback(conn, task_id, step) if c.source_step == step
                    ]
                    fired.append(
                        Evidence(
                            human,
                            rt.prompts.render(
                                "trigger_stagnation",
                                step=step,
                                cycles=cycle,
                                max_cycles=t.max_escalation_cycles,
                            ),
                            {"step": step},
                            key=f"stagnation:{step}",
                            run=Run(
                                "cycle_summaries", [c.model_dump() for c in cycles[-RUN_READ:]], len(cycles)
                            ),
                        )
                    )
        limit = triggers.verification_limit(counters, t)
        if limit is not None:
            history = feedback_store.attempts(conn, task_id, step, limit=RUN_READ)
            runs = progress_store.list_test_runs(conn, task_id, TEST_RUNS_SHOWN)
            fired.append(
                Evidence(
                    limit,
                    lead_with_latest_error(
                        rt,
                        conn,
                        task.task_id,
                        "trigger_verification_limit",
                        count=counters.verification_attempts,
                        threshold=t.total_verification_attempts,
                    ),
                    {
                        "attempts": latest_only(
                            [a.model_dump(exclude={"artifact"}) for a in history], RUN_READ
                        ),
                        "test_runs": [r.model_dump() for r in runs],
                    },
                )
            )
        fired.extend(budget_evidence(rt, conn, task, counters, now))
        changed = fire(rt, conn, task, fired)
        task = current_task(conn, task, changed, counters=counters)
        if stagnation is not None and not stagnation.human_escalation:
            template, values = (
                "message_stagnation_cycle",
                {
                    "task_id": task_id,
                    "step": step,
                    "cycle": stagnation.new_cycle,
                    "escalated_to": ", ".join(stagnation.escalated_to),
                },
            )
        elif status == "rejected":
            template, values = (
                "message_attempt_recorded",
                {
                    "task_id": task_id,
                    "step": step,
                    "attempt_number": number,
                    "cycle": cycle,
                },
            )
        else:
            template, values = (
                "message_attempt_accepted",
                {
                    "task_id": task_id,
                    "step": step,
                    "attempt_number": number,
                },
            )
        directed = direct(rt, conn, task, template, **values)
        keep_told_if_created(rt, conn, changed, directed)
        result = AttemptResult(
            attempt_number=number,
            cycle=cycle,
            stagnation=stagnation,
            escalation=changed.shown if changed else None,
            **directed.model_dump(),
        )
        return result, changed

    result, changed = await rt.db.write(work)
    await publish_fired(rt, changed)
    return result


def _start_cycle(
    rt: Runtime,
    conn: Conn,
    task_id: str,
    step: str,
    cycle: int,
    group: list[Attempt],
    upstream: list[str],
    now: str,
) -> Stagnation:
    summary = failure_summary(rt.prompts, step, cycle, group)
    targets = [step, *[u for u in dict.fromkeys(upstream) if u != step]]
    for target in targets:
        feedback_store.add_cycle_feedback(
            conn,
            task_id,
            step=target,
            source_step=step,
            source_cycle=cycle,
            summary=summary,
            now=now,
        )
    return Stagnation(
        similar_count=len(group),
        failure_summary=summary,
        escalated_to=targets,
        new_cycle=cycle + 1,
        human_escalation=False,
    )
