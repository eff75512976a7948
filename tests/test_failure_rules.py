"""What one failure decides (rules/decide/failures.py), without a database.

``classify_report`` says what a report is; ``decide`` gets the task's counters and
thresholds and what the store counted, and says what to save, which triggers fire (with the
wording of their summaries and their keys), whether the agent is warned and what it is
told; services/failures.py only writes it.
"""

from __future__ import annotations

from typing import Any

from mcp_server_escalation.datafiles import pattern_book
from mcp_server_escalation.models.failures import FailureReport
from mcp_server_escalation.models.tasks import Counters
from mcp_server_escalation.models.thresholds import Thresholds
from mcp_server_escalation.rules.decide.attempts import Wording
from mcp_server_escalation.rules.decide.failures import (
    Classified,
    FailureDecision,
    Warned,
    blocker_subject,
    classify_report,
    decide,
)

ASSERTION = "AssertionError: expected 3, got 4"
NO_MODULE = "ModuleNotFoundError: No module named 'requests'"
RESET = "ConnectionResetError: connection reset by peer"
DEFAULTS = Thresholds()  # the same error 3 times, a blocker read off output 3 times, warn 1 before


def report(message: str = ASSERTION, **fields: Any) -> FailureReport:
    return FailureReport(task_id="t-1", message=message, **fields)


def classified(message: str = ASSERTION, **fields: Any) -> Classified:
    return classify_report(report(message, **fields), pattern_book())


def failures_in_a_row(
    count: int, message: str = ASSERTION, thresholds: Thresholds = DEFAULTS, **fields: Any
) -> FailureDecision:
    """``decide`` on the ``count``-th failure of one error in a row, as the service calls it."""
    failure = classified(message, **fields)
    counters = Counters()
    for _ in range(count - 1):
        counters = decide(
            report(message, **fields), failure, occurrences=1, counters=counters, thresholds=thresholds
        ).counters
    return decide(
        report(message, **fields), failure, occurrences=count, counters=counters, thresholds=thresholds
    )


# What a report is


def test_a_report_without_a_signal_type_is_classified_by_the_pattern_that_matched() -> None:
    failure = classified(NO_MODULE)
    assert (failure.signal_type, failure.classified_by) == ("missing_dependency", "python_module_not_found")
    assert failure.details == {"dependency": "requests"}


def test_a_signal_type_the_caller_gives_is_classified_by_the_caller_and_its_details_win() -> None:
    failure = classified(NO_MODULE, signal_type="missing_dependency", details={"dependency": "numpy"})
    assert failure.classified_by == "caller"
    assert failure.declared
    assert failure.details["dependency"] == "numpy"


def test_details_the_caller_gives_win_over_those_the_patterns_read_off_the_message() -> None:
    failure = classified(NO_MODULE, details={"dependency": "requests-oauthlib"})
    assert failure.classified_by == "python_module_not_found"
    assert failure.details == {"dependency": "requests-oauthlib"}


def test_a_blocker_is_high_severity_a_transient_error_low_and_any_other_medium_unless_given() -> None:
    assert classified(NO_MODULE).severity == "high"
    assert classified(RESET).severity == "low"
    assert classified(ASSERTION).severity == "medium"
    assert classified(ASSERTION, severity="critical").severity == "critical"


def test_the_same_error_at_another_line_has_the_same_fingerprint_and_another_error_another() -> None:
    assert classified(ASSERTION, line=3).fingerprint == classified(ASSERTION, line=90).fingerprint
    assert classified(ASSERTION).fingerprint != classified(NO_MODULE).fingerprint


# What a blocker's summary names


def test_a_missing_dependency_is_named_with_its_version() -> None:
    subject = blocker_subject("missing_dependency", {"dependency": "numpy", "version": "2.0"}, "x")
    assert subject == "numpy@2.0"


def test_a_denied_permission_is_named_by_its_resource_and_operation() -> None:
    subject = blocker_subject("permission_denied", {"resource": "/etc/hosts", "operation": "write"}, "x")
    assert subject == "/etc/hosts (write)"


def test_an_unavailable_api_is_named_by_its_endpoint_and_status() -> None:
    subject = blocker_subject("api_unavailable", {"endpoint": "https://api.x/v1", "status_code": 503}, "x")
    assert subject == "https://api.x/v1 HTTP 503"


def test_a_blocker_without_facts_is_named_by_its_error_line() -> None:
    assert blocker_subject("permission_denied", {}, f"trace\n{NO_MODULE}") == NO_MODULE


# What a failure decides


def test_a_failure_counts_a_tool_call_and_starts_a_run_of_its_error() -> None:
    decision = failures_in_a_row(1)
    assert decision.counters.tool_calls == 1
    assert decision.counters.consecutive_same_error == 1
    assert decision.counters.last_fingerprint == classified().fingerprint


def test_the_same_error_again_goes_on_with_its_run() -> None:
    assert failures_in_a_row(2).counters.consecutive_same_error == 2


def test_the_failed_attempted_action_is_kept_so_that_its_success_ends_the_run() -> None:
    decision = failures_in_a_row(1, attempted_action="pytest tests/test_calc.py")
    assert decision.counters.last_failed_operation is not None
    assert failures_in_a_row(1).counters.last_failed_operation is None


def test_an_ordinary_error_fires_nothing_before_it_repeats_same_error_repeated_times() -> None:
    decision = failures_in_a_row(2)
    assert decision.blocker is None
    assert decision.repeated is None


def test_the_same_error_at_its_threshold_fires_repeated_error_keyed_by_its_fingerprint() -> None:
    traceback = f"Traceback\n{ASSERTION}"
    decision = failures_in_a_row(3, traceback)
    assert decision.repeated is not None
    assert decision.repeated.firing.type == "repeated_error"
    assert decision.repeated.key == f"repeated_error:{classified(traceback).fingerprint}"
    assert decision.repeated.summary == Wording(
        "trigger_repeated_error", {"count": 3, "threshold": 3, "message": ASSERTION}
    )
    assert decision.blocker is None


def test_a_lower_threshold_fires_repeated_error_sooner() -> None:
    assert failures_in_a_row(2, thresholds=Thresholds(same_error_repeated=2)).repeated is not None


def test_a_blocker_the_caller_declares_fires_external_blocker_at_once() -> None:
    decision = failures_in_a_row(
        1, "pip: no matching distribution", signal_type="missing_dependency", details={"dependency": "numpy"}
    )
    assert decision.blocker is not None
    assert decision.blocker.firing.type == "external_blocker"
    assert decision.blocker.firing.criteria["immediate"] is True
    assert decision.blocker.firing.observed["consecutive_same_error"] == 1
    assert decision.blocker.summary == Wording(
        "trigger_external_blocker",
        {"signal_type": "missing_dependency", "subject": "numpy", "error": "pip: no matching distribution"},
    )


def test_a_declared_blocker_counts_once_however_often_it_was_reported_before() -> None:
    decision = failures_in_a_row(3, "pip: no matching distribution", signal_type="missing_dependency")
    assert decision.blocker is not None
    assert decision.blocker.firing.criteria["immediate"] is True
    assert decision.blocker.firing.observed["consecutive_same_error"] == 1


def test_a_blocker_read_off_the_output_fires_only_once_it_repeats_blocker_repeated_times() -> None:
    assert failures_in_a_row(2, NO_MODULE).blocker is None
    decision = failures_in_a_row(3, NO_MODULE)
    assert decision.blocker is not None
    assert decision.blocker.key == f"external_blocker:{classified(NO_MODULE).fingerprint}"
    assert decision.blocker.firing.criteria["immediate"] is False
    assert decision.blocker.firing.observed["consecutive_same_error"] == 3
    assert decision.blocker.summary.values["subject"] == "requests"


def test_a_transient_error_that_keeps_coming_back_is_an_external_blocker() -> None:
    assert failures_in_a_row(2, RESET).repeated is None
    decision = failures_in_a_row(3, RESET)
    assert decision.repeated is not None
    assert decision.repeated.firing.type == "external_blocker"
    assert decision.repeated.key == f"external_blocker:{classified(RESET).fingerprint}"
    assert decision.repeated.summary.template == "trigger_external_blocker"
    assert decision.blocker is None  # a transient error is not a blocker until it repeats


def test_the_agent_is_warned_one_failure_before_the_same_error_escalates() -> None:
    assert failures_in_a_row(1).warning is None
    assert failures_in_a_row(2).warning == Warned(count=2, allowance=3)
    assert failures_in_a_row(3).warning is None


def test_a_blocker_is_warned_about_before_its_own_allowance() -> None:
    thresholds = Thresholds(blocker_repeated=5, same_error_repeated=10)
    decision = failures_in_a_row(4, NO_MODULE, thresholds=thresholds)
    assert decision.warning == Warned(count=4, allowance=5)


def test_no_warning_is_given_when_a_trigger_fires() -> None:
    # A blocker one short of its allowance (5), past the same error's threshold (2).
    decision = failures_in_a_row(
        4, NO_MODULE, thresholds=Thresholds(same_error_repeated=2, blocker_repeated=5)
    )
    assert decision.repeated is not None
    assert decision.blocker is None
    assert decision.warning is None


def test_warn_before_zero_never_warns() -> None:
    assert failures_in_a_row(2, thresholds=Thresholds(warn_before=0)).warning is None


def test_the_agent_is_told_the_run_the_same_errors_threshold_and_the_records_occurrences() -> None:
    # The record has happened 7 times in all, the last 2 of them in a row.
    first = decide(report(), classified(), occurrences=6, counters=Counters(), thresholds=DEFAULTS)
    decision = decide(report(), classified(), occurrences=7, counters=first.counters, thresholds=DEFAULTS)
    assert decision.message == Wording(
        "message_failure_recorded",
        {"task_id": "t-1", "signal_type": "test_failure", "consecutive": 2, "threshold": 3, "occurrences": 7},
    )


def test_a_blockers_message_names_the_same_errors_threshold_not_the_blockers() -> None:
    decision = failures_in_a_row(
        1, NO_MODULE, thresholds=Thresholds(blocker_repeated=5, same_error_repeated=10)
    )
    assert decision.message.values["threshold"] == 10
