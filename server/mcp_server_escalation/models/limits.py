"""Input limits as reusable annotated types.

The MCP adapter uses these in tool signatures, so the JSON Schema the client sees carries
the limits and a violation is reported by field name before any code runs; the services
use the same constants when input arrives by another door (CLI, hooks).

Text limits count characters (code points, as JSON Schema's ``maxLength`` does), not
bytes: a text at its limit costs at most four times as many bytes in UTF-8. What the
server returns or sends is measured in bytes (``RESULT_MAX_BYTES``), so whatever it shows
of a stored text is clipped by characters to a quarter of the bytes it may cost.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BeforeValidator, Field, StrictBool

TEXT_MAX = 64 * 1024
LARGE_TEXT_MAX = 1024 * 1024
LIST_MAX = 500
PATH_MAX = 4096
# One list argument of strings, all its items together: 500 paths of 4 KiB each were 2 Mi
# characters in one call, copied into every result and escalation that showed them. 64 Ki
# is 500 paths of 131 characters; a real change names a few dozen paths of ~60.
LIST_TEXT_MAX = 64 * 1024
# The choices of a question: a human reads them all in one notification and picks one, and
# 500 choices of 64 KiB made one call store and return 68 MB.
OPTIONS_MAX = 20
OPTION_MAX = 1000
OPTIONS_TOTAL_MAX = 4000
# How long one get_escalation call may wait for an answer: a poll the agent repeats, well
# under the minutes hosts allow a tool call before they give up on it.
WAIT_MAX_SECONDS = 60.0
TASK_ID_PATTERN = r"^[A-Za-z0-9._:/@-]{1,128}$"
# A task's file limit, as a threshold or an approval's new limit (models/thresholds.py).
FILE_LIMIT_MAX = 1_000_000
# The largest integer SQLite stores (a signed 64-bit INTEGER): an id or revision above it
# names no row, and binding it fails inside SQLite instead of saying what is wrong.
SQLITE_INTEGER_MAX = 2**63 - 1
# What one agent-facing result may cost the model's context, whatever the history behind it
# (a stuck agent's results once grew with every repeat), and what a get_escalation poll
# that finds nothing new may cost. Measured as the compact JSON the tools send.
RESULT_MAX_BYTES = 16 * 1024
POLL_MAX_BYTES = 4 * 1024


def _at_most_characters(limit: int) -> AfterValidator:
    """A list of strings whose characters, all items together, are at most ``limit``."""

    def check(items: list[str]) -> list[str]:
        total = sum(len(item) for item in items)
        if total > limit:
            raise ValueError(
                f"the items hold {total:,} characters in all; the limit is {limit:,} characters "
                "(characters, not bytes): send fewer or shorter items"
            )
        return items

    return AfterValidator(check)


TaskId = Annotated[str, Field(pattern=TASK_ID_PATTERN, min_length=1, max_length=128)]
ShortText = Annotated[str, Field(max_length=TEXT_MAX)]
LargeText = Annotated[str, Field(max_length=LARGE_TEXT_MAX)]
Name = Annotated[str, Field(min_length=1, max_length=256)]
StepName = Annotated[str, Field(min_length=1, max_length=256)]
PathText = Annotated[str, Field(min_length=1, max_length=PATH_MAX)]
Glob = Annotated[str, Field(min_length=1, max_length=PATH_MAX)]
PathList = Annotated[list[PathText], Field(max_length=LIST_MAX), _at_most_characters(LIST_TEXT_MAX)]
GlobList = Annotated[list[Glob], Field(max_length=LIST_MAX), _at_most_characters(LIST_TEXT_MAX)]
StepList = Annotated[
    list[StepName],
    Field(max_length=LIST_MAX),
    _at_most_characters(LIST_TEXT_MAX),
]
Options = Annotated[
    list[Annotated[str, Field(max_length=OPTION_MAX)]],
    Field(max_length=OPTIONS_MAX),
    _at_most_characters(OPTIONS_TOTAL_MAX),
]
Count = Annotated[int, Field(ge=0, le=10_000_000)]


def _json_flag(value: object) -> object:
    """A flag as JSON spells it, also inside a string (hosts that send every argument as text
    send ``"false"``); anything else, "yes" or 1 included, is left for StrictBool to refuse."""
    return {"true": True, "false": False}.get(value, value) if isinstance(value, str) else value


# A yes-or-no argument: true or false, never "yes", "on" or 1 (pydantic's lax bool took them).
Flag = Annotated[StrictBool, BeforeValidator(_json_flag)]
# Waits run as MCP tasks kept per escalation (services/waits.py): the newest, the older
# forgotten (a client that polls one of them is told it is unknown or expired).
WAITS_PER_ESCALATION_MAX = 8
WaitSeconds = Annotated[float, Field(ge=0, le=WAIT_MAX_SECONDS, allow_inf_nan=False)]
EscalationId = Annotated[int, Field(ge=1, le=SQLITE_INTEGER_MAX)]
Revision = Annotated[int, Field(ge=1, le=SQLITE_INTEGER_MAX)]

TaskStatus = Literal["active", "paused", "terminated_by_human", "completed", "abandoned"]
ENDED_STATUSES: frozenset[str] = frozenset({"terminated_by_human", "completed", "abandoned"})
Severity = Literal["low", "medium", "high", "critical"]
SignalType = Literal[
    "runtime_error",
    "tool_error",
    "test_failure",
    "build_error",
    "lint_error",
    "type_error",
    "timeout",
    "schema_violation",
    "retrieval_failure",
    "loop_detected",
    "human_correction",
    "budget_pressure",
    "missing_dependency",
    "permission_denied",
    "api_unavailable",
    "network_transient",
    "tool_refusal",
]
BLOCKER_SIGNALS: frozenset[str] = frozenset({"missing_dependency", "permission_denied", "api_unavailable"})
FailureStatus = Literal["active", "resolved", "superseded"]
Outcome = Literal["success", "failure", "neutral"]
Directive = Literal["proceed", "pause", "stop"]
EscalationType = Literal[
    "repeated_error",
    "verification_limit",
    "no_file_progress",
    "test_stall",
    "file_limit",
    "scope_deviation",
    "external_blocker",
    "stagnation",
    "budget",
    "ask_human",
    "system_error",
]
EscalationStatus = Literal[
    "pending",
    "resolved",
    "resolved_with_override",
    "resolved_with_termination",
    "resolved_with_approval",
    "withdrawn",
    "agent_terminated",
]
ResponseType = Literal["guidance", "override", "terminate", "approve", "withdraw"]
# What a human may answer, in the order it is offered; withdrawing is the agent's own move.
OPERATOR_ANSWERS: tuple[ResponseType, ...] = ("guidance", "override", "approve", "terminate")
Priority = Literal["normal", "high"]
Role = Literal["agent", "operator"]
