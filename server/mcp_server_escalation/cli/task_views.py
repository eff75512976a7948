"""``tasks list``, ``tasks show ID`` and ``tasks timeline ID``: what an operator needs to judge a
task at a glance, and its story.

``--json`` prints exactly what the MCP tools return (``get_task``'s view; the task records),
so scripts and agents read the same fields.
"""

from __future__ import annotations

import argparse
import json
import shlex

from ..models.escalations import EscalationSummary
from ..models.results import TaskView
from ..models.tasks import TimelinePage
from ..rules.decide.triggers import COUNTER_LIMITS
from ..rules.wording.words import (
    absent,
    counted,
    criteria_words,
    field_words,
    name_words,
    readable_time,
    yes_no,
)
from ..services import escalation_lists, tasks
from ..services.runtime import Runtime
from .escalation_view import summary_lines
from .monitor import out, table
from .readable import INDENT, labelled, store_flag, terminal_width, wrap

LIST_LIMIT = 200


async def run(rt: Runtime, args: argparse.Namespace) -> int:
    """Dispatch ``tasks list``, ``tasks show`` and ``tasks timeline``."""
    width = terminal_width()
    if args.action == "timeline":
        return await _timeline(rt, args, width)
    if args.action == "show":
        view = await tasks.get_task(rt, args.id)  # an unknown id: worded in cli/operator.py
        if args.json:
            out(json.dumps(view.model_dump(mode="json"), indent=2, sort_keys=True))
            return 0
        listed = await escalation_lists.list_escalations(rt, status="all", task_id=args.id, limit=LIST_LIMIT)
        for line in show_lines(view, listed.escalations, width, store_flag(rt)):
            out(line)
        return 0
    found = await tasks.list_tasks(rt, status=args.status, limit=max(1, args.limit))
    if args.json:
        out(json.dumps([t.model_dump(mode="json") for t in found], indent=2, sort_keys=True))
        return 0
    if not found:
        out("no tasks" + (f" with status {args.status}" if args.status else ""))
        return 0
    pending = await escalation_lists.list_escalations(rt, status="pending", limit=LIST_LIMIT)
    open_by_task: dict[str, list[str]] = {}
    for s in sorted(pending.escalations, key=lambda s: s.escalation_id):
        open_by_task.setdefault(s.task_id, []).append(f"#{s.escalation_id}")
    rows = [
        [
            t.task_id,
            name_words(t.status),
            t.agent_id,
            f"{t.counters.files_modified}/{t.thresholds.files_modified_exceeds}",
            f"{t.counters.consecutive_same_error}/{t.thresholds.same_error_repeated}",
            f"{t.counters.verification_attempts}/{t.thresholds.total_verification_attempts}",
            ",".join(open_by_task.get(t.task_id, [])) or absent("escalations"),
            t.title,
        ]
        for t in found
    ]
    headers = ["TASK", "STATUS", "AGENT", "FILES", "SAME-ERR", "VERIFY", "PENDING", "TITLE"]
    for line in table(headers, rows, width=width):
        out(line)
    return 0


async def _timeline(rt: Runtime, args: argparse.Namespace, width: int) -> int:
    page = await tasks.timeline(rt, args.id, args.after)  # an unknown id: worded in cli/operator.py
    if args.json:
        out(json.dumps(page.model_dump(mode="json"), indent=2, sort_keys=True))
        return 0
    for line in timeline_lines(page, width, store_flag(rt)):
        out(line)
    return 0


def _limit(value: object) -> str:
    if isinstance(value, bool):
        return yes_no(value)
    return "off" if value is None else str(value)  # a budget that is not set


def _limit_pairs(limits: dict[str, object]) -> str:
    return ", ".join(f"{field_words(k)} {_limit(v)}" for k, v in sorted(limits.items()))


def show_lines(view: TaskView, history: list[EscalationSummary], width: int, store: str = "") -> list[str]:
    """A task as an operator reads it on a terminal of ``width`` columns (``store``: the
    ``--db`` of the printed command, when the store is not the default one)."""
    timeline = f"mcp-server-escalation{store} tasks timeline {shlex.quote(view.task.task_id)}"
    return [
        *_task_lines(view, width),
        *_counter_lines(view, width),
        *_file_lines(view, width),
        *_test_lines(view, width),
        f"Failures: {counted(view.failure_records, 'record', 'records')}, "
        f"{counted(view.failure_occurrences, 'occurrence', 'occurrences')}",
        *_history_lines(history, width),
        "",
        *wrap(f"Directive: {view.directive}: {view.message}", width),
        "",
        *wrap(f"Its story, every action in order: {timeline}", width, "", INDENT),
    ]


def _task_lines(view: TaskView, width: int) -> list[str]:
    t = view.task
    lines = [
        *labelled("Task", t.task_id, width, whole_words=True),
        *labelled("", t.title, width),
        *labelled("Status", f"{name_words(t.status)}; agent {t.agent_id} (generation {t.generation})", width),
        *labelled("Project", t.project, width),
        *labelled("Scope", ", ".join(t.scope) or absent("scope"), width),
    ]
    if t.specification:
        lines += labelled("Spec", t.specification, width)
    if t.approach:
        lines += labelled("Approach", f"(operator override) {t.approach}", width)
    ended = f", ended {readable_time(t.ended_at)}" if t.ended_at else ""
    lines += labelled(
        "Created", f"{readable_time(t.created_at)}, updated {readable_time(t.updated_at)}{ended}", width
    )
    return lines


def _counter_lines(view: TaskView, width: int) -> list[str]:
    """The counters against their limits, then the other thresholds and budgets."""
    t = view.task
    counters = view.counters.model_dump()
    limits = view.thresholds.model_dump()
    rows = [
        [field_words(name), str(counters[name]), _limit(limits[limit]), field_words(limit)]
        for name, limit in COUNTER_LIMITS
    ]
    lines = [
        "",
        *table(["COUNTER", "VALUE", "LIMIT", "THRESHOLD"], rows, right=frozenset({1, 2}), width=width),
    ]
    shown = {limit for _, limit in COUNTER_LIMITS}
    # The scope check is a rule: said as the escalation page says it (the Scope line names the scope).
    others = criteria_words({k: v for k, v in limits.items() if k not in shown}, _limit_pairs)
    lines += wrap(f"Other thresholds: {others}", width, "", INDENT)
    if view.thresholds.max_minutes is not None:
        since = readable_time(t.counters.budget_since or t.created_at)
        lines += wrap(f"Minutes budget counts from {since}", width)
    return lines


def _file_lines(view: TaskView, width: int) -> list[str]:
    listed = len(view.modified_files)
    latest = "" if view.modified_count == listed else f"; the latest {listed}"
    files = [line for path in view.modified_files for line in wrap(path, width, INDENT)]
    return ["", f"Modified files ({view.modified_count}{latest})", *(files or ["  -"])]


def _test_lines(view: TaskView, width: int) -> list[str]:
    runs_said = counted(len(view.test_history), "run", "runs")
    title = f"Test history ({runs_said}; baseline {_rate(view.task.baseline_pass_rate)})"
    if not view.test_history:
        return ["", title, "  -"]
    rows = [
        [readable_time(r.at), r.step, str(r.passed), str(r.failed), _rate(r.pass_rate), yes_no(r.improved)]
        for r in view.test_history
    ]
    headers = ["WHEN", "STEP", "PASSED", "FAILED", "RATE", "BETTER THAN BEFORE"]
    runs = table(headers, rows, right=frozenset({2, 3, 4}), width=width - len(INDENT))
    return ["", title, *(f"  {line}" for line in runs)]


def _history_lines(history: list[EscalationSummary], width: int) -> list[str]:
    lines = ["", f"Escalations ({len(history)})"]
    for s in sorted(history, key=lambda s: s.escalation_id):
        lines += [f"{INDENT}{line}" for line in summary_lines(s, width - len(INDENT))]
    return lines if history else [*lines, f"{INDENT}{absent('escalations')}"]


def _rate(rate: float | None) -> str:
    return absent("rate") if rate is None else f"{rate:.0%}"


def timeline_lines(page: TimelinePage, width: int, store: str = "") -> list[str]:
    """A page of the task's timeline: each entry's number, time and what happened, its details
    and files under it, then where the page stands and the command for the next one."""
    if not page.entries:
        return [f"Task {page.task_id}: nothing in its timeline past this point ({page.total} entries in all)"]
    first, last = page.before + 1, page.before + len(page.entries)
    lines = wrap(f"Task {page.task_id}: timeline {first}-{last} of {page.total}, oldest first", width)
    for item in page.entries:
        lines += ["", *wrap(f"{item.number}. {readable_time(item.at)}  {item.what}", width)]
        lines += wrap(item.said, width, INDENT, INDENT)
        if item.failure_id:
            command = f"mcp-server-escalation{store} failures show {item.failure_id}"
            lines += wrap(f"the whole error: {command}", width, INDENT, INDENT * 2)
        if item.files:
            lines += wrap(f"files: {', '.join(item.files)}", width, INDENT, INDENT * 2)
    if page.next_after is not None:
        task = shlex.quote(page.task_id)
        command = f"mcp-server-escalation{store} tasks timeline {task} --after {page.next_after}"
        lines += ["", *wrap(f"next page: {command}", width, "", INDENT)]
    return lines
