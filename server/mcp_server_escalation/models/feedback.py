"""Attempts, escalation cycles, review findings and the reconstructed feedback."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import Record
from .escalations import Escalation
from .guidance import GuidanceItem
from .results import Directed


class Attempt(Record):
    """One verdict on a step's output (seed 000's artifact)."""

    attempt_number: int
    cycle: int
    step: str
    status: Literal["accepted", "rejected"]
    feedback: str
    guard: str | None
    artifact: str | None
    agent_id: str
    at: str


class CycleFeedback(Record):
    """The failure summary a stagnation cycle left for a step."""

    cycle: int = Field(description="1 for the step's first escalation feedback, then 2, ...")
    source_step: str = Field(description="The step whose stagnation produced it")
    source_cycle: int
    summary: str
    at: str


class RetryEntry(Record):
    """Rejected attempts with identical feedback, collapsed."""

    attempt_numbers: list[int]
    count: int
    feedback: str
    guard: str | None
    cycles: list[int]
    first_at: str
    last_at: str


class ReviewFinding(Record):
    """A failing review or tool stage's finding (seed 001)."""

    finding_id: int
    stage: str
    kind: Literal["review", "tool"]
    iteration: int
    status: Literal["fail", "partial_success"]
    failure_reason: str
    response: str
    at: str
    resolved_at: str | None


class HumanResponse(Record):
    """What a human answered to one of the task's escalations."""

    escalation_id: int
    type: str
    response_type: str
    content: str
    responder: str | None
    at: str
    new_file_limit: int | None = None
    add_scope: list[str] = Field(default_factory=list)


class Stagnation(Record):
    """An escalation cycle that ``record_attempt`` just started."""

    similar_count: int = Field(description="Rejected attempts of the cycle found similar")
    failure_summary: str
    escalated_to: list[str] = Field(description="Steps that received the summary")
    new_cycle: int
    human_escalation: bool = Field(description="True once max_escalation_cycles is passed")


class AttemptResult(Directed):
    attempt_number: int
    cycle: int
    stagnation: Stagnation | None
    escalation: Escalation | None


class ReviewResult(Record):
    finding: ReviewFinding | None
    cleared: int = Field(description="Findings of this stage resolved by this call")
    outstanding: list[ReviewFinding] = Field(description="Every outstanding finding of the task")


class FeedbackResult(Record):
    task_id: str
    step: str
    cycle: int = Field(description="The step's current escalation cycle")
    escalation_history: list[CycleFeedback]
    retry_history: list[RetryEntry]
    review_findings: list[ReviewFinding]
    human_responses: list[HumanResponse]
    guidance: list[GuidanceItem]
    rendered: str
    omitted: int = Field(description="Entries dropped (oldest first) to honour max_chars")
