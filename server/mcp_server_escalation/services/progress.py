"""Progress reports and the edit gate: attempts, test runs, file limit and scope."""

from __future__ import annotations

from ..errors import InvalidInput
from ..models.limits import ENDED_STATUSES
from ..models.results import CheckEditResult, PathVerdict, ProgressResult
from ..models.tasks import Counters, Task, TestRun
from ..models.thresholds import Thresholds
from ..rules import triggers
from ..rules.evidence import (
    PATHS_SHOWN,
    RUN_READ,
    TEST_RUNS_SHOWN,
    clip,
    clip_texts,
    scope_named,
)
from ..rules.paths import NormalisedPath, in_scope, normalise_path
from ..rules.shell_work import operation_key
from ..store import escalations as escalation_store
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
from .headlines import lead_with_latest_error
from .runtime import Runtime
from .tasks import load_task


def _scope_evidence(rt: Runtime, task: Task, outside: list[str]) -> Evidence | None:
    # The criteria and the evidence name the scope as messages do: the escalation's task
    # shows more of it (``context.task``), and the task keeps it whole.
    named = scope_named(task.scope)
    firing = triggers.scope_deviation(outside, named, task.thresholds)
    if firing is None:
        return None
    summary = rt.prompts.render("trigger_scope_deviation", paths=", ".join(outside), scope=named or ["(any)"])
    return Evidence(
        firing,
        summary,
        {
            "scope": named,
            "specification": clip(task.specification),
            "project": task.project,
            "out_of_scope_paths": outside,
        },
    )


def _file_limit_evidence(
    rt: Runtime, conn: Conn, task: Task, count_after: int, proposed: list[str]
) -> Evidence | None:
    firing = triggers.file_limit(count_after, task.thresholds, proposed)
    if firing is None:
        return None
    already = [p for p in task_store.modified_files(conn, task) if p not in proposed]
    summary = rt.prompts.render(
        "trigger_file_limit",
        count=count_after,
        limit=task.thresholds.files_modified_exceeds,
        proposed=", ".join(proposed),
    )
    return Evidence(
        firing,
        summary,
        {
            # The latest few; an approved limit can let the list grow far.
            "modified_files": already[-PATHS_SHOWN:],
            "modified_count": len(already),
            "proposed_files": proposed,
            "limit": task.thresholds.files_modified_exceeds,
        },
    )


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


def _warning(
    rt: Runtime,
    counters: Counters,
    t: Thresholds,
    test_run: TestRun | None,
    baseline: float | None,
    *,
    attempted: bool,
) -> str | None:
    """The warnings due a step before a progress threshold, one per line (or None)."""
    lines = []
    if attempted and triggers.warning_due(
        counters.attempts_without_file_change, t.no_file_changes_after_attempts, t
    ):
        lines.append(
            rt.prompts.render(
                "warning_no_file_progress",
                count=counters.attempts_without_file_change,
                threshold=t.no_file_changes_after_attempts,
            )
        )
    if test_run is not None and triggers.warning_due(
        counters.test_runs_without_improvement, t.no_test_improvement_after, t
    ):
        lines.append(
            rt.prompts.render(
                "warning_test_stall",
                count=counters.test_runs_without_improvement,
                threshold=t.no_test_improvement_after,
                best_pass_rate=baseline,
                latest_pass_rate=test_run.pass_rate,
            )
        )
    if (
        test_run is not None
        and test_run.failed
        and triggers.warning_due(counters.verification_attempts, t.total_verification_attempts, t)
    ):
        lines.append(
            rt.prompts.render(
                "warning_verification_limit",
                count=counters.verification_attempts,
                threshold=t.total_verification_attempts,
            )
        )
    return "\n".join(lines) or None


def _normalise_all(task: Task, paths: list[str]) -> list[NormalisedPath]:
    return [normalise_path(p, task.project) for p in paths]


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

    ``attempt=False`` (the host hooks, for what is not an attempt by their configuration)
    leaves the no-file-change count alone; everything else is recorded as usual.
    ``operation`` (the host hooks: the command that succeeded) ends a run of identical
    errors only if it is the operation that failed (``triggers.after_success``).
    ``new_call=False``: the tool call was already counted for the budgets (a hook records
    a failing test run as a failure too).
    """
    files = files_modified or []
    is_test_run = tests_passed is not None or tests_failed is not None
    passed, failed = tests_passed or 0, tests_failed or 0
    if is_test_run and passed + failed == 0:
        raise InvalidInput(
            "tests_passed",
            "a test run needs at least one test (tests_passed + tests_failed > 0); "
            "omit both when no tests ran",
        )
    now = rt.now()

    def work(conn: Conn) -> tuple[ProgressResult, Fired | None]:
        task = load_task(conn, task_id)
        stop = stop_if_ended(rt, conn, task)
        if stop is not None:
            ended = ProgressResult(
                counters=task.counters, test_run=None, escalation=None, **stop.model_dump()
            )
            return ended, None
        normalised = _normalise_all(task, files)
        paths = sorted({n.path for n in normalised})
        outside = sorted({n.path for n in normalised if not in_scope(n, task.scope)})
        known = task_store.already_modified(conn, task, paths)
        new_paths = [p for p in paths if p not in known]
        task_store.add_modified_files(conn, task, new_paths, "report_progress", now)

        counters = task.counters
        if attempt or paths:
            counters = triggers.after_attempt(
                counters, changed_files=bool(paths), succeeded=outcome == "success"
            )
        if outcome == "success":
            counters = triggers.after_success(counters, operation_key(operation) if operation else None)
        fired: list[Evidence] = []
        test_run: TestRun | None = None
        best = task.best_pass_rate
        key = operation_key(operation) if operation else None
        baseline = triggers.test_baseline(counters, task.best_pass_rate, key)
        if is_test_run:
            rate = triggers.pass_rate(passed, failed)
            improved = triggers.test_improved(rate, baseline)
            best = rate if best is None else max(best, rate)
            counters = triggers.after_test_run(
                counters, rate=rate, improved=improved, all_passed=failed == 0, operation=key
            )
            counters = triggers.after_verification(counters, passed=failed == 0)
            test_run = TestRun(
                at=now,
                step=step,
                agent_id=task.agent_id,
                passed=passed,
                failed=failed,
                pass_rate=rate,
                improved=improved,
            )
        progress_store.insert_report(
            conn,
            task,
            step=step,
            outcome=outcome,
            files=paths,
            tests_passed=tests_passed,
            tests_failed=tests_failed,
            pass_rate=test_run.pass_rate if test_run else None,
            improved=test_run.improved if test_run else None,
            note=note,
            now=now,
        )
        counters = count_call(counters, call=new_call, failing_test_run=is_test_run and failed > 0)
        task_store.save_progress(conn, task_id, counters, best, now)
        progress_store.add_action(
            conn,
            task,
            "report_progress",
            {
                "step": step,
                "outcome": outcome,
                "files": paths,
                "note": note,
                "pass_rate": test_run.pass_rate if test_run else None,
            },
            now,
        )
        t = task.thresholds
        if not paths and attempt:
            stalled = triggers.no_file_progress(counters, t)
            if stalled is not None:
                count = counters.attempts_without_file_change
                reports = progress_store.recent_reports(conn, task, min(count, RUN_READ))
                fired.append(
                    Evidence(
                        stalled,
                        lead_with_latest_error(
                            rt,
                            conn,
                            task.task_id,
                            "trigger_no_file_progress",
                            count=count,
                            threshold=t.no_file_changes_after_attempts,
                        ),
                        {"task": clip_texts({"title": task.title, "specification": task.specification})},
                        run=Run("attempts", [r.model_dump() for r in reports], count),
                    )
                )
        if test_run is not None:
            stall = triggers.test_stall(counters, t, best=baseline, latest=test_run.pass_rate)
            if stall is not None:
                fired.append(
                    Evidence(
                        stall,
                        lead_with_latest_error(
                            rt,
                            conn,
                            task.task_id,
                            "trigger_test_stall",
                            count=counters.test_runs_without_improvement,
                            threshold=t.no_test_improvement_after,
                            best_pass_rate=baseline,
                            latest_pass_rate=test_run.pass_rate,
                        ),
                        _pass_rates(conn, task),
                    )
                )
            limit = triggers.verification_limit(counters, t)
            if limit is not None:
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
                        {"verification_history": _pass_rates(conn, task)["history"]},
                    )
                )
        scope = _scope_evidence(rt, task, outside)
        if scope is not None:
            fired.append(scope)
        if new_paths:
            count_after = task.counters.files_modified + len(new_paths)
            over = _file_limit_evidence(rt, conn, task, count_after, new_paths)
            if over is not None:
                fired.append(over)
        fired.extend(budget_evidence(rt, conn, task, counters, now))
        warning = (
            None if fired else _warning(rt, counters, t, test_run, baseline, attempted=not paths and attempt)
        )
        changed = fire(rt, conn, task, fired)
        counters = counters.model_copy(
            update={"files_modified": task.counters.files_modified + len(new_paths)}
        )
        task = current_task(conn, task, changed, counters=counters, best_pass_rate=best)
        directed = direct(rt, conn, task, "message_progress_recorded", task_id=task_id)
        keep_told_if_created(rt, conn, changed, directed)
        result = ProgressResult(
            counters=task.counters,
            test_run=test_run,
            escalation=changed.shown if changed else None,
            warning=warning,
            **directed.model_dump(),
        )
        return result, changed

    return work


report_progress = committed(progress_recording)


def edit_check(rt: Runtime, *, task_id: str, paths: list[str]) -> Recording[CheckEditResult]:
    """The gate before a change: scope and file limit. Refused edits escalate and pause.

    The recording, to run in a transaction (``check_edit`` runs it in its own)."""
    now = rt.now()

    def work(conn: Conn) -> tuple[CheckEditResult, Fired | None]:
        task = load_task(conn, task_id)
        normalised = _normalise_all(task, paths)
        holding = escalation_store.holding(conn, task_id)
        verdicts: list[PathVerdict] = []
        if task.status in ENDED_STATUSES or holding is not None:
            reason = rt.prompts.render(
                "reason_task_not_active",
                status=task.status,
                escalation_id=holding.escalation_id if holding else "-",
            )
            verdicts = [
                PathVerdict(path=p, normalised=n.path, allowed=False, reason=reason)
                for p, n in zip(paths, normalised, strict=True)
            ]
            directed = direct(rt, conn, task)
            # The holding escalation is named in ``holding``: nothing about it is new here.
            refused = CheckEditResult(
                allowed=False, reasons=[reason], paths=verdicts, escalation=None, **directed.model_dump()
            )
            return refused, None

        known = task_store.already_modified(conn, task, [n.path for n in normalised])
        count = task.counters.files_modified
        limit = task.thresholds.files_modified_exceeds
        outside: list[str] = []
        over: list[str] = []
        counted: set[str] = set()
        for given, n in zip(paths, normalised, strict=True):
            refusal: str | None = None
            if not n.inside_root:
                refusal = rt.prompts.render("reason_outside_root", path=given)
                outside.append(n.path)
            elif task.thresholds.spec_deviation_detected and not in_scope(n, task.scope):
                refusal = rt.prompts.render("reason_out_of_scope", path=n.path, scope=scope_named(task.scope))
                outside.append(n.path)
            elif n.path not in known and n.path not in counted:
                counted.add(n.path)
                if count + len(counted) > limit:
                    refusal = rt.prompts.render(
                        "reason_file_limit", path=n.path, count=count + len(counted), limit=limit
                    )
                    over.append(n.path)
            verdicts.append(
                PathVerdict(path=given, normalised=n.path, allowed=refusal is None, reason=refusal)
            )
        allowed = all(v.allowed for v in verdicts)
        fired: list[Evidence] = []
        if allowed:
            task_store.add_modified_files(conn, task, sorted(counted), "check_edit", now)
        else:
            scope = _scope_evidence(rt, task, sorted(set(outside)))
            if scope is not None:
                fired.append(scope)
            if over:
                # Every path this call would add is part of the proposal, not only those past
                # the limit: approving must admit the whole change the agent asked for.
                limit_evidence = _file_limit_evidence(rt, conn, task, count + len(counted), sorted(counted))
                if limit_evidence is not None:
                    fired.append(limit_evidence)
        progress_store.add_action(
            conn,
            task,
            "check_edit",
            {"paths": [v.normalised for v in verdicts], "allowed": allowed},
            now,
        )
        changed = fire(rt, conn, task, fired)
        task = current_task(conn, task, changed)
        directed = direct(rt, conn, task, "message_edit_allowed", task_id=task_id, count=len(paths))
        keep_told_if_created(rt, conn, changed, directed)
        reasons = [v.reason for v in verdicts if v.reason]
        result = CheckEditResult(
            allowed=allowed,
            reasons=reasons,
            paths=verdicts,
            escalation=changed.shown if changed else None,
            **directed.model_dump(),
        )
        return result, changed

    return work


check_edit = committed(edit_check)
