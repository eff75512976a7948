"""Budgets: the store's side of ``rules.decide.budgets``.

``rules.decide.budgets.budget_fires`` decides which budgets a call used up; ``budget_evidence``
adds what only the store holds, each budget's headline (the task's latest error), for the
services that do not carry budgets in a decision of their own (failures, attempts).
"""

from __future__ import annotations

from ..models.tasks import Counters, Task
from ..rules.decide.budgets import budget_fires
from ..store.sql import Conn
from .firing import Evidence
from .headlines import counted_evidence
from .runtime import Runtime


def budget_evidence(rt: Runtime, conn: Conn, task: Task, counters: Counters, now: str) -> list[Evidence]:
    """A trigger for every budget of the task that ``counters`` (and the clock) used up."""
    fires = budget_fires(counters, task.thresholds, created_at=task.created_at, now=now)
    return [counted_evidence(rt, conn, task.task_id, budget) for budget in fires]
