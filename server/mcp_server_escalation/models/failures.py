"""Failure records (seed 004's binding schema) and their occurrences."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from .base import Record
from .limits import FailureStatus, Severity


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
