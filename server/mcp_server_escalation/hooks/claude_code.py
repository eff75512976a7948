"""Claude Code's hook payloads and answers, as Claude Code's hooks reference documents them.

How each event is used is in docs/hooks.md.

Events used: ``PreToolUse`` (gate, pause), ``PostToolUse`` (edits, shell output, test
runs), ``PostToolUseFailure`` (errors; a non-zero Bash exit arrives here with ``error`` =
``"Exit code N\\n<output>"``), ``Stop`` and ``SessionStart``. Answers are JSON on stdout
with exit 0: a ``permissionDecision: deny`` (never ``allow``: that would skip the user's
own permission prompt), ``additionalContext``, ``decision: block`` for Stop.

``PermissionRequest`` (a permission dialog is about to be shown) carries ``tool_name`` and
``tool_input`` like ``PreToolUse`` but no ``tool_use_id``, and an optional
``permission_suggestions``; it is answered with ``hookSpecificOutput.decision``:
``{"behavior": "allow"}``, or ``{"behavior": "deny", "message": ...}`` (the model reads the
message) with ``"interrupt": true`` to stop the agent. ``StopFailure`` (the turn ended on
an API error) carries ``error`` (``rate_limit``, ``authentication_failed``,
``billing_error``, ``invalid_request``, ``server_error``, ``max_output_tokens`` or
``unknown``), optional ``error_details`` and ``last_assistant_message`` (the error text
shown in the conversation); its answer is ignored, so it is only recorded.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..models.limits import PATH_MAX
from ..rules.reading.shell_output import split_exit_code
from .description import HostDescription
from .events import (
    OUTPUT_MAX,
    Answer,
    HookEvent,
    Kind,
    clip,
    flag,
    input_digest,
    integer,
    mapping,
    text,
)

HOST_NAME = "claude-code"
EVENTS: dict[str, Kind] = {
    "PreToolUse": "pre_tool",
    "PostToolUse": "post_tool",
    "PostToolUseFailure": "post_tool_failure",
    "Stop": "stop",
    "SessionStart": "session_start",
    "PermissionRequest": "permission_request",
    "StopFailure": "stop_failure",
}

# Cursor-shaped events answered in Claude's form (Cursor reads it) need Claude's names.
_NAMES: dict[str, str] = {kind: name for name, kind in EVENTS.items()}

EDIT_TOOLS = ("Edit", "Write", "MultiEdit", "NotebookEdit")
SHELL_TOOLS = ("Bash", "PowerShell")
READ_TOOLS = (
    "Read", "Grep", "Glob", "LS", "NotebookRead", "WebFetch", "WebSearch", "TodoWrite", "TodoRead",
    "BashOutput", "AskUserQuestion",
    # Its own: a deferred tool's schema (our tools wait behind it), MCP resources.
    "ToolSearch", "ListMcpResourcesTool", "ReadMcpResourceTool",
)  # fmt: skip
PROJECT_VARIABLE = "CLAUDE_PROJECT_DIR"
# PreToolUse and PermissionRequest on every tool (a pause holds any tool), PostToolUse on
# the edit and shell tools only (nothing else is recorded), PostToolUseFailure on every tool.
HANDLERS = (
    ("PreToolUse", "*"),
    ("PostToolUse", "|".join((*EDIT_TOOLS, *SHELL_TOOLS))),
    ("PostToolUseFailure", "*"),
    ("PermissionRequest", "*"),
    ("Stop", None),
    ("StopFailure", None),
    ("SessionStart", None),
)


def _output(response: object) -> str | None:
    if isinstance(response, str):
        return response[:OUTPUT_MAX]
    parts = [text(response, key, limit=OUTPUT_MAX) for key in ("stdout", "stderr")]
    joined = "\n".join(p for p in parts if p)
    return joined or None


def parse(payload: Mapping[str, Any]) -> HookEvent:
    """A Claude Code payload as a ``HookEvent``."""
    name = text(payload, "hook_event_name", limit=64) or ""
    kind = EVENTS.get(name, "unknown")
    tool_input = mapping(payload, "tool_input")
    response = payload.get("tool_response")
    file_path = text(tool_input, "file_path", "notebook_path", "path", limit=PATH_MAX + 1) or text(
        response, "filePath", limit=PATH_MAX + 1
    )
    output: str | None = None
    exit_code: int | None = None
    interrupted = False
    if kind == "post_tool":
        output = _output(response)
        interrupted = flag(response, "interrupted")
    elif kind == "post_tool_failure":
        error = text(payload, "error", limit=OUTPUT_MAX) or ""
        exit_code, output = split_exit_code(error)
        interrupted = flag(payload, "is_interrupt")
    elif kind == "stop_failure":
        output = _api_error(payload)
    return HookEvent(
        host=HOST_NAME,
        name=name,
        kind=kind,
        session_id=text(payload, "session_id", limit=256),
        tool_use_id=text(payload, "tool_use_id", limit=256),
        tool_name=text(payload, "tool_name", limit=256),
        file_path=file_path,
        command=text(tool_input, "command", limit=OUTPUT_MAX),
        output=output,
        exit_code=exit_code,
        cwd=text(payload, "cwd"),
        stop_hook_active=flag(payload, "stop_hook_active"),
        loop_count=integer(payload, "loop_count") or 0,
        interrupted=interrupted,
        failure_type=text(payload, "error", limit=64) if kind == "stop_failure" else None,
        request_digest=input_digest(text(payload, "tool_name", limit=256), tool_input)
        if kind == "permission_request"
        else "",
        description=text(tool_input, "description", limit=1000),
    )


def _api_error(payload: Mapping[str, Any]) -> str | None:
    """A StopFailure's error as the conversation showed it, and its details."""
    parts = [text(payload, key, limit=OUTPUT_MAX) for key in ("last_assistant_message", "error_details")]
    joined = "\n".join(p for p in parts if p)
    return joined or None


def permission_answer(answer: Answer) -> dict[str, Any] | None:
    """The ``decision`` of a PermissionRequest answer (Claude Code's and Codex's form)."""
    if answer.deny:
        return {"behavior": "deny", "message": clip(answer.deny)}
    if answer.allow:
        return {"behavior": "allow"}
    return None


def encode(answer: Answer, event: HookEvent) -> dict[str, Any] | None:
    """The JSON Claude Code reads for ``answer`` (None: print nothing, no decision)."""
    if answer.empty:
        return None
    out: dict[str, Any] = {}
    if event.kind == "permission_request":
        decision = permission_answer(answer)
        if decision is not None and answer.halt and decision["behavior"] == "deny":
            decision["interrupt"] = True
        if decision is not None:
            out["hookSpecificOutput"] = {"hookEventName": "PermissionRequest", "decision": decision}
        return out or None
    if answer.deny and event.kind == "pre_tool":
        out["hookSpecificOutput"] = {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": clip(answer.deny),
        }
    if answer.context and event.kind in ("post_tool", "post_tool_failure", "session_start"):
        out["hookSpecificOutput"] = {
            "hookEventName": _NAMES[event.kind],
            "additionalContext": clip(answer.context),
        }
    if answer.block and event.kind == "stop":
        out["decision"] = "block"
        out["reason"] = clip(answer.block)
    if answer.halt:
        out["continue"] = False
        out["stopReason"] = clip(answer.halt)
    if answer.notice:
        out["systemMessage"] = clip(answer.notice)
    return out or None


HOST = HostDescription(
    name=HOST_NAME,
    parse=parse,
    encode=encode,
    settings_file=(".claude", "settings.json"),
    layout="groups",
    handlers=HANDLERS,
    project_variables=(PROJECT_VARIABLE,),
    edit_tools=EDIT_TOOLS,
    shell_tools=SHELL_TOOLS,
    read_tools=READ_TOOLS,
    api_errors=True,
    guests=("cursor",),
    http=True,
    wake_event="Stop",
)
