"""What one attempt's verdict decides (rules/decide/attempts.py), without a database.

``decide`` gets what the store read (the task's counters and thresholds, the step's cycle
and its latest attempts) and says what to save, which cycle starts, which triggers fire and
what the agent is told; services/attempts.py only writes it.
"""

from __future__ import annotations

from mcp_server_escalation.models.feedback import Attempt
from mcp_server_escalation.models.tasks import Counters
from mcp_server_escalation.models.thresholds import Thresholds
from mcp_server_escalation.rules.decide.attempts import (
    HISTORY,
    AttemptDecision,
    Verdict,
    Wording,
    decide,
    stagnation_window,
)

SAME_COMPLAINT = "assertion failed: expected 3, got 4 in test_total"
DEFAULTS = Thresholds()  # patience 3, similarity 0.7, 2 automatic cycles, 10 verifications


def attempt(number: int, status: str = "rejected", feedback: str = SAME_COMPLAINT, cycle: int = 0) -> Attempt:
    return Attempt(
        attempt_number=number,
        cycle=cycle,
        step="build",
        status=status,  # type: ignore[arg-type]
        feedback=feedback,
        guard=None,
        artifact=f"approach {number}",
        agent_id="agent-1",
        at="2026-01-01T00:00:00Z",
    )


def rejected_in_a_row(count: int, cycle: int = 0) -> list[Attempt]:
    return [attempt(n, cycle=cycle) for n in range(1, count + 1)]


def verdict(
    status: str = "rejected",
    *,
    recent: list[Attempt] | None = None,
    cycle: int = 0,
    counters: Counters | None = None,
    thresholds: Thresholds = DEFAULTS,
    upstream: tuple[str, ...] = (),
) -> AttemptDecision:
    """``decide`` on the latest of ``recent`` (its number), as the service calls it."""
    recent = recent or []
    return decide(
        Verdict("t-1", "build", status, upstream),
        attempt_number=recent[-1].attempt_number if recent else 1,
        cycle=cycle,
        counters=counters or Counters(),
        thresholds=thresholds,
        recent=recent,
    )


def test_an_accepted_verdict_counts_a_tool_call_but_no_verification_attempt() -> None:
    decision = verdict("accepted", recent=[attempt(1, "accepted")])
    assert decision.counters.tool_calls == 1
    assert decision.counters.verification_attempts == 0


def test_an_accepted_verdict_tells_the_agent_its_attempt_was_accepted_and_fires_nothing() -> None:
    decision = verdict("accepted", recent=[attempt(4, "accepted")])
    assert decision.message == Wording(
        "message_attempt_accepted", {"task_id": "t-1", "step": "build", "attempt_number": 4}
    )
    assert decision.cycle_start is None
    assert decision.stagnation is None
    assert decision.verification_limit is None


def test_a_rejected_verdict_is_one_more_verification_attempt_and_one_more_tool_call() -> None:
    decision = verdict(recent=[attempt(1)], counters=Counters(verification_attempts=4, tool_calls=7))
    assert decision.counters.verification_attempts == 5
    assert decision.counters.tool_calls == 8


def test_a_rejected_verdict_short_of_the_patience_is_recorded_in_its_cycle_and_starts_no_cycle() -> None:
    decision = verdict(recent=rejected_in_a_row(2, cycle=1), cycle=1)
    assert decision.cycle_start is None
    assert decision.message == Wording(
        "message_attempt_recorded", {"task_id": "t-1", "step": "build", "attempt_number": 2, "cycle": 1}
    )


def test_as_many_similar_rejections_as_the_patience_start_the_steps_next_cycle() -> None:
    recent = [
        attempt(1, feedback="assertion failed: expected 3, got 4 in test_total"),
        attempt(2, feedback="assertion failed: expected 5, got 6 in test_total"),
        attempt(3, feedback="assertion failed: expected 7, got 8 in test_total"),
    ]
    decision = verdict(recent=recent)
    assert decision.cycle_start is not None
    assert [a.attempt_number for a in decision.cycle_start.similar] == [1, 2, 3]
    assert decision.cycle_start.new_cycle == 1
    assert decision.stagnation is None


def test_a_new_cycle_is_announced_to_the_agent_with_the_steps_that_got_the_summary() -> None:
    decision = verdict(recent=rejected_in_a_row(3), upstream=("design", "build", "design", "spec"))
    assert decision.cycle_start is not None
    assert decision.cycle_start.targets == ("build", "design", "spec")
    assert decision.message == Wording(
        "message_stagnation_cycle",
        {"task_id": "t-1", "step": "build", "cycle": 1, "escalated_to": "build, design, spec"},
    )


def test_a_run_of_similar_rejections_longer_than_the_patience_counts_whole() -> None:
    decision = verdict(recent=rejected_in_a_row(5))
    assert decision.cycle_start is not None
    assert len(decision.cycle_start.similar) == 5


def test_rejections_before_the_cycles_last_accepted_attempt_do_not_count() -> None:
    recent = [attempt(1), attempt(2), attempt(3, "accepted"), attempt(4), attempt(5)]
    assert verdict(recent=recent).cycle_start is None


def test_rejections_that_say_different_things_are_no_stagnation() -> None:
    recent = [
        attempt(1, feedback="ImportError: cannot import name 'total' from 'shop'"),
        attempt(2, feedback="assertion failed: expected 3, got 4 in test_total"),
        attempt(3, feedback="the page renders no basket at all"),
    ]
    assert verdict(recent=recent).cycle_start is None


def test_an_accepted_verdict_never_starts_a_cycle_whatever_came_before() -> None:
    assert verdict("accepted", recent=[*rejected_in_a_row(3), attempt(4, "accepted")]).cycle_start is None


def test_a_stagnation_within_the_automatic_cycles_stays_with_the_agents() -> None:
    decision = verdict(recent=rejected_in_a_row(3, cycle=2), cycle=2)
    assert decision.cycle_start is not None
    assert decision.stagnation is None


def test_a_stagnation_past_the_automatic_cycles_goes_to_a_human_with_the_cycles_counted() -> None:
    decision = verdict(recent=rejected_in_a_row(4, cycle=3), cycle=3)
    assert decision.cycle_start is not None
    assert decision.cycle_start.new_cycle == 4
    assert decision.stagnation is not None
    assert decision.stagnation.key == "stagnation:build"
    assert decision.stagnation.firing.type == "stagnation"
    assert decision.stagnation.firing.observed == {"step": "build", "cycles": 3, "similar_count": 4}
    assert decision.stagnation.summary == Wording(
        "trigger_stagnation", {"step": "build", "cycles": 3, "max_cycles": 2}
    )


def test_a_stagnation_sent_to_a_human_tells_the_agent_its_attempt_was_recorded_not_a_new_cycle() -> None:
    decision = verdict(recent=rejected_in_a_row(3, cycle=3), cycle=3)
    assert decision.message.template == "message_attempt_recorded"


def test_with_no_automatic_cycles_the_first_stagnation_goes_to_a_human() -> None:
    decision = verdict(
        recent=rejected_in_a_row(3, cycle=1), cycle=1, thresholds=Thresholds(max_escalation_cycles=0)
    )
    assert decision.stagnation is not None


def test_the_rejection_that_reaches_the_verification_limit_fires_it() -> None:
    decision = verdict(recent=[attempt(10)], counters=Counters(verification_attempts=9))
    assert decision.verification_limit is not None
    assert decision.verification_limit.firing.type == "verification_limit"
    assert decision.verification_limit.firing.observed == {"verification_attempts": 10}
    assert decision.verification_limit.key == ""
    assert decision.verification_limit.summary == Wording(
        "trigger_verification_limit", {"count": 10, "threshold": 10}
    )


def test_a_rejection_short_of_the_verification_limit_fires_nothing() -> None:
    assert verdict(recent=[attempt(9)], counters=Counters(verification_attempts=8)).verification_limit is None


def test_any_verdict_while_the_count_is_at_the_limit_fires_it_again_to_add_evidence() -> None:
    at_limit = Counters(verification_attempts=10)
    decision = verdict("accepted", recent=[attempt(11, "accepted")], counters=at_limit)
    assert decision.counters.verification_attempts == 10
    assert decision.verification_limit is not None


def test_a_verdict_can_start_a_cycle_and_reach_the_verification_limit_at_once() -> None:
    decision = verdict(recent=rejected_in_a_row(3), counters=Counters(verification_attempts=9))
    assert decision.cycle_start is not None
    assert decision.verification_limit is not None


def test_each_verdict_uses_one_call_of_the_tool_call_budget() -> None:
    capped = Thresholds(max_tool_calls=5)
    decision = verdict(
        "accepted", recent=[attempt(1, "accepted")], counters=Counters(tool_calls=4), thresholds=capped
    )
    assert decision.counters.tool_calls == 5


def test_the_run_is_looked_for_in_at_least_fifty_attempts_and_four_times_the_patience() -> None:
    assert stagnation_window(DEFAULTS) == HISTORY == 50
    assert stagnation_window(Thresholds(stagnation_patience=20)) == 80
