"""Progress reports and the edit gate: the store's side of ``rules.decide.progress`` and
``rules.decide.edits``.

``report_progress`` reads the task and which reported files it already modified, asks
``rules.decide.progress.decide`` what follows, and writes that: the new files, the report, the
counters, the action, then the escalation its triggers fire, all in one transaction.
``check_edit`` does the same with ``rules.decide.edits.decide_edit``. The evidence of each fired
trigger is read after the writes, so it shows them.
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import InvalidInput
from ..models.results import CheckEditResult, PathVerdict, ProgressResult
from ..models.tasks import Task
from ..rules.bounds.evidence import PATHS_SHOWN, RUN_READ, TEST_RUNS_SHOWN
from ..rules.decide.decisions import Fires, Wording
from ..rules.decide.edits import (
    EditDecision,
    PathCheck,
    decide_edit,
    inactive_reason,
    normalised,
    refused_all,
)
from ..rules.decide.progress import ProgressDecision, Report, decide, touched
from ..rules.triggers.records import BY_TYPE, COUNTED_EVIDENCE
from ..store import escalation_lookups
from ..store import progress as progress_store
from ..store import tasks as task_store
from ..store.sql import Conn
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
from .gathering import GATHERERS, gatherer
from .headlines import counted_evidence
from .runtime import Runtime
from .tasks import load_task


def progress_recording(
    rt: Runtime,
    *,
    task_id: str,
    files_modified: list[str] | None = None,
    tests_passed: int | None = None,
    tests_failed: int | None = None,
    outcome: str = "neutral",
    note: str | None = None,
    step: str = "main",
    attempt: bool = True,
    operation: str | None = None,
    new_call: bool = True,
) -> Recording[ProgressResult]:
    """One attempt: count it, record files and tests, and fire what it completes.

    The recording, to run in a transaction (``report_progress`` runs it in its own).
    ``attempt``, ``operation`` and ``new_call`` are the host hooks' (``rules.decide.progress.Report``).
    """
    report = Report(
        files=tuple(files_modified or ()),
        tests_passed=tests_passed,
        tests_failed=tests_failed,
        outcome=outcome,
        note=note,
        step=step,
        attempt=attempt,
        operation=operation,
        new_call=new_call,
    )
    if report.is_test_run and report.tests_run == 0:
        raise InvalidInput(
            "tests_passed",
            "a test run needs at least one test (tests_passed + tests_failed > 0); "
            "omit both when no tests ran",
        )
    now = rt.now()

    def work(conn: Conn) -> tuple[ProgressResult, Fired | None]:
        return _record_progress(rt, conn, task_id, report, now)

    return work


def _record_progress(
    rt: Runtime, conn: Conn, task_id: str, report: Report, now: str
) -> tuple[ProgressResult, Fired | None]:
    """Read, decide, write, fire, direct: the whole of one report, inside its transaction."""
    task = load_task(conn, task_id)
    stop = stop_if_ended(rt, conn, task)
    if stop is not None:
        ended = ProgressResult(counters=task.counters, test_run=None, escalation=None, **stop.model_dump())
        return ended, None
    files = touched(report, task)
    known = task_store.already_modified(conn, task, list(files.paths))
    decision = decide(report, task=task, files=files, known=known, now=now)
    _write_progress(conn, task, report, decision, now)
    # The task as written, so neither the firing nor what follows reads it again.
    task = task.model_copy(
        update={"counters": decision.counters, "best_pass_rate": decision.best_pass_rate, "updated_at": now}
    )
    fired = [_evidence(rt, conn, task, fires) for fires in decision.fires]
    changed = fire(rt, conn, task, fired, task_is_current=True)
    task = changed.task if changed else task
    directed = direct(rt, conn, task, decision.message.template, **decision.message.values)
    keep_told_if_created(rt, conn, changed, directed)
    result = ProgressResult(
        counters=task.counters,
        test_run=decision.test_run,
        escalation=changed.shown if changed else None,
        warning="\n".join(_render(rt, w) for w in decision.warnings) or None,
        **directed.model_dump(),
    )
    return result, changed


def _write_progress(conn: Conn, task: Task, report: Report, decision: ProgressDecision, now: str) -> None:
    """The new files, the report, the counters and the action, as ``decision`` says."""
    task_store.add_modified_files(conn, task, list(decision.new_paths), "report_progress", now)
    run = decision.test_run
    progress_store.insert_report(
        conn,
        task,
        step=report.step,
        outcome=report.outcome,
        files=list(decision.paths),
        tests_passed=report.tests_passed,
        tests_failed=report.tests_failed,
        pass_rate=run.pass_rate if run else None,
        improved=run.improved if run else None,
        note=report.note,
        now=now,
    )
    task_store.save_progress(conn, task.task_id, decision.counters, decision.best_pass_rate, now)
    progress_store.add_action(conn, task, "report_progress", decision.action(report), now)


report_progress = committed(progress_recording)


def edit_check(rt: Runtime, *, task_id: str, paths: list[str]) -> Recording[CheckEditResult]:
    """The gate before a change: scope and file limit. Refused edits escalate and pause.

    The recording, to run in a transaction (``check_edit`` runs it in its own)."""
    now = rt.now()

    def work(conn: Conn) -> tuple[CheckEditResult, Fired | None]:
        return _check_edit(rt, conn, task_id, paths, now)

    return work


def _check_edit(
    rt: Runtime, conn: Conn, task_id: str, given: list[str], now: str
) -> tuple[CheckEditResult, Fired | None]:
    """Read, decide, write, fire, direct: the whole of one check, inside its transaction."""
    task = load_task(conn, task_id)
    paths = normalised(given, task)
    holding = escalation_lookups.holding(conn, task_id)
    reason = inactive_reason(task, holding.escalation_id if holding else None)
    if reason is not None:
        # The holding escalation is named in ``holding``: nothing about it is new here.
        directed = direct(rt, conn, task)
        verdicts = _verdicts(rt, refused_all(reason, given, paths))
        result = CheckEditResult(
            allowed=False,
            reasons=[_render(rt, reason)],
            paths=verdicts,
            escalation=None,
            **directed.model_dump(),
        )
        return result, None
    known = task_store.already_modified(conn, task, [n.path for n in paths])
    decision = decide_edit(given, paths, task=task, known=known)
    return _record_check(rt, conn, task, decision, now)


def _record_check(
    rt: Runtime, conn: Conn, task: Task, decision: EditDecision, now: str
) -> tuple[CheckEditResult, Fired | None]:
    """Write, fire and direct what ``decision`` says."""
    if decision.allowed:
        task_store.add_modified_files(conn, task, list(decision.counted), "check_edit", now)
        # The files just added count at once (the store derives the count, the copy must too).
        files_modified = task.counters.files_modified + len(decision.counted)
        task = task.model_copy(
            update={"counters": task.counters.model_copy(update={"files_modified": files_modified})}
        )
    fired = [_evidence(rt, conn, task, fires) for fires in decision.fires]
    progress_store.add_action(conn, task, "check_edit", decision.action, now)
    changed = fire(rt, conn, task, fired, task_is_current=True)
    task = changed.task if changed else task
    directed = direct(rt, conn, task, decision.message.template, **decision.message.values)
    keep_told_if_created(rt, conn, changed, directed)
    verdicts = _verdicts(rt, decision.paths)
    result = CheckEditResult(
        allowed=decision.allowed,
        reasons=[v.reason for v in verdicts if v.reason],
        paths=verdicts,
        escalation=changed.shown if changed else None,
        **directed.model_dump(),
    )
    return result, changed


check_edit = committed(edit_check)


def _render(rt: Runtime, wording: Wording) -> str:
    return rt.prompts.render(wording.template, **wording.values)


def _verdicts(rt: Runtime, checks: tuple[PathCheck, ...]) -> list[PathVerdict]:
    """Each path's verdict, its refusal worded from prompts/."""
    return [
        PathVerdict(
            path=c.given,
            normalised=c.normalised,
            allowed=c.refusal is None,
            reason=_render(rt, c.refusal) if c.refusal else None,
        )
        for c in checks
    ]


# The evidence of each trigger a report or a check fires: what the store holds for it,
# read after the call's writes. The counting triggers lead with the task's latest error.
Gather = Callable[[Runtime, Conn, Task, Fires], Evidence]


def _evidence(rt: Runtime, conn: Conn, task: Task, fires: Fires) -> Evidence:
    gather: Gather = GATHERERS[BY_TYPE[fires.firing.type].evidence]
    return gather(rt, conn, task, fires)


@gatherer("attempts")
def _no_file_progress(rt: Runtime, conn: Conn, task: Task, fires: Fires) -> Evidence:
    """The attempts that changed nothing, as a run."""
    count = fires.firing.observed["attempts_without_file_change"]
    reports = progress_store.recent_reports(conn, task, min(count, RUN_READ))
    run = Run("attempts", [r.model_dump() for r in reports], count)
    return counted_evidence(rt, conn, task.task_id, fires, run=run)


@gatherer("pass rates")
def _test_stall(rt: Runtime, conn: Conn, task: Task, fires: Fires) -> Evidence:
    return counted_evidence(rt, conn, task.task_id, fires, read=_pass_rates(conn, task))


@gatherer("verification history")
def _verification_limit(rt: Runtime, conn: Conn, task: Task, fires: Fires) -> Evidence:
    history = _pass_rates(conn, task)["history"]
    return counted_evidence(rt, conn, task.task_id, fires, read={"verification_history": history})


def _pass_rates(conn: Conn, task: Task) -> dict[str, object]:
    """The baseline and the latest test runs: the evidence of a stall or a limit."""
    return {
        "baseline_pass_rate": task.baseline_pass_rate,
        "history": [
            {
                "at": r.at,
                "pass_rate": r.pass_rate,
                "passed": r.passed,
                "failed": r.failed,
                "improved": r.improved,
            }
            for r in progress_store.list_test_runs(conn, task.task_id, TEST_RUNS_SHOWN)
        ],
    }


@gatherer("scope")
def _scope_deviation(rt: Runtime, conn: Conn, task: Task, fires: Fires) -> Evidence:  # noqa: ARG001
    """All its facts are the decision's: a change outside the scope needs no read."""
    return Evidence(fires.firing, _render(rt, fires.summary), dict(fires.facts), key=fires.key)


@gatherer("files")
def _file_limit(rt: Runtime, conn: Conn, task: Task, fires: Fires) -> Evidence:
    """The files the task modified before the proposal, ahead of it."""
    proposed = fires.facts["proposed_files"]
    already = [p for p in task_store.modified_files(conn, task) if p not in proposed]
    # The latest few; an approved limit can let the list grow far.
    read = {"modified_files": already[-PATHS_SHOWN:], "modified_count": len(already)}
    return Evidence(fires.firing, _render(rt, fires.summary), {**read, **fires.facts}, key=fires.key)


@gatherer(COUNTED_EVIDENCE)
def _counted(rt: Runtime, conn: Conn, task: Task, fires: Fires) -> Evidence:
    """A counting trigger's summary led by the latest error, and the facts its decision knew
    (a budget; any counting trigger with no evidence of its own)."""
    return counted_evidence(rt, conn, task.task_id, fires)
