"""Failures as reported, and the records (one per task and fingerprint) that count them."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .base import Record
from .limits import LIST_MAX, FailureStatus, PathText, Severity, ShortText, SignalType, StepName, TaskId

# The limits of a failure's fields, shared by record_failure's flat arguments and the report.
FailureMessage = Annotated[ShortText, Field(min_length=1)]
ErrorName = Annotated[str, Field(max_length=256)]  # a phase, error type, tool name or code
LineNumber = Annotated[int, Field(ge=0, le=100_000_000)]
ContextRefs = Annotated[dict[str, Any], Field(max_length=LIST_MAX)]


# One context reference as record_failure takes it: what kind of thing it points at (file,
# span, artifact_id), and where. A list of these, rather than an object of any keys, so that
# every input schema has a shape (OpenAI's strict mode refuses an object open to any key);
# the store keeps them as kind -> refs (rules/reading/pointers.py). No docstring: it would be
# published as the schema's description, which prompts/tools.toml words.
class Pointer(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    # snake_case, one line: rules/reading/pointers.py checks both, naming the field; the bounds alone
    # are published, as the tool list is what the model reads on every turn.
    kind: Annotated[str, Field(max_length=64)]
    ref: Annotated[str, Field(max_length=512)]


PointerList = Annotated[list[Pointer], Field(max_length=LIST_MAX)]


class FailureReport(BaseModel):
    """One failure as reported, by the agent (``record_failure``) or by a host's hook (a
    failed tool call): what the service classifies, fingerprints and stores.

    ``signal_type`` and ``severity`` left out are decided by the service; ``details`` are
    the facts given about a blocker (``BlockerDetails``, checked by the tool).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    task_id: TaskId
    message: FailureMessage
    signal_type: SignalType | None = None
    severity: Severity | None = None
    step: StepName = "main"
    phase: ErrorName | None = None
    error_type: ErrorName | None = None
    tool_name: ErrorName | None = None
    error_code: ErrorName | None = None
    file: PathText | None = None
    line: LineNumber | None = None
    attempted_action: ShortText | None = None
    observed_outcome: ShortText | None = None
    recommended_adjustment: ShortText | None = None
    context_refs: ContextRefs = Field(default_factory=dict)
    details: dict[str, Any] = Field(default_factory=dict)


class Occurrence(Record):
    """One time a failure happened, with its own location and attempted action."""

    at: str
    agent_id: str
    step: str
    message: str
    file: str | None
    line: int | None
    attempted_action: str | None
    details: dict[str, Any] = Field(default_factory=dict)


class FailureRecord(Record):
    """One record per (task, fingerprint); occurrences keep the individual events."""

    failure_id: str
    task_id: str
    project: str
    step: str
    phase: str | None
    signal_type: str
    classified_by: str = Field(description="'caller' or the name of the pattern that matched")
    severity: Severity
    fingerprint: str
    message: str
    error_type: str | None
    tool_name: str | None
    error_code: str | None
    attempted_action: str | None
    observed_outcome: str | None
    recommended_adjustment: str | None
    context_refs: dict[str, Any]
    details: dict[str, Any]
    status: FailureStatus
    superseded_by: str | None
    occurrence_count: int
    last_seen_at: str
    helpful_count: int
    harmful_count: int
    created_at: str


class OutputLine(Record):
    """One line of an occurrence's output; ``salient``: a line that names the error."""

    text: str
    salient: bool = False


class OutputChange(Record):
    """A line of output removed (``-``) since the occurrence before, or added (``+``)."""

    sign: Literal["-", "+"]
    text: str


class ShownOccurrence(Record):
    """One occurrence with its whole output, and what changed since the one before it."""

    number: int = Field(description="1 for the failure's first occurrence")
    at: str
    agent_id: str
    step: str
    place: str | None = Field(description="file:line, or None when no file was named")
    attempted_action: str | None
    characters: int = Field(description="Length of the whole stored output")
    output: list[OutputLine]
    compared: bool = Field(description="False for the first occurrence shown (nothing before it)")
    previous_place: str | None
    previous_action: str | None
    output_changes: list[OutputChange]
    changes_omitted: int = Field(description="Changed lines beyond those listed")


class WholeFailure(Record):
    """A failure record with the whole output of its latest occurrences, oldest first."""

    failure: FailureRecord
    headline: str
    occurrences: list[ShownOccurrence]
    earlier_omitted: int = Field(description="Older occurrences not shown")
