"""Host-side API errors (``rules.reading.host_errors``): recorded as failures of the host's API,
never counted in the agent's runs of errors, and escalated only as that module says: a
notice for authentication and billing, a blocker for a transient error that persists.
"""

from __future__ import annotations

from ..clock import parse_iso
from ..models.escalations import Trigger
from ..models.failures import FailureReport
from ..models.limits import ENDED_STATUSES, SignalType
from ..rules.decide.failures import classify_report
from ..rules.decide.triggers import response_options
from ..rules.reading import host_errors
from ..rules.reading.salient import headline
from ..store import escalation_lookups
from ..store import escalations as escalation_store
from ..store import failures as failure_store
from ..store import progress as progress_store
from ..store.sql import Conn
from .failures import new_failure
from .firing import escalation_context, sync_pause
from .runtime import Runtime
from .tasks import load_task

# Of the error's occurrences, how many the persistence rule looks back over.
OCCURRENCES_READ = 50
SIGNAL: SignalType = "api_unavailable"


async def record_host_error(
    rt: Runtime, *, task_id: str, host: str, error_type: str, message: str, step: str, minutes: float
) -> int | None:
    """Record one host API error on the task; the id of an escalation it opened, if any."""
    # Built as a hook's observed failure is: the host's text as it came, not held to the
    # limits of record_failure's arguments.
    report = FailureReport.model_construct(
        task_id=task_id,
        message=message,
        signal_type=SIGNAL,
        step=step,
        tool_name=host_errors.host_tool(host),
        error_code=error_type,
        severity="low" if host_errors.kind_of(error_type) == "transient" else "medium",
    )
    classified = classify_report(report, rt.patterns)
    now = rt.now()

    def work(conn: Conn) -> int | None:
        task = load_task(conn, task_id)
        if task.status in ENDED_STATUSES:
            return None
        decided = report.model_copy(update={"severity": classified.severity, "details": classified.details})
        new = new_failure(decided, classified, task)
        record = failure_store.record_occurrence(conn, new, now)
        action = {"failure_id": record.failure_id, "host": host, "error_type": error_type}
        progress_store.add_action(conn, task, "host_error", action, now)
        if not _escalates(conn, record.failure_id, error_type, now, minutes):
            return None
        key = host_errors.key_of(error_type)
        earlier = escalation_lookups.latest_with_key(conn, task_id, key)
        if earlier is not None and earlier.status in ("pending", "answered"):
            return None  # one open escalation per error type: its failure record counts the rest
        return _open(rt, conn, task_id, error_type, message, record.failure_id, record.occurrence_count)

    opened = await rt.db.write(work)
    if opened is not None:
        escalation = await rt.db.read(lambda conn: escalation_store.get(conn, opened))
        if escalation is not None:
            await rt.publish(escalation, "created")
    return opened


def _escalates(conn: Conn, failure_id: str, error_type: str, now: str, minutes: float) -> bool:
    if host_errors.kind_of(error_type) == "notice":
        return True
    seen = [parse_iso(o.at) for o in failure_store.recent_occurrences(conn, failure_id, OCCURRENCES_READ)]
    return host_errors.persisted(seen, parse_iso(now), minutes)


def _open(
    rt: Runtime, conn: Conn, task_id: str, error_type: str, message: str, failure_id: str, count: int
) -> int:
    """A notice (non-blocking) or, for a persisting transient error, a blocker holding the task."""
    notice = host_errors.kind_of(error_type) == "notice"
    task = load_task(conn, task_id)
    now = rt.now()
    said = {"error_type": error_type, "error": headline(message)}
    if notice:
        summary = rt.prompts.render("trigger_host_error_notice", **said)
    else:
        summary = rt.prompts.render("trigger_host_error_persists", count=count, **said)
    observed = {"error_type": error_type, "occurrences": count, "failure_id": failure_id}
    trigger = Trigger(
        type="external_blocker",
        criteria={"host_error": "notice" if notice else "persists"},
        observed=observed,
        summary=summary,
        at=now,
        key=host_errors.key_of(error_type),
    )
    escalation_id = escalation_store.insert(
        conn,
        task_id=task_id,
        agent_id=task.agent_id,
        generation=task.generation,
        type_="external_blocker",
        priority="normal" if notice else "high",
        blocking=not notice,
        triggers=[trigger],
        response_options=response_options(["external_blocker"]),
        context=escalation_context(conn, task, {trigger.key: {**observed, "message": headline(message)}}),
        reason=None,
        question=None,
        options=[],
        follow_up_of=None,
        now=now,
    )
    detail = {"escalation_id": escalation_id, "triggers": ["external_blocker"]}
    progress_store.add_action(conn, task, "escalation_created", detail, now)
    sync_pause(rt, conn, task_id)
    return escalation_id
