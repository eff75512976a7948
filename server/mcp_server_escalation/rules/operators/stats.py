"""Escalation statistics as pure functions of the escalations' times and ``now``.

- Time to resolution: from ``created_at`` to the human's ``responded_at``. Escalations that
  closed without a human (the agent withdrew its question, the task was abandoned) have no
  resolution time and are left out of the share answered within an hour.
- Median: the usual one (mean of the two middle values for an even count); p95: nearest
  rank (the smallest value with at least 95% of the values at or below it), which is always
  a measured value.
- Share resolved within one hour (the goal is 95%): among escalations whose outcome at one
  hour is known, i.e. answered ones, plus pending ones already older than an hour (misses);
  pending ones younger than an hour are still undecided and not counted.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

from ...clock import parse_iso
from ...models.reports import DayCount, ResolutionStats

HOUR_SECONDS = 3600.0
SC010_TARGET = 0.95
# The console's chart of answer times: each bucket holds the answers at or below its bound
# (5 min, 15 min, 1 h, 4 h), the last one the rest. The hour is a bound, so the buckets up
# to it add up to ``within_hour``.
ANSWER_TIME_BOUNDS = (300.0, 900.0, HOUR_SECONDS, 4 * HOUR_SECONDS)

# Days the stats show escalations per day for, today included.
PER_DAY_DAYS = 14

# (type, status, created_at, responded_at, response_type) of one escalation.
Timing = tuple[str, str, str, str | None, str | None]


def median(values: list[float]) -> float | None:
    """The median, or None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def nearest_rank(values: list[float], fraction: float) -> float | None:
    """The nearest-rank percentile (``fraction`` in (0, 1]), or None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]


def resolution_seconds(timing: Timing) -> float | None:
    """Seconds from creation to a human's answer, or None when no human answered."""
    _type, _status, created_at, responded_at, response_type = timing
    if responded_at is None or response_type in (None, "withdraw"):
        return None
    return max(0.0, (parse_iso(responded_at) - parse_iso(created_at)).total_seconds())


def resolution(timings: list[Timing], now: datetime) -> ResolutionStats:
    """Median, p95 and the within-one-hour share of human resolutions."""
    seconds = [s for t in timings if (s := resolution_seconds(t)) is not None]
    overdue = sum(
        1 for t in timings if t[1] == "pending" and (now - parse_iso(t[2])).total_seconds() > HOUR_SECONDS
    )
    within = sum(1 for s in seconds if s <= HOUR_SECONDS)
    counted = len(seconds) + overdue
    share = round(within / counted, 4) if counted else None
    return ResolutionStats(
        answered=len(seconds),
        median_seconds=_round(median(seconds)),
        p95_seconds=_round(nearest_rank(seconds, 0.95)),
        within_hour=within,
        counted=counted,
        within_hour_share=share,
        sc010_met=None if share is None else share >= SC010_TARGET,
    )


def answer_time_buckets(timings: list[Timing]) -> list[int]:
    """How many human answers fell in each bucket of ``ANSWER_TIME_BOUNDS`` (plus the rest)."""
    buckets = [0] * (len(ANSWER_TIME_BOUNDS) + 1)
    for timing in timings:
        seconds = resolution_seconds(timing)
        if seconds is not None:
            index = next((i for i, bound in enumerate(ANSWER_TIME_BOUNDS) if seconds <= bound), -1)
            buckets[index] += 1
    return buckets


def counts(timings: list[Timing]) -> tuple[dict[str, int], dict[str, int], dict[str, dict[str, int]]]:
    """Escalations by type, by status, and by type then status (keys sorted)."""
    by_type: dict[str, int] = {}
    by_status: dict[str, int] = {}
    matrix: dict[str, dict[str, int]] = {}
    for type_, status, *_ in timings:
        by_type[type_] = by_type.get(type_, 0) + 1
        by_status[status] = by_status.get(status, 0) + 1
        row = matrix.setdefault(type_, {})
        row[status] = row.get(status, 0) + 1
    return (
        dict(sorted(by_type.items())),
        dict(sorted(by_status.items())),
        {k: dict(sorted(v.items())) for k, v in sorted(matrix.items())},
    )


def per_day(timings: list[Timing], now: datetime, days: int = PER_DAY_DAYS) -> list[DayCount]:
    """The escalations raised on each of the last ``days`` days (UTC, today the last), by type
    (sorted), with how many a person answered and how many wait; a day without any is there
    with zeros, so a chart's days are evenly spaced."""
    today = now.astimezone(UTC).date()
    first = today - timedelta(days=days - 1)
    found: dict[str, list[Timing]] = {}
    for timing in timings:
        raised = parse_iso(timing[2]).astimezone(UTC).date()
        if first <= raised <= today:
            found.setdefault(raised.isoformat(), []).append(timing)
    counted = []
    for offset in range(days):
        day = (first + timedelta(days=offset)).isoformat()
        those = found.get(day, [])
        by_type, _by_status, _matrix = counts(those)
        counted.append(
            DayCount(
                day=day,
                by_type=by_type,
                total=len(those),
                answered=sum(1 for t in those if resolution_seconds(t) is not None),
                waiting=sum(1 for t in those if t[1] == "pending"),
            )
        )
    return counted


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)
