"""A task as the store would hand it to a rule: the fields a decide step reads, set by the test."""

from __future__ import annotations

from typing import Any

from mcp_server_escalation.models.tasks import Counters, Task
from mcp_server_escalation.models.thresholds import Thresholds

STARTED = "2026-01-01T09:00:00.000Z"


def a_task(**fields: Any) -> Task:
    """An active task in ``src/**`` started at ``STARTED``; ``fields`` override any column."""
    values: dict[str, Any] = {
        "task_id": "t-1",
        "title": "Fix the basket total",
        "specification": "The basket total must include the discount.",
        "scope": ["src/**"],
        "project": "/repo",
        "agent_id": "agent-1",
        "generation": 1,
        "status": "active",
        "thresholds": Thresholds(),
        "baseline_pass_rate": None,
        "best_pass_rate": None,
        "approach": None,
        "end_note": None,
        "counters": Counters(),
        "created_at": STARTED,
        "updated_at": STARTED,
        "ended_at": None,
    }
    return Task(**(values | fields))
