"""Attempts, escalation cycles, review findings and the reconstructed feedback."""

from __future__ import annotations

from typing import Any, Literal, NamedTuple

from pydantic import Field

from .base import Record
from .escalations import Escalation
from .results import FIRED_ESCALATION, Directed


class Attempt(Record):
    """One verdict on a step's output."""

    attempt_number: int
    cycle: int
    step: str
    status: Literal["accepted", "rejected"]
    feedback: str
    guard: str | None
    artifact: str | None
    agent_id: str
    at: str


class RetryEntry(NamedTuple):
    """One entry of a step's retry history: rejected attempts with identical feedback (after
    strip), collapsed as they arrive (migration 8). A plain tuple: read by the dozen per call."""

    feedback: str
    attempts: str  # their attempt numbers, oldest first: "3, 7, 12"
    attempt_count: int
    first_attempt: int
    guard: str | None  # the latest attempt's
    at: str  # the latest attempt's time: entries are dropped oldest first by it


class CycleFeedback(Record):
    """The failure summary a stagnation cycle left for a step."""

    cycle: int = Field(description="1 for the step's first escalation feedback, then 2, ...")
    source_step: str = Field(description="The step whose stagnation produced it")
    source_cycle: int
    summary: str
    at: str


class ReviewFinding(Record):
    """A failing review or tool stage's finding."""

    finding_id: int
    stage: str
    kind: Literal["review", "tool"]
    iteration: int
    status: Literal["fail", "partial_success"]
    failure_reason: str
    response: str
    at: str
    resolved_at: str | None


class FindingEntry(NamedTuple):
    """What feedback reconstruction reads of an outstanding review finding (a plain row)."""

    finding_id: int
    stage: str
    kind: str
    iteration: int
    status: str
    failure_reason: str
    response: str
    at: str


class HumanResponse(NamedTuple):
    """What a human answered to one of the task's escalations."""

    escalation_id: int
    type: str
    response_type: str
    content: str
    responder: str | None
    at: str


class Stagnation(Record):
    """An escalation cycle that ``record_attempt`` just started."""

    similar_count: int = Field(description="Rejected attempts of the cycle found similar")
    failure_summary: str
    escalated_to: list[str] = Field(description="Steps that received the summary")
    new_cycle: int
    human_escalation: bool = Field(description="True once max_escalation_cycles is passed")


class AttemptResult(Directed):
    attempt_number: int | None = Field(description="Null when nothing was recorded (the task ended)")
    cycle: int
    stagnation: Stagnation | None
    escalation: Escalation | None = Field(description=FIRED_ESCALATION)


class ReviewResult(Directed):
    finding: ReviewFinding | None
    cleared: int = Field(description="Findings of this stage resolved by this call")
    outstanding: list[ReviewFinding] = Field(
        description="The latest outstanding findings of the task (at most 10), texts clipped"
    )
    outstanding_count: int = Field(description="Every outstanding finding of the task, shown or not")


def _untyped_items(schema: dict[str, Any]) -> None:
    schema.pop("items", None)


def _ids(description: str, *, item: str = "an integer") -> Any:
    """An id list, published as an array whose item type only its description states.

    A client validates ``structuredContent`` against the output schema, and the SDK's
    ``jsonschema`` spends about 5 us on each typed item: the ~220 ids of a 200-attempt step
    took 1.0-1.7 ms, more than a whole no-op call, against 0.08 ms untyped. The ids are
    ours, typed by this model on the way out; nothing a client checks would catch anything.
    """
    return Field(description=f"{description} (each {item})", json_schema_extra=_untyped_items)


class FeedbackResult(Record):
    """A step's feedback: ``rendered`` is what the model reads; each section lists what of it
    the text shows, by id, in the text's order (the words are in ``rendered`` only)."""

    task_id: str
    step: str
    cycle: int = Field(description="The step's current escalation cycle")
    escalation_history: list[int] = _ids("The cycle number of each escalation feedback entry shown")
    retry_history: list[int] = _ids(
        "Per retry entry shown, its first attempt number (the text lists all its attempts)"
    )
    review_findings: list[int] = _ids("finding_id of each outstanding review finding shown")
    human_responses: list[int] = _ids("escalation_id of each human answer shown")
    guidance: list[str] = _ids("failure_id of each guidance line shown, best first", item="a string")
    rendered: str
    omitted: int = Field(description="Entries dropped (oldest first) to honour max_chars")
