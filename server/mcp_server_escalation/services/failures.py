"""Recording failures: classify, fingerprint, count, and escalate by the rules."""

from __future__ import annotations

from typing import Any

from ..errors import InvalidInput
from ..models.failures import FailureReport
from ..models.limits import BLOCKER_SIGNALS
from ..models.results import FailureSummary, RecordFailureResult
from ..models.tasks import Task
from ..rules import triggers
from ..rules.classify import classify, extract_details
from ..rules.evidence import RUN_READ, clip_texts
from ..rules.fingerprint import fingerprint
from ..rules.paths import normalise_path
from ..rules.pointers import pointer_problem
from ..rules.salient import headline, one_line
from ..rules.shell_work import operation_key
from ..store import failures as failure_store
from ..store import progress as progress_store
from ..store import tasks as task_store
from ..store.db import Conn
from .budgets import budget_evidence, count_call
from .firing import (
    Evidence,
    Fired,
    Recording,
    Run,
    committed,
    current_task,
    direct,
    fire,
    keep_told_if_created,
    stop_if_ended,
)
from .guidance import build_guidance
from .runtime import Runtime
from .tasks import load_task

# Severity when the caller gives none: a blocker needs a human, a transient error is
# expected now and then, everything else is an ordinary failure.
DEFAULT_SEVERITY: dict[str, str] = {
    "missing_dependency": "high",
    "permission_denied": "high",
    "api_unavailable": "high",
    "network_transient": "low",
}


def blocker_subject(signal_type: str, details: dict[str, Any], message: str) -> str:
    """The thing an operator must fix, in the words of the blocker's own facts."""
    if signal_type == "missing_dependency" and details.get("dependency"):
        version = f"@{details['version']}" if details.get("version") else ""
        return f"{details['dependency']}{version}"
    if signal_type == "permission_denied" and details.get("resource"):
        operation = f" ({details['operation']})" if details.get("operation") else ""
        return f"{details['resource']}{operation}"
    if details.get("endpoint") or details.get("status_code"):
        status = f" HTTP {details['status_code']}" if details.get("status_code") else ""
        return f"{details.get('endpoint', '')}{status}".strip()
    return headline(message)


def failure_recording(rt: Runtime, report: FailureReport) -> Recording[RecordFailureResult]:
    """Store one failure occurrence and fire whatever trigger it completes.

    The recording, to run in a transaction (``record_failure`` runs it in its own)."""
    problem = pointer_problem(report.context_refs)
    if problem is not None:
        raise InvalidInput("context_refs", problem)
    message, attempted_action, line = report.message, report.attempted_action, report.line
    given = {k: v for k, v in report.details.items() if v is not None}
    if report.signal_type is None:
        chosen = classify(message, rt.patterns, error_type=report.error_type, tool_name=report.tool_name)
        signal, classified_by = chosen.signal_type, chosen.rule
        found = {**chosen.details, **given}
    else:
        signal, classified_by = report.signal_type, "caller"
        found = extract_details(message, signal, rt.patterns, given)
    level = report.severity or DEFAULT_SEVERITY.get(signal, "medium")
    print_ = fingerprint(
        signal_type=signal,
        step=report.step,
        message=message,
        error_type=report.error_type,
        tool_name=report.tool_name,
        error_code=report.error_code,
    )
    now = rt.now()
    task_id = report.task_id

    def work(conn: Conn) -> tuple[RecordFailureResult, Fired | None]:
        task = load_task(conn, task_id)
        stop = stop_if_ended(rt, conn, task)
        if stop is not None:
            return RecordFailureResult(failure=None, escalation=None, **stop.model_dump()), None
        where = normalise_path(report.file, task.project).path if report.file else None
        decided = report.model_copy(
            update={"signal_type": signal, "severity": level, "details": found, "file": where}
        )
        record = failure_store.record_occurrence(
            conn,
            failure_store.NewFailure(
                report=decided,
                project=task.project,
                generation=task.generation,
                agent_id=task.agent_id,
                classified_by=classified_by,
                fingerprint=print_,
            ),
            now,
        )
        counters = triggers.after_failure(
            task.counters, print_, operation_key(attempted_action) if attempted_action else None
        )
        counters = count_call(counters)
        task_store.save_counters(conn, task_id, counters, now)
        progress_store.add_action(
            conn,
            task,
            "record_failure",
            {
                "failure_id": record.failure_id,
                "signal_type": signal,
                "file": where,
                "line": line,
                "attempted_action": attempted_action,
            },
            now,
        )
        fired: list[Evidence] = []
        blocker = signal in BLOCKER_SIGNALS
        allowance = triggers.repeat_allowance(
            task.thresholds, blocker=blocker, declared=classified_by == "caller"
        )
        if blocker and counters.consecutive_same_error >= allowance:
            fired.append(
                Evidence(
                    triggers.external_blocker(
                        signal,
                        found,
                        repeated=1 if classified_by == "caller" else counters.consecutive_same_error,
                    ),
                    rt.prompts.render(
                        "trigger_external_blocker",
                        signal_type=signal,
                        subject=blocker_subject(signal, found, message),
                        error=headline(message),
                    ),
                    clip_texts(
                        {
                            "signal_type": signal,
                            "details": found,
                            "message": message,
                            "file": where,
                            "line": line,
                            "attempted_action": attempted_action,
                            "at": now,
                            "failure_id": record.failure_id,
                        }
                    ),
                    key=f"external_blocker:{print_}",
                )
            )
        repeated = triggers.repeated_error(counters, task.thresholds, transient=signal == "network_transient")
        if repeated is not None:
            if repeated.type == "external_blocker":
                summary = rt.prompts.render(
                    "trigger_external_blocker",
                    signal_type=signal,
                    subject=blocker_subject(signal, found, message),
                    error=headline(message),
                )
            else:
                summary = rt.prompts.render(
                    "trigger_repeated_error",
                    count=counters.consecutive_same_error,
                    threshold=task.thresholds.same_error_repeated,
                    message=headline(message),
                )
            fired.append(
                _repeat_evidence(
                    conn, repeated, summary, record, print_, counters.consecutive_same_error, now
                )
            )
        fired.extend(budget_evidence(rt, conn, task, counters, now))
        warning = None
        if not fired and triggers.warning_due(counters.consecutive_same_error, allowance, task.thresholds):
            warning = _repeat_warning(
                rt, conn, task, record, message, counters.consecutive_same_error, allowance
            )
        changed = fire(rt, conn, task, fired)
        task = current_task(conn, task, changed, counters=counters)
        directed = direct(
            rt,
            conn,
            task,
            "message_failure_recorded",
            task_id=task_id,
            signal_type=signal,
            consecutive=counters.consecutive_same_error,
            threshold=task.thresholds.same_error_repeated,
            occurrences=record.occurrence_count,
        )
        keep_told_if_created(rt, conn, changed, directed)
        result = RecordFailureResult(
            failure=FailureSummary(
                failure_id=record.failure_id,
                fingerprint=print_,
                signal_type=signal,
                classified_by=classified_by,
                severity=record.severity,
                occurrence_count=record.occurrence_count,
                consecutive_count=counters.consecutive_same_error,
                status=record.status,
                details=found,
            ),
            escalation=changed.shown if changed else None,
            warning=warning,
            **directed.model_dump(),
        )
        return result, changed

    return work


record_failure = committed(failure_recording)


# A warning names at most this many of the latest tries and past fixes, each clipped.
WARNING_ITEMS = 3
WARNING_ITEM_CHARS = 160


def _repeat_warning(
    rt: Runtime,
    conn: Conn,
    task: Task,
    record: failure_store.Counted,
    message: str,
    count: int,
    threshold: int,
) -> str:
    """What the model is told a step before the same error pages a human (bounded)."""
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
    return rt.prompts.render(
        "warning_repeated_error",
        count=count,
        threshold=threshold,
        error=headline(message),
        tries=tries or "-",
        guidance=guidance,
    )


def _repeat_evidence(
    conn: Conn,
    repeated: triggers.Firing,
    summary: str,
    record: failure_store.Counted,
    print_: str,
    consecutive: int,
    now: str,
) -> Evidence:
    """The evidence of an error repeated in a row: bounded, however long the run.

    Only the latest few occurrences are read (``RUN_READ``); the ones that fired the trigger
    stay on the escalation from its first firing, and ``failure://`` shows the rest.
    """
    latest = failure_store.recent_occurrences(conn, record.failure_id, min(consecutive, RUN_READ))
    return Evidence(
        repeated,
        summary,
        {
            "failure_id": record.failure_id,
            "fingerprint": print_,
            "occurrence_count": record.occurrence_count,
            "first_seen_at": failure_store.first_seen_at(conn, record.seq),
            "last_seen_at": now,
            "all_occurrences": f"failure://{record.failure_id}",
        },
        key=f"{repeated.type}:{print_}",
        run=Run("occurrences", [o.model_dump() for o in latest], consecutive),
    )
