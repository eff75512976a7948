"""What the operator side reports: notification deliveries, statistics, backups.

Kept apart from the change feed's models so that a server that never reports loads none of
these at start-up.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import Record


class Delivery(Record):
    """The delivery of one announcement (creation or re-notification) to one notifier."""

    outbox_id: int
    escalation_id: int
    event: Literal["created", "renotify"]
    notifier: str = Field(description="'command:<digest>' or 'webhook:<digest>' of the target")
    attempts: int
    next_attempt_at: str | None
    lease_until: str | None
    delivered_at: str | None
    last_error: str | None


class NotifierStats(Record):
    """Delivery counts of one notifier."""

    notifier: str
    delivered: int
    waiting: int = Field(description="Not delivered yet (retrying, in flight or superseded)")
    failed_attempts: int = Field(description="Attempts that did not deliver")
    last_error: str | None


class ResolutionStats(Record):
    """How fast humans answer."""

    answered: int = Field(description="Escalations with a human response (withdrawals excluded)")
    median_seconds: float | None
    p95_seconds: float | None = Field(description="Nearest-rank 95th percentile")
    within_hour: int
    counted: int = Field(
        description="Escalations whose 1-hour outcome is known: answered, or pending for over an hour"
    )
    within_hour_share: float | None = Field(description="within_hour / counted (the goal is >= 0.95)")
    sc010_met: bool | None


class VerdictCount(Record):
    """Operators' verdicts on one escalation type in one project."""

    type: str
    project: str
    useful: int
    false_alarm: int


class ThresholdAdvice(Record):
    """A type whose false alarms outnumber its useful escalations in a project: raise it."""

    type: str
    project: str
    threshold: str = Field(description="The threshold that decides when the type fires")
    useful: int
    false_alarm: int


class ReplayFigure(Record):
    """What the replay of real agent runs measured for one trigger type on one corpus."""

    corpus: str
    type: str = Field(description="A trigger type, or any for every pause")
    runs: int = Field(description="Runs replayed")
    paused: int = Field(description="Runs the type paused")
    precision: float = Field(description="Of the runs it paused, the share that were going to fail")
    base_rate: float = Field(description="The share of all runs that were going to fail")


class TypeJudgement(Record):
    """One trigger type: how often operators judged it useful (every project), beside the
    replay's precision for it on each corpus."""

    type: str
    useful: int
    false_alarm: int
    useful_share: float | None = Field(description="useful / (useful + false_alarm); None without verdicts")
    replay: list[ReplayFigure]


class DayCount(Record):
    """The escalations raised on one day (UTC), by type, and how many of them a person answered
    and how many still wait."""

    day: str = Field(description="YYYY-MM-DD, UTC")
    by_type: dict[str, int]
    total: int
    answered: int = Field(description="Answered by a person (withdrawals excluded)")
    waiting: int = Field(description="Still pending")


class StatsReport(Record):
    """``mcp-server-escalation stats``."""

    total: int
    by_type: dict[str, int]
    by_status: dict[str, int]
    by_type_and_status: dict[str, dict[str, int]]
    resolution: ResolutionStats
    notifications: list[NotifierStats]
    verdicts: list[VerdictCount] = Field(
        default_factory=list, description="Operators' verdicts (useful, false alarm) per type and project"
    )
    raise_thresholds: list[ThresholdAdvice] = Field(
        default_factory=list, description="Where false alarms outnumber useful escalations"
    )
    judged_by_type: list[TypeJudgement] = Field(
        default_factory=list,
        description="Per trigger type: operators' verdicts beside the replay's precision",
    )
    per_day: list[DayCount] = Field(
        default_factory=list, description="The last 14 days, oldest first (days without escalations too)"
    )
    generated_at: str


class BackupReport(Record):
    """``mcp-server-escalation db backup PATH``."""

    source: str
    destination: str
    bytes: int
    schema_version: int
    escalations: int
    tasks: int
    integrity: str = Field(description="PRAGMA integrity_check of the copy ('ok')")


class StoreCheck(Record):
    """``mcp-server-escalation db check [--repair]``."""

    path: str
    integrity: list[str] = Field(description="PRAGMA integrity_check: ['ok'] or the problems found")
    search_index: Literal["ok", "damaged", "rebuilt"]
    search_index_problem: str | None = Field(description="what the index check found, if anything")
    failure_records: int
    ok: bool = Field(description="the file is whole and the search index is (or is now) whole")


class CopyReport(Record):
    """``mcp-server-escalation db copy SOURCE TARGET``."""

    source: str
    target: str
    rows: dict[str, int] = Field(description="per table: rows in the target, equal to the source's")
    total: int
