"""What operators' verdicts say about the triggers (pure, no I/O).

An operator who answers an escalation may say whether it was useful or a false alarm. Counted
per escalation type and project, they measure each trigger's precision on the team's own
runs; where false alarms outnumber useful escalations, the trigger fires too early there, and
the threshold to raise is named.
"""

from __future__ import annotations

from ..models.reports import ThresholdAdvice, VerdictCount

VERDICTS = ("useful", "false_alarm")
# The threshold that decides when each type fires (docs/triggers.md).
THRESHOLD_OF = {
    "repeated_error": "same_error_repeated",
    "verification_limit": "total_verification_attempts",
    "no_file_progress": "no_file_changes_after_attempts",
    "test_stall": "no_test_improvement_after",
    "file_limit": "files_modified_exceeds",
    "external_blocker": "blocker_repeated",
    "stagnation": "stagnation_patience",
    "budget": "max_tool_calls, max_failing_test_runs or max_minutes",
    "scope_deviation": "the task's scope",
}


def advice(counts: list[VerdictCount]) -> list[ThresholdAdvice]:
    """The thresholds to raise: where an escalation type's false alarms outnumber its useful
    escalations in a project (types the agent raises itself have no threshold)."""
    return [
        ThresholdAdvice(
            type=count.type,
            project=count.project,
            threshold=THRESHOLD_OF[count.type],
            useful=count.useful,
            false_alarm=count.false_alarm,
        )
        for count in counts
        if count.false_alarm > count.useful and count.type in THRESHOLD_OF
    ]
