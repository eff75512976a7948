"""The ``[hooks]`` table of the config file: how the host hooks record, gate and pause.

Defaults are the documented behaviour (docs/hooks.md); every switch exists because
a user may reasonably want the other choice. Lists of tools and commands *add* to the
built-in read-only lists (``rules/reading/commands.py``, each host's in ``hooks/<host>.py``),
never replace them.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

Name = Annotated[str, Field(min_length=1, max_length=256)]
AttemptKind = Literal["test_run", "command"]


def _default_attempts() -> list[AttemptKind]:
    return ["test_run"]


class HooksConfig(BaseModel):
    """Host hooks (``mcp-server-escalation hook claude-code|cursor|codex``)."""

    # Built when a config's [hooks] table is validated, not at import (see settings.py).
    model_config = ConfigDict(extra="forbid", defer_build=True)

    gate_edits: bool = Field(True, description="Run the check_edit rules before every edit tool call")
    pause: bool = Field(
        True,
        description="While a blocking escalation holds the task, deny every tool call except "
        "read-only tools and this server's own MCP tools",
    )
    acknowledge_on_delivery: bool = Field(
        True,
        description="Deliver an operator's answer as the reason of the next denied tool call and "
        "acknowledge it then; false: deny until the agent calls acknowledge_response itself",
    )
    halt_while_pending: bool = Field(
        False, description="Also stop the agent (continue: false) while an escalation is pending"
    )
    stop: bool = Field(
        True,
        description="Block the agent's Stop once while the latest test run fails or an answer "
        "awaits acknowledgement",
    )
    session_context: bool = Field(True, description="Give a starting session the task's feedback")
    permission_requests: Literal["ignore", "ask"] = Field(
        "ignore",
        description="A host's permission request (PermissionRequest): ignore it (the user answers "
        "in the host as usual), or ask the operator through an approval escalation and answer "
        "the host with the operator's decision",
    )
    attempts: Annotated[list[AttemptKind], Field(max_length=2)] = Field(
        default_factory=_default_attempts,
        description="What counts as an attempt for no_file_progress besides edits (which always "
        "reset it): test runs, and/or successful non-reading shell commands",
    )
    outside_project: Literal["ignore", "gate"] = Field(
        "ignore",
        description="Edits outside the project root (plan files, /tmp): ignore them, or gate them "
        "like check_edit does (refused, scope_deviation)",
    )
    mcp_servers: Annotated[list[Name], Field(min_length=1, max_length=20)] = Field(
        default_factory=lambda: ["escalation"],
        description="Names this server is registered under in the host (mcp__<name>__<tool>)",
    )
    read_only_tools: Annotated[list[Name], Field(max_length=200)] = Field(
        default_factory=list, description="More tool names that only read (added to the built-in list)"
    )
    read_only_commands: Annotated[list[Name], Field(max_length=200)] = Field(
        default_factory=list, description="More shell programs that only read (added to the built-in list)"
    )
    test_command: Annotated[str, Field(min_length=1, max_length=4096)] | None = Field(
        None, description="A regular expression replacing the built-in test-command detector"
    )
    step: Annotated[str, Field(min_length=1, max_length=256)] = Field(
        "main", description="The step hook events are recorded under"
    )
    relay: bool = Field(
        True,
        description="A running server of the store answers hook runs over a private Unix socket "
        "(much faster than a hook process loading everything itself); false: it never listens",
    )
    relay_idle_minutes: Annotated[float, Field(ge=0, le=1440)] = Field(
        1,
        description="With no MCP server of the store running, a hook run starts a relay daemon "
        "that answers the next hook runs and exits after this many minutes without one; 0: never "
        "start one",
    )
    repeats_need_a_change: bool = Field(
        True,
        description="An error the hooks see counts again only when the agent changed a file in "
        "between that the failing command does not name (it tried a remedy); running the same "
        "check again with nothing changed reproduces the error and does not count. A tool's "
        "refusal and a blocker count every time",
    )
    repeat_grace_calls: Annotated[int, Field(ge=0, le=100000)] = Field(
        0,
        description="Among a task's first this many recorded tool calls, an error the hooks see "
        "repeated to same_error_repeated warns the model instead of pausing; its next repeat "
        "after them pauses (0, the default: no grace)",
    )
    api_error_minutes: Annotated[float, Field(gt=0, le=10080)] = Field(
        30,
        description="A host API error that passes by itself (rate limit, overload, server error) "
        "is only recorded; one that keeps coming back for this many minutes, never quiet for as "
        "long, holds the task as an external blocker",
    )
    feedback_max_chars: Annotated[int, Field(ge=500, le=9000)] = Field(
        8000, description="Budget of the feedback a starting session receives (hosts cap at 10,000)"
    )

    @field_validator("test_command")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"not a regular expression: {exc}") from exc
        return value
