"""What one progress report decides, as a pure function of the task and what the store read.

``report_progress`` (services/progress.py) reads the task and which of the reported files it
already modified; ``decide`` says what follows: the counters and best pass rate to save, the
test run to record, which files are new to the task, which triggers fire (no file progress,
a test stall, the verification limit, the scope, the file limit, a budget), the warnings due
a step before a threshold when none fires, and the message the agent reads when it may go
on. The service writes what this says and gathers each trigger's evidence.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...models.tasks import Counters, Task, TestRun
from ...models.thresholds import Thresholds
from ..bounds.evidence import clip_texts
from ..reading.shell_work import operation_key
from . import triggers
from .budgets import budget_fires, count_call
from .decisions import Fires, Wording, verification_limit_fires
from .edits import file_limit_fires, scope_fires
from .paths import in_scope, normalise_path


@dataclass(frozen=True)
class Report:
    """What one call reports (``report_progress``, or a host hook for it).

    ``attempt`` False (a hook, for what is not an attempt by its configuration) leaves the
    no-file-change count alone. ``operation`` (a hook: the command that succeeded) ends a run
    of identical errors only if it is the operation that failed. ``new_call`` False: the
    tool call was already counted for the budgets (a hook records a failing test run as a
    failure too).
    """

    files: tuple[str, ...] = ()
    tests_passed: int | None = None
    tests_failed: int | None = None
    outcome: str = "neutral"
    note: str | None = None
    step: str = "main"
    attempt: bool = True
    operation: str | None = None
    new_call: bool = True

    @property
    def is_test_run(self) -> bool:
        """The call reports test counts (either of them)."""
        return self.tests_passed is not None or self.tests_failed is not None

    @property
    def tests_run(self) -> int:
        """How many tests the call reports ran (passed and failed)."""
        return (self.tests_passed or 0) + (self.tests_failed or 0)

    @property
    def succeeded(self) -> bool:
        return self.outcome == "success"

    @property
    def operation_key(self) -> str | None:
        """The key of the operation named, which test runs and runs of errors are kept by."""
        return operation_key(self.operation) if self.operation else None


@dataclass(frozen=True)
class Touched:
    """The report's files as the task counts them, and those outside its scope (or project)."""

    paths: tuple[str, ...]
    outside: tuple[str, ...]


@dataclass(frozen=True)
class ProgressDecision:
    """What one report decides (``decide``)."""

    counters: Counters  # to save; files_modified counts the new paths
    best_pass_rate: float | None
    test_run: TestRun | None
    paths: tuple[str, ...]  # every file reported, normalised
    new_paths: tuple[str, ...]  # those the task had not modified yet
    fires: tuple[Fires, ...]
    warnings: tuple[Wording, ...]  # only when nothing fires
    message: Wording  # what the agent reads when it may go on

    def action(self, report: Report) -> dict[str, Any]:
        """The call as the task's history records it."""
        return {
            "step": report.step,
            "outcome": report.outcome,
            "files": list(self.paths),
            "note": report.note,
            "pass_rate": self.test_run.pass_rate if self.test_run else None,
        }


@dataclass(frozen=True)
class _Measured:
    """The counters after the call, and its test run measured against its baseline."""

    counters: Counters
    baseline: float | None
    test_run: TestRun | None
    best_pass_rate: float | None


def touched(report: Report, task: Task) -> Touched:
    """The distinct files reported, sorted, and those outside the task's scope."""
    normalised = [normalise_path(p, task.project) for p in report.files]
    paths = sorted({n.path for n in normalised})
    outside = sorted({n.path for n in normalised if not in_scope(n, task.scope)})
    return Touched(tuple(paths), tuple(outside))


def decide(report: Report, *, task: Task, files: Touched, known: set[str], now: str) -> ProgressDecision:
    """The consequences of ``report`` on ``task`` (before it); ``known`` are the reported
    files the task already modified."""
    new_paths = tuple(p for p in files.paths if p not in known)
    attempted = report.attempt and not files.paths  # what no file progress counts
    measured = _measure(report, task, changed_files=bool(files.paths), now=now)
    fires = (
        *_progress_fires(task, measured, attempted=attempted),
        *_edit_fires(task, files, new_paths),
        *budget_fires(measured.counters, task.thresholds, created_at=task.created_at, now=now),
    )
    files_modified = task.counters.files_modified + len(new_paths)
    return ProgressDecision(
        counters=measured.counters.model_copy(update={"files_modified": files_modified}),
        best_pass_rate=measured.best_pass_rate,
        test_run=measured.test_run,
        paths=files.paths,
        new_paths=new_paths,
        fires=fires,
        warnings=() if fires else _warnings(task.thresholds, measured, attempted=attempted),
        message=Wording("message_progress_recorded", {"task_id": task.task_id}),
    )


def _measure(report: Report, task: Task, *, changed_files: bool, now: str) -> _Measured:
    """The counters after the attempt, a success, the test run and the call itself."""
    counters = task.counters
    if report.attempt or changed_files:
        counters = triggers.after_attempt(counters, changed_files=changed_files, succeeded=report.succeeded)
    if changed_files:
        counters = triggers.after_change(counters, report.files)
    key = report.operation_key
    # A success ends runs of errors; so does the named operation going through without a
    # failure (a hook's edit that was applied: its outcome says nothing of the work yet).
    if report.succeeded or (key is not None and report.outcome != "failure"):
        counters = triggers.after_success(counters, key)
    baseline = triggers.test_baseline(counters, task.best_pass_rate, key)
    test_run, best = None, task.best_pass_rate
    passed, failed = report.tests_passed or 0, report.tests_failed or 0
    if report.is_test_run:
        rate = triggers.pass_rate(passed, failed)
        improved = triggers.test_improved(rate, baseline)
        best = rate if best is None else max(best, rate)
        counters = triggers.after_test_run(
            counters, rate=rate, improved=improved, all_passed=failed == 0, operation=key
        )
        counters = triggers.after_verification(counters, passed=failed == 0)
        test_run = TestRun(
            at=now,
            step=report.step,
            agent_id=task.agent_id,
            passed=passed,
            failed=failed,
            pass_rate=rate,
            improved=improved,
        )
    counters = count_call(counters, call=report.new_call, failing_test_run=report.is_test_run and failed > 0)
    return _Measured(counters, baseline, test_run, best)


def _progress_fires(task: Task, m: _Measured, *, attempted: bool) -> tuple[Fires, ...]:
    """No file progress (an attempt without files), a test stall and the verification limit
    (a test run)."""
    c, t = m.counters, task.thresholds
    fires: list[Fires | None] = []
    if attempted:
        fires.append(_no_file_progress(task, c))
    if m.test_run is not None:
        fires.append(_test_stall(c, t, baseline=m.baseline, latest=m.test_run.pass_rate))
        fires.append(verification_limit_fires(c, t))
    return tuple(f for f in fires if f is not None)


def _no_file_progress(task: Task, c: Counters) -> Fires | None:
    """The attempts that changed nothing, with the task they were to carry out (the service
    adds the latest of them as a run)."""
    t = task.thresholds
    firing = triggers.no_file_progress(c, t)
    if firing is None:
        return None
    count = c.attempts_without_file_change
    summary = Wording(
        "trigger_no_file_progress", {"count": count, "threshold": t.no_file_changes_after_attempts}
    )
    texts = clip_texts({"title": task.title, "specification": task.specification})
    return Fires(firing, summary, facts={"task": texts})


def _test_stall(c: Counters, t: Thresholds, *, baseline: float | None, latest: float) -> Fires | None:
    firing = triggers.test_stall(c, t, best=baseline, latest=latest)
    if firing is None:
        return None
    summary = Wording(
        "trigger_test_stall",
        {
            "count": c.test_runs_without_improvement,
            "threshold": t.no_test_improvement_after,
            "best_pass_rate": _percent(baseline),
            "latest_pass_rate": _percent(latest),
        },
    )
    return Fires(firing, summary)


def _percent(share: float | None) -> str:
    """A pass rate as the summary says it: 80%, or "none yet" before any run sets one."""
    return "none yet" if share is None else f"{share:.0%}"


def _edit_fires(task: Task, files: Touched, new_paths: tuple[str, ...]) -> tuple[Fires, ...]:
    """The scope, and the file limit once the new paths count."""
    scope = scope_fires(list(files.outside), task)
    over = None
    if new_paths:
        over = file_limit_fires(
            task.counters.files_modified + len(new_paths), task.thresholds, list(new_paths), reported=True
        )
    return tuple(f for f in (scope, over) if f is not None)


def _warnings(t: Thresholds, m: _Measured, *, attempted: bool) -> tuple[Wording, ...]:
    """The warnings due a step before a progress threshold, in the order they are shown."""
    c, run = m.counters, m.test_run
    warnings: list[Wording] = []
    if attempted and triggers.warning_due(
        c.attempts_without_file_change, t.no_file_changes_after_attempts, t
    ):
        count, threshold = c.attempts_without_file_change, t.no_file_changes_after_attempts
        warnings.append(Wording("warning_no_file_progress", {"count": count, "threshold": threshold}))
    if run is not None and triggers.warning_due(
        c.test_runs_without_improvement, t.no_test_improvement_after, t
    ):
        values = {
            "count": c.test_runs_without_improvement,
            "threshold": t.no_test_improvement_after,
            "best_pass_rate": m.baseline,
            "latest_pass_rate": run.pass_rate,
        }
        warnings.append(Wording("warning_test_stall", values))
    if (
        run is not None
        and run.failed
        and triggers.warning_due(c.verification_attempts, t.total_verification_attempts, t)
    ):
        count, threshold = c.verification_attempts, t.total_verification_attempts
        warnings.append(Wording("warning_verification_limit", {"count": count, "threshold": threshold}))
    return tuple(warnings)
