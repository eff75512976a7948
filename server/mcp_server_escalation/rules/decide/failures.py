"""What one failure decides, as pure functions of the report and what the store holds.

``record_failure`` (services/failures.py) first asks ``classify_report`` what the report is
(its signal type, who said so, its severity, its details and its fingerprint), stores the
occurrence, and then asks ``decide`` what follows from the task's counters and thresholds:
the counters to save, which triggers fire, whether the agent is warned, and the message it
gets when it may go on. The service writes and fires what these say, so each rule can be
read, and tested, without a database.

A run of the same error (``triggers.after_failure``) escalates at ``same_error_repeated``
in a row; a blocker (a missing dependency, a denied permission, an unavailable API) needs
a human sooner (``triggers.repeat_allowance``), and a transient error that keeps coming
back is one too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...models.failures import FailureReport
from ...models.limits import BLOCKER_SIGNALS
from ...models.tasks import Counters
from ...models.thresholds import Thresholds
from ..reading.classify import PatternBook, classify, extract_details
from ..reading.fingerprint import fingerprint
from ..reading.salient import headline
from ..reading.shell_work import named_files, operation_key
from . import triggers
from .budgets import count_call
from .decisions import Fires, Wording

# Severity when the caller gives none: a blocker needs a human, a transient error is
# expected now and then, everything else is an ordinary failure.
DEFAULT_SEVERITY: dict[str, str] = {
    "missing_dependency": "high",
    "permission_denied": "high",
    "api_unavailable": "high",
    "network_transient": "low",
}
TRANSIENT = "network_transient"
REFUSAL = "tool_refusal"


@dataclass(frozen=True)
class Classified:
    """What a report is: its signal type and who chose it (``caller`` or the name of the
    pattern that matched), its severity, its details (given ones win over those read off
    the message) and its fingerprint."""

    signal_type: str
    classified_by: str
    severity: str
    details: dict[str, Any]
    fingerprint: str

    @property
    def declared(self) -> bool:
        """The caller named the signal type: it says what the failure is."""
        return self.classified_by == "caller"

    @property
    def blocker(self) -> bool:
        return self.signal_type in BLOCKER_SIGNALS

    @property
    def refusal(self) -> bool:
        """A tool refused the call as given (``triggers.repeat_allowance``)."""
        return self.signal_type == REFUSAL


@dataclass(frozen=True)
class Warned:
    """The run is one warning short of escalating: its count and the count it escalates at."""

    count: int
    allowance: int
    grace: int = 0  # the grace that held back a page (``decide``); 0: none did
    after_change: bool = False  # the count is of occurrences after a change (``needs_change``)


@dataclass(frozen=True)
class FailureDecision:
    """What one failure decides (``decide``)."""

    counters: Counters
    blocker: Fires | None  # a blocker at its allowance: a human must remove it
    repeated: Fires | None  # the same error too often in a row
    warning: Warned | None  # given only when no trigger of the call fires (budgets included)
    message: Wording  # what the agent reads when it may go on


def classify_report(report: FailureReport, patterns: PatternBook) -> Classified:
    """The report's signal type (the caller's, else the patterns'), severity, details and fingerprint."""
    given = {k: v for k, v in report.details.items() if v is not None}
    if report.signal_type is None:
        chosen = classify(report.message, patterns, error_type=report.error_type, tool_name=report.tool_name)
        signal, classified_by = chosen.signal_type, chosen.rule
        details = {**chosen.details, **given}
    else:
        signal, classified_by = report.signal_type, "caller"
        details = extract_details(report.message, signal, patterns, given)
    print_ = fingerprint(
        signal_type=signal,
        step=report.step,
        message=report.message,
        error_type=report.error_type,
        tool_name=report.tool_name,
        error_code=report.error_code,
    )
    severity = report.severity or DEFAULT_SEVERITY.get(signal, "medium")
    return Classified(signal, classified_by, severity, details, print_)


def blocker_subject(signal_type: str, details: dict[str, Any], message: str) -> str:
    """The thing an operator must fix, in the words of the blocker's own facts."""
    if signal_type == "missing_dependency" and details.get("dependency"):
        version = f"@{details['version']}" if details.get("version") else ""
        return f"{details['dependency']}{version}"
    if signal_type == "permission_denied" and details.get("resource"):
        operation = f" ({details['operation']})" if details.get("operation") else ""
        return f"{details['resource']}{operation}"
    if details.get("endpoint") or details.get("status_code"):
        status = f" HTTP {details['status_code']}" if details.get("status_code") else ""
        return f"{details.get('endpoint', '')}{status}".strip()
    return headline(message)


def decide(
    report: FailureReport,
    failure: Classified,
    *,
    occurrences: int,
    counters: Counters,
    thresholds: Thresholds,
    grace_calls: int = 0,
    needs_change: bool = False,
) -> FailureDecision:
    """The consequences of a failure the store just counted as its record's ``occurrences``-th.

    ``counters`` are the task's before it. A failure goes on (or starts) a run of its
    fingerprint, and every failure recorded is a tool call.

    ``needs_change`` (the host hooks', ``[hooks] repeats_need_a_change``): the hooks see every
    call, the agent's reproductions of a bug too, so an ordinary error counts again only
    when the agent changed a file in between (``triggers.after_failure``): it tried a remedy
    and the same error came back. A tool's refusal and a blocker count every time: nothing
    the agent edits removes them. A caller of ``record_failure`` reports on purpose, and
    every report counts.

    ``grace_calls`` (``[hooks] repeat_grace_calls``, off by default): among a task's first
    that many recorded tool calls, an error repeated to its threshold warns instead of
    paging; its next occurrence after them pages.
    """
    action = report.attempted_action
    ordinary = not (failure.refusal or failure.blocker or failure.signal_type == TRANSIENT)
    after_change = needs_change and ordinary
    after = triggers.after_failure(
        counters,
        failure.fingerprint,
        operation_key(action) if action else None,
        needs_change=after_change,
        names=named_files(action) if action else (),
    )
    after = count_call(after)
    count = after.consecutive_same_error
    allowance = triggers.repeat_allowance(
        thresholds, blocker=failure.blocker, declared=failure.declared, refusal=failure.refusal
    )
    blocker = _blocker(report, failure, count) if failure.blocker and count >= allowance else None
    repeated = _repeated(report, failure, after, thresholds, after_change=after_change)
    graced = repeated is not None and after.tool_calls < grace_calls
    if graced:
        repeated = None
    quiet = blocker is None and repeated is None
    warned = quiet and (graced or triggers.warning_due(count, allowance, thresholds))
    message = Wording(
        "message_failure_recorded",
        {
            "task_id": report.task_id,
            "signal_type": failure.signal_type,
            "consecutive": count,
            "threshold": thresholds.same_error_repeated,
            "occurrences": occurrences,
        },
    )
    warning = Warned(count, allowance, grace_calls if graced else 0, after_change) if warned else None
    return FailureDecision(after, blocker, repeated, warning, message)


def _blocker_wording(report: FailureReport, failure: Classified) -> Wording:
    subject = blocker_subject(failure.signal_type, failure.details, report.message)
    return Wording(
        "trigger_external_blocker",
        {"signal_type": failure.signal_type, "subject": subject, "error": headline(report.message)},
    )


def _blocker(report: FailureReport, failure: Classified, count: int) -> Fires:
    """A blocker declared by the caller counts once; one read off the output counts its run."""
    repeated = 1 if failure.declared else count
    firing = triggers.external_blocker(failure.signal_type, failure.details, repeated=repeated)
    return Fires(firing, _blocker_wording(report, failure), key=f"external_blocker:{failure.fingerprint}")


def _repeated(
    report: FailureReport, failure: Classified, counters: Counters, t: Thresholds, *, after_change: bool
) -> Fires | None:
    """The same error ``same_error_repeated`` times in a row; a transient one is a blocker."""
    firing = triggers.repeated_error(
        counters, t, transient=failure.signal_type == TRANSIENT, refusal=failure.refusal
    )
    if firing is None:
        return None
    if firing.type == "external_blocker":
        summary = _blocker_wording(report, failure)
    else:
        summary = Wording(
            "trigger_repeated_error_after_change" if after_change else "trigger_repeated_error",
            {
                "count": counters.consecutive_same_error,
                "threshold": firing.criteria.get("refusal_repeated", t.same_error_repeated),
                "message": headline(report.message),
            },
        )
    return Fires(firing, summary, key=f"{firing.type}:{failure.fingerprint}")
