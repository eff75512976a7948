"""Guidance items (the top-k relevant past failures) and audited revisions."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from .base import Record
from .failures import FailureRecord, Occurrence


class GuidanceItem(Record):
    """One past failure, as compact structured guidance."""

    failure_id: str
    severity: str
    signal_type: str
    summary: str = Field(description="Signature: class, error type or tool, normalised message")
    recommended_adjustment: str | None
    occurrence_count: int
    last_seen_at: str
    helpful_count: int
    harmful_count: int
    score: float = Field(description="Deterministic rank score (rounded); exact matches rank first")
    exact_match: bool
    task_id: str
    step: str
    # The item's line of ``rendered``; kept for get_feedback's section, not sent again.
    line: str = Field(exclude=True)


class GuidanceResult(Record):
    items: list[GuidanceItem]
    rendered: str = Field(description="One line per item, best first")
    query: str = Field(description="The text searched: the query, or the step's latest failure (clipped)")
    scope: str
    candidates: int = Field(description="Records considered before ranking")


class Revision(Record):
    """One audited change of a failure record."""

    at: str
    changes: dict[str, Any]
    note: str | None


class FailureView(Record):
    """A failure record with its latest occurrences and its latest revisions."""

    failure: FailureRecord
    occurrences: list[Occurrence] = Field(description="The latest occurrences, oldest first")
    occurrences_omitted: int = Field(
        description="Older occurrences not shown (failure.occurrence_count counts them all)"
    )
    revisions: list[Revision] = Field(description="The latest audited changes, oldest first")
    revisions_omitted: int = Field(description="Older changes not shown")
