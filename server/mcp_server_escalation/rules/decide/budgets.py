"""Budgets: caps on a task's recorded tool calls, minutes and failing test runs.

A budget pauses the task and asks a human rather than ending it (docs/triggers.md,
"Budgets"). Every service that records a call counts it here (``count_call``) and asks
``budget_fires`` which budgets the counters after it, and the clock, used up. Both read
only the task's counters, so the cost of a call does not grow with its history; the
service adds each budget's headline, the task's latest error (services/budgets.py).
"""

from __future__ import annotations

from ...clock import parse_iso
from ...models.tasks import Counters
from ...models.thresholds import Thresholds
from ..wording.words import readable_time
from . import triggers
from .decisions import Fires, Wording
from .triggers import Firing


def count_call(counters: Counters, *, call: bool = True, failing_test_run: bool = False) -> Counters:
    """The counters after one recorded call (``call`` False: another service counted it)."""
    if call:
        counters = triggers.after_tool_call(counters)
    if failing_test_run:
        counters = triggers.after_failing_test_run(counters)
    return counters


def budget_fires(counters: Counters, t: Thresholds, *, created_at: str, now: str) -> tuple[Fires, ...]:
    """Every budget of a task (started ``created_at``) that ``counters`` used up by ``now``.

    Minutes count from the last acknowledged budget (``budget_since``), else the task's start.
    """
    # Most tasks set no budget: their calls skip reading the clock's two timestamps.
    if t.max_tool_calls is None and t.max_minutes is None and t.max_failing_test_runs is None:
        return ()
    since = counters.budget_since or created_at
    fired = triggers.budgets(counters, t, since=parse_iso(since), now=parse_iso(now))
    return tuple(_budget(firing, since) for firing in fired)


def _budget(firing: Firing, since: str) -> Fires:
    name = firing.observed["budget"]
    threshold = triggers.BUDGET_THRESHOLDS[name]
    limit, used = firing.criteria[threshold], firing.observed["used"]
    # The summary is read (headline, notification, the model's message): the time as a person
    # writes it; the facts keep the stored timestamp.
    said = readable_time(since)
    summary = Wording(f"trigger_budget_{name}", {"used": used, "limit": limit, "since": said})
    facts = {"budget": name, "threshold": threshold, "limit": limit, "used": used, "since": since}
    return Fires(firing, summary, key=triggers.BUDGET_KEY_PREFIX + name, facts=facts)
