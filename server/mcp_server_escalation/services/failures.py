"""Failures: the store's side of ``rules.decide.failures``.

``record_failure`` classifies and fingerprints the report before its transaction
(``rules.decide.failures.classify_report``), then inside it reads the task once, stores the
occurrence, asks ``rules.decide.failures.decide`` what follows, and writes that: the counters, the
task's action, the evidence of each trigger that fires (read after the writes, so it shows
this occurrence) and the escalation they fire. The task row and the open escalation are
each read once in the call: the task, as this call's writes leave it, is passed down to
``fire`` and ``direct`` rather than read again.
"""

from __future__ import annotations

from ..errors import InvalidInput
from ..models.failures import FailureReport
from ..models.results import FailureSummary, RecordFailureResult
from ..models.tasks import Task
from ..rules.bounds.evidence import RUN_READ, clip_texts
from ..rules.bounds.token_scope import Scope
from ..rules.decide.decisions import Fires
from ..rules.decide.failures import Classified, FailureDecision, Warned, classify_report, decide
from ..rules.decide.paths import normalise_path
from ..rules.reading.pointers import pointer_problem
from ..rules.reading.salient import headline, one_line
from ..store import failures as failure_store
from ..store import progress as progress_store
from ..store import tasks as task_store
from ..store.sql import Conn
from .budgets import budget_evidence
from .firing import (
    Evidence,
    Fired,
    Recording,
    Run,
    committed,
    direct,
    fire,
    keep_told_if_created,
    stop_if_ended,
)
from .gathering import gatherer
from .guidance import build_guidance
from .runtime import Runtime
from .tasks import load_task


def failure_recording(
    rt: Runtime, report: FailureReport, *, grace_calls: int = 0, within: Scope | None = None
) -> Recording[RecordFailureResult]:
    """Store one failure occurrence and fire whatever trigger it completes.

    The recording, to run in a transaction (``record_failure`` runs it in its own).
    ``grace_calls``: the host hooks' grace for repeated errors (``rules.decide.failures.decide``);
    ``within``: a scoped token's, whose warning names only fixes of tasks it may see."""
    problem = pointer_problem(report.context_refs)
    if problem is not None:
        raise InvalidInput("context_refs", problem)
    failure = classify_report(report, rt.patterns)
    now = rt.now()

    def work(conn: Conn) -> tuple[RecordFailureResult, Fired | None]:
        return _record(rt, conn, report, failure, now, grace_calls, within)

    return work


record_failure = committed(failure_recording)


def _record(
    rt: Runtime,
    conn: Conn,
    report: FailureReport,
    failure: Classified,
    now: str,
    grace_calls: int,
    within: Scope | None,
) -> tuple[RecordFailureResult, Fired | None]:
    """Read, store, decide, write, fire, direct: the whole of one failure, inside its transaction."""
    task = load_task(conn, report.task_id)
    stop = stop_if_ended(rt, conn, task)
    if stop is not None:
        return RecordFailureResult(failure=None, escalation=None, **stop.model_dump()), None
    decided = _as_decided(report, failure, task.project)
    record = failure_store.record_occurrence(conn, new_failure(decided, failure, task), now)
    decision = decide(
        decided,
        failure,
        occurrences=record.occurrence_count,
        counters=task.counters,
        thresholds=task.thresholds,
        grace_calls=grace_calls,
    )
    task_store.save_counters(conn, task.task_id, decision.counters, now)
    action = {
        "failure_id": record.failure_id,
        "signal_type": failure.signal_type,
        "file": decided.file,
        "line": decided.line,
        "attempted_action": decided.attempted_action,
    }
    progress_store.add_action(conn, task, "record_failure", action, now)
    task = task.model_copy(update={"counters": decision.counters, "updated_at": now})
    fired = _evidence(rt, conn, task, decided, failure, record, decision, now)
    warned = None if fired else decision.warning  # it goes to a human now: no warning that it soon will
    warning = _repeat_warning(rt, conn, task, record, decided.message, warned, within)
    changed = fire(rt, conn, task, fired, task_is_current=True)
    task = changed.task if changed else task
    directed = direct(rt, conn, task, decision.message.template, **decision.message.values)
    keep_told_if_created(rt, conn, changed, directed)
    result = RecordFailureResult(
        failure=_summary(failure, record, decision),
        escalation=changed.shown if changed else None,
        warning=warning,
        **directed.model_dump(),
    )
    return result, changed


def _as_decided(report: FailureReport, failure: Classified, project: str) -> FailureReport:
    """The report as stored: its signal type, severity and details chosen, its file
    relative to the task's project."""
    where = normalise_path(report.file, project).path if report.file else None
    return report.model_copy(
        update={
            "signal_type": failure.signal_type,
            "severity": failure.severity,
            "details": failure.details,
            "file": where,
        }
    )


def new_failure(decided: FailureReport, failure: Classified, task: Task) -> failure_store.NewFailure:
    """The store's new occurrence of a classified report on ``task``."""
    return failure_store.NewFailure(
        report=decided,
        project=task.project,
        generation=task.generation,
        agent_id=task.agent_id,
        classified_by=failure.classified_by,
        fingerprint=failure.fingerprint,
    )


def _summary(failure: Classified, record: failure_store.Counted, decision: FailureDecision) -> FailureSummary:
    return FailureSummary(
        failure_id=record.failure_id,
        fingerprint=failure.fingerprint,
        signal_type=failure.signal_type,
        classified_by=failure.classified_by,
        severity=record.severity,
        occurrence_count=record.occurrence_count,
        consecutive_count=decision.counters.consecutive_same_error,
        status=record.status,
        details=failure.details,
    )


def _evidence(
    rt: Runtime,
    conn: Conn,
    task: Task,
    decided: FailureReport,
    failure: Classified,
    record: failure_store.Counted,
    decision: FailureDecision,
    now: str,
) -> list[Evidence]:
    """What an operator needs to judge each trigger the failure fired, read after its writes."""
    fired: list[Evidence] = []
    if decision.blocker is not None:
        fired.append(_blocker_evidence(rt, decided, record, decision.blocker, now))
    if decision.repeated is not None:
        count = decision.counters.consecutive_same_error
        fired.append(_repeat_evidence(rt, conn, decision.repeated, record, failure.fingerprint, count, now))
    fired.extend(budget_evidence(rt, conn, task, decision.counters, now))
    return fired


@gatherer("blocker")
def _blocker_evidence(
    rt: Runtime, decided: FailureReport, record: failure_store.Counted, fires: Fires, now: str
) -> Evidence:
    """The blocker's own facts, and where and when it happened."""
    facts = {
        "signal_type": decided.signal_type,
        "details": decided.details,
        "message": decided.message,
        "file": decided.file,
        "line": decided.line,
        "attempted_action": decided.attempted_action,
        "at": now,
        "failure_id": record.failure_id,
    }
    summary = rt.prompts.render(fires.summary.template, **fires.summary.values)
    return Evidence(fires.firing, summary, clip_texts(facts), key=fires.key)


# A warning names at most this many of the latest tries and past fixes, each clipped.
WARNING_ITEMS = 3
WARNING_ITEM_CHARS = 160


def _repeat_warning(
    rt: Runtime,
    conn: Conn,
    task: Task,
    record: failure_store.Counted,
    message: str,
    warned: Warned | None,
    within: Scope | None,
) -> str | None:
    """What the model is told a step before the same error pages a human (bounded)."""
    if warned is None:
        return None
    latest = failure_store.recent_occurrences(conn, record.failure_id, WARNING_ITEMS)
    actions = dict.fromkeys(o.attempted_action for o in latest if o.attempted_action)
    tries = ", ".join(
        rt.prompts.render("warning_try", action=one_line(a, WARNING_ITEM_CHARS)) for a in actions
    )
    past = build_guidance(
        rt,
        conn,
        task_id=task.task_id,
        query=message,
        step=None,
        k=WARNING_ITEMS * 2,
        scope="project",
        project=task.project,
        within=within,
    )
    fixes = [i for i in past.items if i.recommended_adjustment][:WARNING_ITEMS]
    guidance = " ".join(
        rt.prompts.render(
            "warning_guidance",
            adjustment=one_line(i.recommended_adjustment or "", WARNING_ITEM_CHARS),
            failure_id=i.failure_id,
        )
        for i in fixes
    ) or rt.prompts.render("warning_no_guidance")
    said = {"count": warned.count, "error": headline(message), "tries": tries or "-", "guidance": guidance}
    if warned.grace:
        return rt.prompts.render("warning_repeated_error_grace", grace=warned.grace, **said)
    return rt.prompts.render("warning_repeated_error", threshold=warned.allowance, **said)


@gatherer("occurrences")
def _repeat_evidence(
    rt: Runtime,
    conn: Conn,
    fires: Fires,
    record: failure_store.Counted,
    fingerprint: str,
    consecutive: int,
    now: str,
) -> Evidence:
    """The evidence of an error repeated in a row: bounded, however long the run.

    Only the latest few occurrences are read (``RUN_READ``); the ones that fired the trigger
    stay on the escalation from its first firing, and ``failure://`` shows the rest.
    """
    latest = failure_store.recent_occurrences(conn, record.failure_id, min(consecutive, RUN_READ))
    facts = {
        "failure_id": record.failure_id,
        "fingerprint": fingerprint,
        "occurrence_count": record.occurrence_count,
        "first_seen_at": failure_store.first_seen_at(conn, record.seq),
        "last_seen_at": now,
        "all_occurrences": f"failure://{record.failure_id}",
    }
    summary = rt.prompts.render(fires.summary.template, **fires.summary.values)
    run = Run("occurrences", [o.model_dump() for o in latest], consecutive)
    return Evidence(fires.firing, summary, facts, key=fires.key, run=run)
