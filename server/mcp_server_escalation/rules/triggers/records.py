"""One record per trigger: everything the rest of the code keys by an escalation's type.

A trigger's words, the answers an operator may give it, the threshold a false alarm says
to raise, the counters an acknowledged answer starts again, the templates its summary and
warning are rendered from, the evidence it shows and the view that shows it are declared
here once, and every table keyed by type is derived from these records (the answers of
``rules.decide.triggers``, the words of ``rules.wording.words``, the thresholds of
``rules.operators.verdicts``, the prompt contract of ``prompts.py``, the gatherer a
service calls, the view the CLI and the console draw). Presentation stays in its adapter:
a record names its view, the adapter draws it. ``tests/test_trigger_records.py`` names
whatever a type lacks.

A new counting trigger (docs/architecture.md, "Adding a trigger") needs its record, its
threshold and its counter; its evidence and view may be the generic ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from ...models.limits import EscalationType, Priority, ResponseType

# The view that shows any evidence as labelled lines (``rules/wording/fact_lines.py``, the
# console's ``macros.facts``): a trigger whose evidence needs no view of its own names it.
GENERIC_VIEW = "facts"
# The evidence of a trigger the agent raises itself: its question (or error) and options,
# which the escalation holds; nothing is gathered from the store.
NO_EVIDENCE = "none"
# The evidence of a counting trigger: its summary led by the task's latest error and the
# facts its decision knew (``services/headlines.counted_evidence``).
COUNTED_EVIDENCE = "counted"


@dataclass(frozen=True)
class TriggerRecord:
    """What one kind of trigger is, for every part of the code that keys by its type."""

    type: EscalationType
    # The kind in words, singular, as a person reads it: "repeated error".
    words: str
    # The answers an operator (or, for its own question, the agent) may give, in order.
    answers: tuple[ResponseType, ...]
    # The threshold a false alarm says to raise, as the operator reads it; None for a kind
    # the agent raises itself, which no threshold decides.
    raise_on_false_alarm: str | None
    # The counters an acknowledged answer starts again (each back to its default), so one
    # answer buys the agent a full new allowance rather than an instant re-escalation.
    resets_on_ack: tuple[str, ...]
    # Each counter it measures and the threshold it is compared with, as the operator's
    # views list them (``tasks show``, the console's task page).
    limits: tuple[tuple[str, str], ...]
    # The prompt templates its summary (and warning) are rendered from, with the
    # placeholders the code supplies.
    templates: Mapping[str, tuple[str, ...]]
    # The name of the gatherer of its evidence (``services/gathering.py``).
    evidence: str
    # The name of the view that shows its evidence (the CLI's ``cli/evidence_view.VIEWS``,
    # the console's ``templates/evidence.html``), or ``GENERIC_VIEW``.
    view: str
    # Raised by the agent (its question or error) rather than by a threshold.
    raised_by_agent: bool = False
    # External blockers are urgent: a human must act, the agent cannot.
    priority: Priority = "normal"


def _templates(**fields: tuple[str, ...]) -> Mapping[str, tuple[str, ...]]:
    return MappingProxyType(fields)


# Approve only makes sense where there is a limit or a scope to widen; an agent's own
# question may also be approved (it may ask for permission) or withdrawn by the agent.
_ANSWERS: tuple[ResponseType, ...] = ("guidance", "override", "terminate")
_RUN_OF_ERRORS = ("consecutive_same_error", "last_fingerprint", "last_failed_operation")
_STALL = ("count", "threshold", "best_pass_rate", "latest_pass_rate")
_WARNING = ("count", "error", "tries", "guidance")
_BUDGET = ("used", "limit", "since")

RECORDS: tuple[TriggerRecord, ...] = (
    TriggerRecord(
        type="repeated_error",
        words="repeated error",
        answers=_ANSWERS,
        raise_on_false_alarm="same_error_repeated",
        resets_on_ack=_RUN_OF_ERRORS,
        limits=(("consecutive_same_error", "same_error_repeated"),),
        templates=_templates(
            trigger_repeated_error=("count", "threshold", "message"),
            trigger_repeated_error_after_change=("count", "threshold", "message"),
            warning_repeated_error=("threshold", *_WARNING),
            warning_repeated_error_grace=("grace", *_WARNING),
            warning_repeated_error_after_change=("threshold", *_WARNING),
            warning_try=("action",),
            warning_guidance=("adjustment", "failure_id"),
            warning_no_guidance=(),
        ),
        evidence="occurrences",
        view="occurrences",
    ),
    TriggerRecord(
        type="verification_limit",
        words="verification limit",
        answers=_ANSWERS,
        raise_on_false_alarm="total_verification_attempts",
        resets_on_ack=("verification_attempts",),
        limits=(("verification_attempts", "total_verification_attempts"),),
        templates=_templates(
            trigger_verification_limit=("count", "threshold"),
            warning_verification_limit=("count", "threshold"),
        ),
        evidence="verification history",
        view="verification history",
    ),
    TriggerRecord(
        type="no_file_progress",
        words="no file progress",
        answers=_ANSWERS,
        raise_on_false_alarm="no_file_changes_after_attempts",
        resets_on_ack=("attempts_without_file_change",),
        limits=(("attempts_without_file_change", "no_file_changes_after_attempts"),),
        templates=_templates(
            trigger_no_file_progress=("count", "threshold"),
            warning_no_file_progress=("count", "threshold"),
        ),
        evidence="attempts",
        view="attempts",
    ),
    TriggerRecord(
        type="test_stall",
        words="test stall",
        answers=_ANSWERS,
        raise_on_false_alarm="no_test_improvement_after",
        resets_on_ack=("test_runs_without_improvement",),
        limits=(("test_runs_without_improvement", "no_test_improvement_after"),),
        templates=_templates(trigger_test_stall=_STALL, warning_test_stall=_STALL),
        evidence="pass rates",
        view="pass rates",
    ),
    TriggerRecord(
        type="file_limit",
        words="file limit",
        answers=("approve", *_ANSWERS),
        raise_on_false_alarm="files_modified_exceeds",
        resets_on_ack=(),
        limits=(("files_modified", "files_modified_exceeds"),),
        templates=_templates(
            trigger_file_limit=("count", "limit", "proposed"),
            trigger_file_limit_reported=("count", "limit", "added"),
        ),
        evidence="files",
        view="files",
    ),
    TriggerRecord(
        type="scope_deviation",
        words="scope deviation",
        answers=("approve", *_ANSWERS),
        raise_on_false_alarm="the task's scope",
        resets_on_ack=(),
        limits=(),
        templates=_templates(trigger_scope_deviation=("paths", "scope")),
        evidence="scope",
        view="scope",
    ),
    TriggerRecord(
        type="external_blocker",
        words="external blocker",
        answers=_ANSWERS,
        raise_on_false_alarm="blocker_repeated",
        resets_on_ack=_RUN_OF_ERRORS,
        limits=(),
        templates=_templates(
            trigger_external_blocker=("signal_type", "subject", "error"),
            trigger_host_error_notice=("error_type", "error"),
            trigger_host_error_persists=("error_type", "error", "count"),
        ),
        evidence="blocker",
        view="blocker",
        priority="high",
    ),
    TriggerRecord(
        type="stagnation",
        words="stagnation",
        answers=_ANSWERS,
        raise_on_false_alarm="stagnation_patience",
        resets_on_ack=(),
        limits=(),
        templates=_templates(trigger_stagnation=("step", "cycles", "max_cycles")),
        evidence="cycle summaries",
        view=GENERIC_VIEW,
    ),
    TriggerRecord(
        type="budget",
        # Acknowledging any answer grants a fresh allowance (and its minutes count from
        # then: ``rules.decide.triggers.budget_resets``); a different cap is a threshold
        # change (start_task), so approve has nothing to widen here.
        words="budget",
        answers=_ANSWERS,
        raise_on_false_alarm="max_tool_calls, max_failing_test_runs or max_minutes",
        resets_on_ack=("tool_calls", "failing_test_runs"),
        limits=(("tool_calls", "max_tool_calls"), ("failing_test_runs", "max_failing_test_runs")),
        templates=_templates(
            trigger_budget_tool_calls=_BUDGET,
            trigger_budget_minutes=_BUDGET,
            trigger_budget_failing_test_runs=_BUDGET,
        ),
        evidence=COUNTED_EVIDENCE,
        view="budget",
    ),
    TriggerRecord(
        type="ask_human",
        words="question from the agent",
        answers=("guidance", "override", "approve", "terminate", "withdraw"),
        raise_on_false_alarm=None,
        resets_on_ack=(),
        limits=(),
        templates=_templates(trigger_ask_human=("reason",)),
        evidence=NO_EVIDENCE,
        view="question",
        raised_by_agent=True,
    ),
    TriggerRecord(
        type="system_error",
        words="system error",
        answers=("guidance", "override", "terminate", "withdraw"),
        raise_on_false_alarm=None,
        resets_on_ack=(),
        limits=(),
        templates=_templates(trigger_system_error=("reason",)),
        evidence=NO_EVIDENCE,
        view="question",
        raised_by_agent=True,
    ),
)

BY_TYPE: Mapping[str, TriggerRecord] = MappingProxyType({r.type: r for r in RECORDS})
# The kinds the agent raises itself, in the records' order.
RAISED_BY_AGENT: tuple[str, ...] = tuple(r.type for r in RECORDS if r.raised_by_agent)
# Every trigger's templates, with the placeholders the code supplies (part of prompts.py's
# contract).
TEMPLATES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {name: fields for r in RECORDS for name, fields in r.templates.items()}
)


def view_of(kind: str) -> str:
    """The view of a kind's evidence; the generic one for a kind no record names (a type an
    older or newer version stored)."""
    record = BY_TYPE.get(kind)
    return record.view if record is not None else GENERIC_VIEW
