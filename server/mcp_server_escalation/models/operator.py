"""The escalation change feed as the operator side reads it (``watch``, client notifications)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import Record
from .escalations import EscalationSummary

ChangeEvent = Literal["created", "updated", "answered", "closed", "delivered", "acknowledged"]


class EscalationChange(Record):
    """One committed change of an escalation, from any process (``escalation_changes``)."""

    change_id: int = Field(description="Position in the store-wide change feed (commit order)")
    escalation_id: int
    task_id: str
    revision: int
    event: ChangeEvent
    status: str
    at: str


class WatchLine(Record):
    """What ``escalations watch --json`` prints per change: the change and the escalation."""

    change_id: int
    event: ChangeEvent
    at: str
    escalation: EscalationSummary
