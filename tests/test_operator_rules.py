"""The operator side's pure rules: when to send, retry and re-send; resolution statistics."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from mcp_server_escalation.clock import iso
from mcp_server_escalation.models.reports import Delivery
from mcp_server_escalation.rules.operators import stats
from mcp_server_escalation.rules.operators.notify import (
    is_due,
    next_check,
    notifier_key,
    renotify_at,
    renotify_due,
    retry_delay,
)

NOW = datetime(2026, 11, 21, 10, 0, tzinfo=UTC)


def _delivery(**state: object) -> Delivery:
    values: dict[str, object] = {
        "outbox_id": 1,
        "escalation_id": 7,
        "event": "created",
        "notifier": "webhook:abc",
        "attempts": 0,
        "next_attempt_at": None,
        "lease_until": None,
        "delivered_at": None,
        "last_error": None,
    }
    values.update(state)
    return Delivery.model_validate(values)


def _at(seconds: float) -> str:
    return iso(NOW + timedelta(seconds=seconds))


@pytest.mark.parametrize(
    ("state", "due"),
    [
        ({}, True),
        ({"attempts": 1, "next_attempt_at": _at(-1)}, True),
        ({"attempts": 1, "next_attempt_at": _at(0)}, True),
        ({"attempts": 1, "next_attempt_at": _at(5)}, False),
        ({"attempts": 1, "next_attempt_at": _at(-5), "lease_until": _at(3)}, False),
        ({"attempts": 1, "next_attempt_at": _at(-5), "lease_until": _at(-1)}, True),
        ({"attempts": 2, "next_attempt_at": _at(-5), "delivered_at": _at(-4)}, False),
    ],
    ids=["never-tried", "retry-passed", "retry-now", "retry-later", "leased", "lease-ran-out", "delivered"],
)
def test_a_delivery_is_due_when_untried_or_its_retry_time_came_and_nobody_holds_it(
    state: dict[str, object], due: bool
) -> None:
    assert is_due(_delivery(**state), NOW) is due


def test_the_next_check_is_when_the_lease_or_the_retry_runs_out() -> None:
    assert next_check(_delivery(attempts=1, next_attempt_at=_at(5), lease_until=_at(9))) == NOW + timedelta(
        seconds=9
    )
    assert next_check(_delivery(attempts=1, next_attempt_at=_at(5))) == NOW + timedelta(seconds=5)
    assert next_check(_delivery(delivered_at=_at(0))) is None


def test_retries_back_off_exponentially_up_to_the_cap_and_never_stop() -> None:
    assert [retry_delay(n, 5, 300) for n in range(1, 9)] == [5, 10, 20, 40, 80, 160, 300, 300]
    assert retry_delay(10_000, 5, 300) == 300


def test_renotification_falls_due_after_renotify_minutes_and_zero_turns_it_off() -> None:
    newest = NOW - timedelta(minutes=30)
    assert renotify_due(newest, NOW, 30) is True
    assert renotify_due(newest + timedelta(seconds=1), NOW, 30) is False
    assert renotify_due(newest - timedelta(days=9), NOW, 0) is False
    assert renotify_at(NOW, 30) == NOW + timedelta(minutes=30)
    assert renotify_at(NOW, 0) is None


def test_a_notifier_key_is_stable_and_never_shows_the_target() -> None:
    url = "https://chat.example/hooks/T0/SECRET-TOKEN"
    assert notifier_key("webhook", url) == notifier_key("webhook", url)
    assert notifier_key("webhook", url).startswith("webhook:")
    assert "SECRET" not in notifier_key("webhook", url)
    assert notifier_key("webhook", url) != notifier_key("webhook", url + "x")


def _timing(created: float, answered: float | None, *, status: str = "resolved", kind: str = "guidance"):
    # created/answered in seconds relative to NOW
    return (
        "repeated_error",
        status,
        _at(created),
        None if answered is None else _at(answered),
        None if answered is None else kind,
    )


def test_resolution_figures_use_human_answers_and_count_overdue_pending_as_misses() -> None:
    timings = [
        _timing(-10_000, -10_000 + 60),
        _timing(-10_000, -10_000 + 300),
        _timing(-10_000, -10_000 + 600),
        _timing(-10_000, -10_000 + 1800),
        _timing(-10_000, -10_000 + 7200),
        _timing(-10_000, -9_000, status="withdrawn", kind="withdraw"),  # no human: left out
        _timing(-7200, None, status="pending"),  # an hour passed unanswered: a miss
        _timing(-600, None, status="pending"),  # still within its hour: undecided
        _timing(-9000, None, status="agent_terminated"),  # closed without a human
    ]
    figures = stats.resolution(timings, NOW)
    assert figures.answered == 5
    assert figures.median_seconds == 600
    assert figures.p95_seconds == 7200  # nearest rank: ceil(0.95 * 5) = 5th of 5
    assert figures.within_hour == 4
    assert figures.counted == 6
    assert figures.within_hour_share == pytest.approx(0.6667)
    assert figures.sc010_met is False


def test_median_and_nearest_rank_percentile_on_known_values() -> None:
    values = [float(v) for v in range(1, 21)]  # 1..20
    assert stats.median(values) == 10.5
    assert stats.median([3.0, 1.0, 2.0]) == 2.0
    assert stats.nearest_rank(values, 0.95) == 19
    assert stats.nearest_rank([5.0], 0.95) == 5
    assert stats.median([]) is None
    assert stats.nearest_rank([], 0.95) is None


def test_no_answered_escalation_gives_no_share_rather_than_a_fake_one() -> None:
    figures = stats.resolution([_timing(-60, None, status="pending")], NOW)
    assert figures.counted == 0
    assert figures.within_hour_share is None
    assert figures.sc010_met is None


def test_answer_times_fall_in_buckets_that_agree_with_the_share_within_the_hour() -> None:
    timings = [
        _timing(-90_000, -90_000 + 300),  # exactly 5 min: the first bucket
        _timing(-90_000, -90_000 + 301),
        _timing(-90_000, -90_000 + 3600),  # exactly the hour: within it
        _timing(-90_000, -90_000 + 3601),
        _timing(-90_000, -90_000 + 86_400),
        _timing(-90_000, -89_000, status="withdrawn", kind="withdraw"),  # no human: no bar
        _timing(-7200, None, status="pending"),
    ]
    buckets = stats.answer_time_buckets(timings)
    assert buckets == [1, 1, 1, 1, 1]
    assert sum(buckets[:3]) == stats.resolution(timings, NOW).within_hour
    assert stats.answer_time_buckets([]) == [0, 0, 0, 0, 0]
