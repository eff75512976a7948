"""Each trigger rule at its boundary: threshold - 1 does not fire, threshold fires."""

from __future__ import annotations

import pytest

from mcp_server_escalation.models.tasks import Counters
from mcp_server_escalation.models.thresholds import Thresholds
from mcp_server_escalation.rules.decide import triggers

T = Thresholds()


def test_defaults_are_the_seed_thresholds_but_a_test_stall_at_five() -> None:
    # A test stall pages at 5, not the seed's 3: on real runs of two agents, 3 paused as many
    # runs that went on to succeed as runs that failed (docs/triggers.md).
    assert (
        T.same_error_repeated,
        T.total_verification_attempts,
        T.no_file_changes_after_attempts,
        T.no_test_improvement_after,
        T.files_modified_exceeds,
        T.spec_deviation_detected,
        T.stagnation_patience,
        T.stagnation_similarity,
        T.max_escalation_cycles,
    ) == (3, 10, 5, 5, 20, True, 3, 0.7, 2)


def test_same_fingerprint_counts_up_and_a_different_one_restarts_at_one() -> None:
    c = triggers.after_failure(Counters(), "fp-a")
    c = triggers.after_failure(c, "fp-a")
    assert c.consecutive_same_error == 2
    c = triggers.after_failure(c, "fp-b")
    assert (c.consecutive_same_error, c.last_fingerprint) == (1, "fp-b")


def test_success_resets_the_run_and_the_next_same_error_starts_at_one() -> None:
    c = triggers.after_failure(triggers.after_failure(Counters(), "fp-a"), "fp-a")
    c = triggers.after_success(c)
    assert c.consecutive_same_error == 0
    assert triggers.after_failure(c, "fp-a").consecutive_same_error == 1


def _failures(*errors: str, counters: Counters | None = None) -> Counters:
    """The counters after failures named ``fp:operation`` (the operation optional)."""
    c = counters or Counters()
    for error in errors:
        fingerprint, _, operation = error.partition(":")
        c = triggers.after_failure(c, fingerprint, operation or None)
    return c


def test_one_other_failure_in_between_does_not_end_a_run_of_the_same_error() -> None:
    c = _failures("fp-a", "fp-a", "fp-b")
    assert (c.consecutive_same_error, c.last_fingerprint) == (1, "fp-b")  # the new error's own run
    c = _failures("fp-a", counters=c)
    assert (c.consecutive_same_error, c.last_fingerprint) == (3, "fp-a")  # fix A, break B, back to A


def test_alternating_between_two_errors_counts_each_of_them() -> None:
    c = _failures("fp-a", "fp-b", "fp-a", "fp-b")
    assert (c.consecutive_same_error, c.last_fingerprint) == (2, "fp-b")
    assert _failures("fp-a", counters=c).consecutive_same_error == 3


def test_a_third_error_in_between_ends_the_first_run() -> None:
    c = _failures("fp-a", "fp-a", "fp-b", "fp-c", "fp-a")
    assert (c.consecutive_same_error, c.last_fingerprint) == (1, "fp-a")


def test_a_success_ends_only_the_run_of_the_operation_that_succeeded() -> None:
    interrupted = _failures("fp-a:run", "fp-a:run", "fp-b:build")
    # The interrupting build passing leaves the test run's error to come back to.
    c = triggers.after_success(interrupted, "build")
    assert (c.consecutive_same_error, c.last_fingerprint) == (0, None)
    assert _failures("fp-a:run", counters=c).consecutive_same_error == 3
    # The failing run passing ends its run, though another failure came after it.
    c = triggers.after_success(interrupted, "run")
    assert (c.consecutive_same_error, c.last_fingerprint) == (1, "fp-b")
    assert _failures("fp-a:run", counters=c).consecutive_same_error == 1
    # A success that names no operation (report_progress) ends both.
    c = triggers.after_success(interrupted)
    assert _failures("fp-a:run", counters=c).consecutive_same_error == 1


@pytest.mark.parametrize(("count", "fires"), [(2, False), (3, True), (4, True)])
def test_repeated_error_fires_at_the_threshold(count: int, fires: bool) -> None:
    c = Counters(consecutive_same_error=count, last_fingerprint="fp-a")
    firing = triggers.repeated_error(c, T, transient=False)
    assert (firing is not None) is fires
    if firing:
        assert firing.type == "repeated_error"
        assert firing.criteria == {"same_error_repeated": 3}
        assert firing.observed["consecutive_same_error"] == count


def test_a_repeating_transient_error_becomes_an_external_blocker_of_high_priority() -> None:
    firing = triggers.repeated_error(Counters(consecutive_same_error=3), T, transient=True)
    assert firing is not None
    assert (firing.type, firing.priority) == ("external_blocker", "high")
    assert triggers.repeated_error(Counters(consecutive_same_error=2), T, transient=True) is None


@pytest.mark.parametrize(("count", "fires"), [(9, False), (10, True)])
def test_verification_limit_fires_at_ten(count: int, fires: bool) -> None:
    assert (triggers.verification_limit(Counters(verification_attempts=count), T) is not None) is fires


@pytest.mark.parametrize(("count", "fires"), [(4, False), (5, True)])
def test_no_file_progress_fires_at_five(count: int, fires: bool) -> None:
    c = Counters(attempts_without_file_change=count)
    assert (triggers.no_file_progress(c, T) is not None) is fires


def test_an_attempt_with_files_resets_the_no_change_run() -> None:
    c = triggers.after_attempt(Counters(attempts_without_file_change=4), changed_files=False)
    assert c.attempts_without_file_change == 5
    assert triggers.after_attempt(c, changed_files=True).attempts_without_file_change == 0


@pytest.mark.parametrize(("count", "fires"), [(4, False), (5, True)])
def test_test_stall_fires_at_five(count: int, fires: bool) -> None:
    c = Counters(test_runs_without_improvement=count)
    assert (triggers.test_stall(c, T, best=0.6, latest=0.6) is not None) is fires


@pytest.mark.parametrize(
    ("rate", "best", "improved"),
    [(0.6, 0.6, False), (0.59, 0.6, False), (0.7, 0.6, True), (0.0, None, True)],
)
def test_improvement_means_strictly_above_the_best_earlier_rate(
    rate: float, best: float | None, improved: bool
) -> None:
    assert triggers.test_improved(rate, best) is improved


def test_pass_rates_are_rounded_so_equal_rates_compare_equal() -> None:
    assert triggers.pass_rate(3, 2) == 0.6
    assert triggers.pass_rate(6, 4) == triggers.pass_rate(3, 2)
    assert triggers.pass_rate(1, 2) == 0.3333


@pytest.mark.parametrize(("count", "fires"), [(20, False), (21, True)])
def test_file_limit_fires_above_twenty(count: int, fires: bool) -> None:
    assert (triggers.file_limit(count, T, ["f.py"]) is not None) is fires


def test_scope_deviation_fires_only_for_outside_paths_and_when_enabled() -> None:
    assert triggers.scope_deviation([], ["src/**"], T) is None
    assert triggers.scope_deviation(["pay/x.py"], ["src/**"], T) is not None
    off = T.model_copy(update={"spec_deviation_detected": False})
    assert triggers.scope_deviation(["pay/x.py"], ["src/**"], off) is None


def test_response_options_are_the_union_in_a_fixed_order() -> None:
    assert triggers.response_options(["repeated_error"]) == ["guidance", "override", "terminate"]
    assert triggers.response_options(["repeated_error", "file_limit"]) == [
        "approve",
        "guidance",
        "override",
        "terminate",
    ]
    assert "withdraw" in triggers.response_options(["ask_human"])


def test_thresholds_merge_only_what_an_override_sets() -> None:
    from mcp_server_escalation.models.thresholds import ThresholdOverrides

    merged = T.merged(ThresholdOverrides(same_error_repeated=5))
    assert merged.same_error_repeated == 5
    assert merged.files_modified_exceeds == 20
