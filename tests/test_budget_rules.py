"""Which budgets a call used up (rules/decide/budgets.py), without a database.

Every service that records a call counts it with ``count_call`` and asks ``budget_fires``
which budgets the counters after it, and the clock, used up; services/budgets.py only adds
each budget's headline.
"""

from __future__ import annotations

from mcp_server_escalation.models.tasks import Counters
from mcp_server_escalation.models.thresholds import Thresholds
from mcp_server_escalation.rules.decide.budgets import budget_fires, count_call
from mcp_server_escalation.rules.decide.decisions import Wording

STARTED = "2026-01-01T09:00:00.000Z"
AN_HOUR_LATER = "2026-01-01T10:00:00.000Z"


def used_up(counters: Counters, thresholds: Thresholds, now: str = AN_HOUR_LATER) -> list[str]:
    return [f.key for f in budget_fires(counters, thresholds, created_at=STARTED, now=now)]


def test_a_recorded_call_is_one_more_tool_call() -> None:
    assert count_call(Counters(tool_calls=2)).tool_calls == 3


def test_a_call_another_service_counted_is_not_counted_again() -> None:
    assert count_call(Counters(tool_calls=2), call=False).tool_calls == 2


def test_a_failing_test_run_is_one_more_failing_test_run() -> None:
    assert count_call(Counters(failing_test_runs=1), failing_test_run=True).failing_test_runs == 2
    assert count_call(Counters(failing_test_runs=1)).failing_test_runs == 1


def test_a_task_without_budgets_uses_none_up_however_much_it_did() -> None:
    assert used_up(Counters(tool_calls=10_000, failing_test_runs=10_000), Thresholds()) == []


def test_the_call_that_reaches_the_tool_call_cap_uses_that_budget_up() -> None:
    capped = Thresholds(max_tool_calls=5)
    assert used_up(Counters(tool_calls=4), capped) == []
    assert used_up(Counters(tool_calls=5), capped) == ["budget:tool_calls"]


def test_the_minutes_count_from_the_tasks_start() -> None:
    capped = Thresholds(max_minutes=60)
    assert used_up(Counters(), capped, now="2026-01-01T09:59:59.000Z") == []
    assert used_up(Counters(), capped) == ["budget:minutes"]


def test_after_an_acknowledged_budget_the_minutes_count_from_the_acknowledgement() -> None:
    capped = Thresholds(max_minutes=60)
    assert used_up(Counters(budget_since="2026-01-01T09:30:00.000Z"), capped) == []


def test_the_failing_test_run_that_reaches_its_cap_uses_that_budget_up() -> None:
    assert used_up(Counters(failing_test_runs=3), Thresholds(max_failing_test_runs=3)) == [
        "budget:failing_test_runs"
    ]


def test_every_budget_used_up_fires_once_in_one_order() -> None:
    every = Thresholds(max_tool_calls=1, max_minutes=1, max_failing_test_runs=1)
    used = used_up(Counters(tool_calls=1, failing_test_runs=1), every)
    assert used == ["budget:tool_calls", "budget:minutes", "budget:failing_test_runs"]


def test_a_used_up_budget_is_worded_and_evidenced_with_its_use_its_limit_and_its_start() -> None:
    (fires,) = budget_fires(
        Counters(tool_calls=6), Thresholds(max_tool_calls=5), created_at=STARTED, now=AN_HOUR_LATER
    )
    assert fires.firing.type == "budget"
    said = "2026-01-01 09:00:00 UTC"  # the summary is read: the time as a person writes it
    assert fires.summary == Wording("trigger_budget_tool_calls", {"used": 6, "limit": 5, "since": said})
    assert fires.facts == {
        "budget": "tool_calls",
        "threshold": "max_tool_calls",
        "limit": 5,
        "used": 6,
        "since": STARTED,
    }
