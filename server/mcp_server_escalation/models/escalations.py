"""Escalations, their triggers and the human's response."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from .base import Record
from .limits import Directive, EscalationStatus, EscalationType, Priority, ResponseType


class Trigger(Record):
    """One objective reason for an escalation: the threshold and what was measured."""

    type: EscalationType
    criteria: dict[str, Any] = Field(description="The threshold that was reached")
    observed: dict[str, Any] = Field(description="The measured values at the time")
    summary: str = Field(description="One line for the operator")
    at: str
    fired_count: int = Field(1, description="How often it fired while the escalation was open")
    key: str = Field(
        "",
        description="Identity within the escalation (type, plus fingerprint for errors); "
        "its facts are context.evidence[key]",
    )


class EscalationRef(Record):
    """An escalation named in a few fields: which one holds a task, and whether it changed."""

    escalation_id: int
    type: EscalationType
    status: EscalationStatus
    revision: int = Field(description="Goes up with every change; get_escalation's known_revision")
    response_type: ResponseType | None = Field(description="The answer's type, once answered")


class EscalationResponse(Record):
    """What a human (or, for withdraw, the agent) answered."""

    response_type: ResponseType
    content: str
    new_file_limit: int | None = None
    add_scope: list[str] = Field(default_factory=list)
    responder: str | None = None
    responded_at: str


class Escalation(Record):
    """The full escalation record."""

    escalation_id: int
    task_id: str
    agent_id: str
    type: EscalationType
    triggers: list[Trigger]
    priority: Priority
    blocking: bool
    status: EscalationStatus
    response_options: list[ResponseType]
    context: dict[str, Any]
    reason: str | None
    question: str | None
    options: list[str]
    response: EscalationResponse | None
    delivered_at: str | None
    acknowledged_at: str | None
    acknowledgement_note: str | None
    follow_up_of: int | None
    revision: int
    created_at: str
    updated_at: str


class EscalationSummary(Record):
    """A list row: enough to pick an escalation to look at."""

    escalation_id: int
    task_id: str
    agent_id: str
    type: EscalationType
    trigger_types: list[str]
    priority: Priority
    blocking: bool
    status: EscalationStatus
    headline: str
    created_at: str
    updated_at: str


class ToldAtFiring(Record):
    """What the tool result that created an escalation told its agent to do, as it was told."""

    directive: Directive
    message: str
    told_at: str


class QueuePlace(Record):
    """A place in the operator's queue (pending escalations first, then answers the agent has
    not acknowledged; newest first in each): where the next page starts, after it."""

    answered: bool
    escalation_id: int


class QueuePage(Record):
    """One page of the operator's queue, and where it stands in the whole queue."""

    escalations: list[Escalation]
    total: int = Field(description="How many escalations the whole (filtered) queue holds")
    before: int = Field(description="How many of them come before this page")


class ReviewedEscalation(Record):
    """A list row as an operator reviews it (the CLI's list, the console's answered page):
    the summary, the task's project, the answer, and the operator's verdict, none of which
    the agent's list carries."""

    summary: EscalationSummary
    project: str | None
    response: EscalationResponse | None
    verdict: str | None = Field(None, description="useful or false_alarm, once an operator judged it")
    judged_by: str | None = None
