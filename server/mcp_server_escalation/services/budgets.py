"""Budgets: caps on a task's recorded tool calls, minutes and failing test runs.

A budget pauses the task and asks a human rather than ending it (docs/triggers.md, "Budgets"). The
recording services count each call with ``count_call`` and add ``budget_evidence`` to what
the call fires. Everything is read from the task's counters (and the headline from the task's
latest error): the cost of a call does not grow with its history.
"""

from __future__ import annotations

from ..clock import parse_iso
from ..models.tasks import Counters, Task
from ..rules import triggers
from ..store.db import Conn
from .firing import Evidence
from .headlines import lead_with_latest_error
from .runtime import Runtime


def count_call(counters: Counters, *, call: bool = True, failing_test_run: bool = False) -> Counters:
    """The counters after one recorded call (``call`` False: another service counted it)."""
    if call:
        counters = triggers.after_tool_call(counters)
    if failing_test_run:
        counters = triggers.after_failing_test_run(counters)
    return counters


def budget_evidence(rt: Runtime, conn: Conn, task: Task, counters: Counters, now: str) -> list[Evidence]:
    """A trigger for every budget of the task that ``counters`` (and the clock) used up."""
    t = task.thresholds
    if t.max_tool_calls is None and t.max_minutes is None and t.max_failing_test_runs is None:
        return []
    since = counters.budget_since or task.created_at
    fired = triggers.budgets(counters, t, since=parse_iso(since), now=parse_iso(now))
    evidence: list[Evidence] = []
    for firing in fired:
        name = firing.observed["budget"]
        threshold = triggers.BUDGET_THRESHOLDS[name]
        facts = {
            "budget": name,
            "threshold": threshold,
            "limit": firing.criteria[threshold],
            "used": firing.observed["used"],
            "since": since,
        }
        summary = lead_with_latest_error(
            rt,
            conn,
            task.task_id,
            f"trigger_budget_{name}",
            used=facts["used"],
            limit=facts["limit"],
            since=since,
        )
        evidence.append(Evidence(firing, summary, facts, key=triggers.BUDGET_KEY_PREFIX + name))
    return evidence
