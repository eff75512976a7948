"""Input limits (SPEC 7) as reusable annotated types.

The MCP adapter uses these in tool signatures, so the JSON Schema the client sees carries
the limits and a violation is reported by field name before any code runs; the services
use the same constants when input arrives by another door (CLI, hooks).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

TEXT_MAX = 64 * 1024
LARGE_TEXT_MAX = 1024 * 1024
LIST_MAX = 500
PATH_MAX = 4096
TASK_ID_PATTERN = r"^[A-Za-z0-9._:/@-]{1,128}$"
# The largest integer SQLite stores (a signed 64-bit INTEGER): an id or revision above it
# names no row, and binding it fails inside SQLite instead of saying what is wrong.
SQLITE_INTEGER_MAX = 2**63 - 1
# What one agent-facing result may cost the model's context, whatever the history behind it
# (a stuck agent's results once grew with every repeat), and what a get_escalation poll
# that finds nothing new may cost. Measured as the compact JSON the tools send.
RESULT_MAX_BYTES = 16 * 1024
POLL_MAX_BYTES = 4 * 1024

TaskId = Annotated[str, Field(pattern=TASK_ID_PATTERN, min_length=1, max_length=128)]
ShortText = Annotated[str, Field(max_length=TEXT_MAX)]
LargeText = Annotated[str, Field(max_length=LARGE_TEXT_MAX)]
Name = Annotated[str, Field(min_length=1, max_length=256)]
StepName = Annotated[str, Field(min_length=1, max_length=256)]
Path = Annotated[str, Field(min_length=1, max_length=PATH_MAX)]
Glob = Annotated[str, Field(min_length=1, max_length=PATH_MAX)]
PathList = Annotated[list[Path], Field(max_length=LIST_MAX)]
GlobList = Annotated[list[Glob], Field(max_length=LIST_MAX)]
Count = Annotated[int, Field(ge=0, le=10_000_000)]
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
Priority = Literal["normal", "high"]
Role = Literal["agent", "operator"]
