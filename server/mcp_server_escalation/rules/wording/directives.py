"""What the agent must do next, from the task's status and what holds it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...models.escalations import EscalationRef
from ...models.limits import ENDED_STATUSES, Directive
from ...models.tasks import Task


@dataclass(frozen=True)
class DirectiveDecision:
    """The directive and the template (with its values) that words it."""

    directive: Directive
    template: str
    values: dict[str, Any]


def decide(task: Task, holding: EscalationRef | None) -> DirectiveDecision:
    """stop once the task ended; pause while a blocking escalation holds it; else proceed."""
    if task.status in ENDED_STATUSES:
        # each ending has its own template: the model reads it in words, never the store's key
        return DirectiveDecision("stop", f"directive_stop_{task.status}", {"task_id": task.task_id})
    if holding is not None:
        if holding.status == "pending":
            return DirectiveDecision(
                "pause",
                "directive_pause_pending",
                {
                    "task_id": task.task_id,
                    "escalation_id": holding.escalation_id,
                    "type": holding.type,
                },
            )
        response_type = holding.response_type or holding.status
        return DirectiveDecision(
            "pause",
            "directive_pause_unacknowledged",
            {
                "task_id": task.task_id,
                "escalation_id": holding.escalation_id,
                "response_type": response_type,
            },
        )
    if task.approach:
        return DirectiveDecision(
            "proceed",
            "directive_proceed_with_approach",
            {"task_id": task.task_id, "approach": task.approach},
        )
    return DirectiveDecision("proceed", "directive_proceed", {"task_id": task.task_id})
