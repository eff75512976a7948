"""Starting, viewing, reassigning and ending tasks."""

from __future__ import annotations

import posixpath
import uuid
from collections.abc import Callable
from pathlib import Path

from ..errors import Conflict, InvalidInput, NotFound
from ..models.escalations import Escalation
from ..models.limits import ENDED_STATUSES, SQLITE_INTEGER_MAX
from ..models.results import EndTaskResult, StartTaskResult, TaskView
from ..models.tasks import Task, TimelinePage
from ..models.thresholds import ThresholdOverrides
from ..rules.reading.salient import headline
from ..rules.wording import timeline as timeline_rules
from ..rules.wording.scope_refusals import listed_few
from ..store import escalation_lookups
from ..store import escalations as escalation_store
from ..store import failures as failure_store
from ..store import feedback as feedback_store
from ..store import progress as progress_store
from ..store import tasks as task_store
from ..store.sql import Conn
from .firing import direct, stop_if_ended, sync_pause
from .runtime import Runtime

TEST_HISTORY = 50
# A task's view lists the latest of what its history keeps adding, and counts the rest: a
# long task's files and escalations made get_task grow with every attempt (31 KB after
# 1,000 files). Every path and every escalation stays in the store.
MODIFIED_FILES_SHOWN = 50
ESCALATION_IDS_SHOWN = 20
# Entries on one page of a task's timeline (and the most a page may ask for): however long
# the task's history, a page reads this many actions after a place in it.
TIMELINE_PAGE = 50


def project_root(rt: Runtime, project: str | None) -> str:
    """An absolute, normalised project root (default: the server's working directory)."""
    chosen = project or rt.settings.project_root
    if not Path(chosen).is_absolute():
        chosen = str(Path(rt.settings.project_root) / chosen)
    return posixpath.normpath(chosen.replace("\\", "/"))


_NO_TASK_HINT = "Call start_task first, or check the id."


def load_task(conn: Conn, task_id: str) -> Task:
    """The task or a NotFound that tells the caller what to do."""
    task = task_store.get(conn, task_id)
    if task is None:
        raise NotFound("task_id", task_id, _NO_TASK_HINT)
    return task


def load_project(conn: Conn, task_id: str) -> str:
    """The task's project (a cheap ``load_task`` for readers that need nothing else)."""
    project = task_store.project_of(conn, task_id)
    if project is None:
        raise NotFound("task_id", task_id, _NO_TASK_HINT)
    return project


async def start_task(
    rt: Runtime,
    *,
    title: str,
    specification: str = "",
    scope: list[str] | None = None,
    task_id: str | None = None,
    agent_id: str = "agent",
    project: str | None = None,
    baseline_pass_rate: float | None = None,
    thresholds: ThresholdOverrides | None = None,
) -> StartTaskResult:
    """Create the task, or resume it; another ``agent_id`` takes it over with fresh counters."""
    chosen_id = task_id or f"task-{uuid.uuid4().hex[:12]}"
    now = rt.now()
    root = project_root(rt, project)

    def start(conn: Conn) -> StartTaskResult:
        existing = task_store.get(conn, chosen_id)
        created = reassigned = False
        if existing is None:
            created = task_store.insert(
                conn,
                task_id=chosen_id,
                title=title,
                specification=specification,
                scope=sorted(set(scope or [])),
                project=root,
                agent_id=agent_id,
                thresholds=rt.settings.thresholds.merged(thresholds),
                baseline_pass_rate=baseline_pass_rate,
                now=now,
            )
            # Not created: another server did since the read above (a database many servers
            # write); this call resumes it as it would have, had it come second.
            existing = None if created else load_task(conn, chosen_id)
        if existing is not None and existing.status not in ENDED_STATUSES:
            reassigned = _resume(conn, existing, agent_id, thresholds, now)
        return _started(rt, conn, chosen_id, created=created, reassigned=reassigned, now=now)

    return await rt.db.write(start)


def _resume(
    conn: Conn, existing: Task, agent_id: str, thresholds: ThresholdOverrides | None, now: str
) -> bool:
    """An open task started again: another agent takes it over (True), new thresholds apply."""
    reassigned = existing.agent_id != agent_id
    if reassigned:
        task_store.reassign(conn, existing, agent_id, now)
    if thresholds is not None and thresholds.model_dump(exclude_none=True):
        merged = existing.thresholds.merged(thresholds)
        task_store.set_thresholds(conn, existing.task_id, merged, now)
    return reassigned


def _started(
    rt: Runtime, conn: Conn, task_id: str, *, created: bool, reassigned: bool, now: str
) -> StartTaskResult:
    task = load_task(conn, task_id)
    if created or reassigned:
        progress_store.add_action(
            conn, task, "start_task", {"created": created, "reassigned": reassigned}, now
        )
    task = sync_pause(rt, conn, task_id)
    template = "message_task_taken_over" if reassigned else "message_task_started"
    directed = direct(rt, conn, task, template, task_id=task_id)
    return StartTaskResult(
        task_id=task.task_id,
        status=task.status,
        agent_id=task.agent_id,
        thresholds=task.thresholds,
        counters=task.counters,
        reassigned=reassigned,
        created=created,
        task=task,
        **directed.model_dump(),
    )


def task_view(rt: Runtime, conn: Conn, task_id: str) -> TaskView:
    """Everything about a task: counters, limits, files, tests, what holds it."""
    task = load_task(conn, task_id)
    holding = escalation_lookups.holding(conn, task_id)
    records, occurrences = failure_store.count_for_task(conn, task_id)
    files, files_count = task_store.latest_modified_files(conn, task, MODIFIED_FILES_SHOWN)
    escalations, escalation_count = escalation_lookups.latest_ids_for_task(
        conn, task_id, ESCALATION_IDS_SHOWN
    )
    return TaskView(
        task=task,
        counters=task.counters,
        thresholds=task.thresholds,
        modified_files=files,
        modified_count=files_count,
        test_history=progress_store.list_test_runs(conn, task_id, TEST_HISTORY),
        pending_escalation=holding,
        escalation_ids=escalations,
        escalation_count=escalation_count,
        failure_records=records,
        failure_occurrences=occurrences,
        **direct(rt, conn, task).model_dump(),
    )


async def get_task(rt: Runtime, task_id: str) -> TaskView:
    """Everything about a task: counters, limits, files, tests, what holds it."""
    return await rt.db.read(lambda conn: task_view(rt, conn, task_id))


async def timeline(rt: Runtime, task_id: str, after: int = 0, size: int = TIMELINE_PAGE) -> TimelinePage:
    """The task's history after the action ``after`` (0: from its start), oldest first: at most
    ``size`` entries in words, with the files each touched and where the page stands."""
    if not 1 <= size <= TIMELINE_PAGE:
        raise InvalidInput("size", f"{size} entries per page; give 1 to {TIMELINE_PAGE}")
    if not 0 <= after <= SQLITE_INTEGER_MAX:
        raise InvalidInput(
            "after", f"{str(after)[:40]} is not a place in the timeline; give 0 to {SQLITE_INTEGER_MAX}"
        )

    def read(conn: Conn) -> TimelinePage:
        load_task(conn, task_id)  # an unknown task is refused, not an empty timeline
        actions = progress_store.actions_after(conn, task_id, after, size + 1)
        shown, more = actions[:size], len(actions) > size
        before = progress_store.count_actions(conn, task_id, after) if after else 0
        seqs = sorted({seq for _, a in shown if (seq := _failure_seq(a.detail)) is not None})
        errors = {
            failure_store.failure_id(seq): headline(message)
            for seq, message in failure_store.messages(conn, seqs).items()
        }
        return TimelinePage(
            task_id=task_id,
            entries=[
                timeline_rules.entry(before + n, action_id, action, errors)
                for n, (action_id, action) in enumerate(shown, 1)
            ],
            total=progress_store.count_actions(conn, task_id),
            before=before,
            next_after=shown[-1][0] if more else None,
        )

    return await rt.db.read(read)


def _failure_seq(detail: dict[str, object]) -> int | None:
    value = detail.get("failure_id")
    return failure_store.parse_failure_id(value) if isinstance(value, str) else None


async def end_task(rt: Runtime, *, task_id: str, outcome: str, note: str | None = None) -> EndTaskResult:
    """Complete or abandon a task.

    ``completed`` follows the double-entry rule (``COMPLETION_REFUSALS``, docs/tools.md).
    ``abandoned``
    always works and closes the task's pending escalations as ``agent_terminated``.
    """
    now = rt.now()

    def end(conn: Conn) -> tuple[EndTaskResult, list[Escalation]]:
        task = load_task(conn, task_id)
        stop = stop_if_ended(rt, conn, task)
        if stop is not None:
            ended = EndTaskResult(
                task_id=task_id,
                status=task.status,
                note=task.end_note,
                closed_escalations=[],
                **stop.model_dump(),
            )
            return ended, []
        if outcome == "completed":
            _check_double_entry(rt, conn, task)
        closed: list[int] = []
        closing_status = "agent_terminated" if outcome == "abandoned" else "withdrawn"
        for escalation in escalation_lookups.pending_for_task(conn, task_id):
            escalation_store.close_unanswered(conn, escalation.escalation_id, closing_status, now)
            closed.append(escalation.escalation_id)
        task_store.end(conn, task_id, outcome, note, now)
        progress_store.add_action(conn, task, "end_task", {"outcome": outcome, "note": note}, now)
        task = load_task(conn, task_id)
        result = EndTaskResult(
            task_id=task_id,
            status=task.status,
            note=note,
            closed_escalations=closed,
            **direct(rt, conn, task).model_dump(),
        )
        changed = [e for e in (escalation_store.get(conn, i) for i in closed) if e is not None]
        return result, changed

    result, changed = await rt.db.write(end)
    for closed_escalation in changed:
        await rt.publish(closed_escalation, "closed")
    return result


# Each condition that refuses end_task(completed) gives the facts its refusal names, or None;
# the words are the template ``completion_refused_<condition>`` (prompts/tools.toml), a list
# of names (steps, stages) shown as its first few and how many more.
Refusal = Callable[[Conn, Task], dict[str, object] | None]


def _escalation_holds(conn: Conn, task: Task) -> dict[str, object] | None:
    holding = escalation_lookups.blocking_open(conn, task.task_id)
    if holding is None:
        return None
    return {"escalation_id": holding.escalation_id}


def _tests_fail(conn: Conn, task: Task) -> dict[str, object] | None:
    latest = progress_store.latest_test_run(conn, task.task_id)
    if latest is None or latest.failed == 0:
        return None
    return {"failed": latest.failed}


def _attempt_rejected(conn: Conn, task: Task) -> dict[str, object] | None:
    rejected = feedback_store.steps_with_rejected_latest(conn, task.task_id)
    if not rejected:
        return None
    return {"steps": rejected}


def _findings_outstanding(conn: Conn, task: Task) -> dict[str, object] | None:
    findings = feedback_store.outstanding_findings(conn, task.task_id)
    if not findings:
        return None
    return {"stages": sorted({f.stage for f in findings})}


# The double-entry rule: each condition that refuses end_task(completed), in the order they
# are checked. The tool's description and the docs name every one (tests/test_vocabulary.py).
COMPLETION_REFUSALS: dict[str, Refusal] = {
    "escalation_holds": _escalation_holds,
    "tests_fail": _tests_fail,
    "attempt_rejected": _attempt_rejected,
    "findings_outstanding": _findings_outstanding,
}


def _check_double_entry(rt: Runtime, conn: Conn, task: Task) -> None:
    for condition, refusal in COMPLETION_REFUSALS.items():
        facts = refusal(conn, task)
        if facts is not None:
            values = {k: listed_few(rt.prompts, v) if isinstance(v, list) else v for k, v in facts.items()}
            raise Conflict(
                rt.prompts.render(f"completion_refused_{condition}", task_id=task.task_id, **values)
            )


async def list_tasks(rt: Runtime, *, status: str | None = None, limit: int = 50) -> list[Task]:
    """Tasks, most recently updated first."""
    return await rt.db.read(lambda conn: task_store.list_tasks(conn, status=status, limit=limit))
