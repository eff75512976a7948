"""Cursor's ``hooks.json`` payloads and answers, as Cursor's hooks documentation gives them.

How each event is used is in docs/hooks.md.

Cursor's field names for some tools are undocumented, so every field is read under each
name it is known or likely to have (``file_path``/``path``/``target_file``, ``tool_output``
as an object or a JSON string, ``exitCode``/``exit_code``). Event names are matched without
regard to the first letter's case: Cursor also runs Claude Code's ``.claude/settings.json``
hooks, and may then name the events either way.

Events used: ``preToolUse`` and ``beforeShellExecution`` (gate, pause), ``postToolUse``
(with ``exitCode`` in ``tool_output``), ``postToolUseFailure``, ``afterShellExecution``
(output but no exit code: only test runs are recorded from it) and ``afterFileEdit``
(edits), ``stop`` (``loop_count``) and ``sessionStart``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..models.limits import PATH_MAX
from .description import HostDescription
from .events import (
    OUTPUT_MAX,
    Answer,
    HookEvent,
    Kind,
    clip,
    flag,
    integer,
    mapping,
    payload_digest,
    strings,
    text,
)

HOST_NAME = "cursor"
# lower-cased event name -> (kind, tool it implies, source)
EVENTS: dict[str, tuple[Kind, str | None, str]] = {
    "pretooluse": ("pre_tool", None, "tool"),
    "beforeshellexecution": ("pre_tool", "Shell", "tool"),
    "posttooluse": ("post_tool", None, "tool"),
    "posttoolusefailure": ("post_tool_failure", None, "tool"),
    "aftershellexecution": ("post_tool", "Shell", "after"),
    "afterfileedit": ("post_tool", "Write", "after"),
    "stop": ("stop", None, "tool"),
    "sessionstart": ("session_start", None, "tool"),
}
# Keys that only Cursor's payloads carry.
MARKERS = ("cursor_version", "conversation_id", "generation_id", "workspace_roots")
# Its tools: Write (which afterFileEdit implies) and Delete edit, Shell (which the shell
# events imply) runs commands, Read and Grep read.
EDIT_TOOLS = ("Write", "Delete")
SHELL_TOOLS = ("Shell",)
READ_TOOLS = ("Read", "Grep")
PROJECT_VARIABLE = "CURSOR_PROJECT_DIR"
# It also runs Claude Code's hooks, whose variable may then be set.
CLAUDE_PROJECT_VARIABLE = "CLAUDE_PROJECT_DIR"
# postToolUse carries the exit code that afterShellExecution lacks, so that is installed.
HANDLERS = (
    ("preToolUse", None),
    ("postToolUse", None),
    ("postToolUseFailure", None),
    ("stop", None),
    ("sessionStart", None),
)


def looks_like_cursor(payload: Mapping[str, Any]) -> bool:
    """True for a payload Cursor sent (its own keys, or one of its camelCase event names)."""
    name = payload.get("hook_event_name")
    # Its names start in lower case, Claude Code's of the same events in upper case.
    camel = isinstance(name, str) and name[:1].islower() and name.lower() in EVENTS
    return camel or any(key in payload for key in MARKERS)


def _tool_output(payload: Mapping[str, Any]) -> tuple[str | None, int | None]:
    raw = payload.get("tool_output")
    data = mapping(payload, "tool_output")
    if data:
        parts = [text(data, key, limit=OUTPUT_MAX) for key in ("stdout", "stderr", "output")]
        joined = "\n".join(p for p in parts if p)
        return joined or None, integer(data, "exitCode", "exit_code", "returnCode")
    if isinstance(raw, str):
        return raw[:OUTPUT_MAX] or None, None
    return None, None


def parse(payload: Mapping[str, Any]) -> HookEvent:
    """A Cursor payload as a ``HookEvent``."""
    name = text(payload, "hook_event_name", limit=64) or ""
    kind, implied_tool, source = EVENTS.get(name.lower(), ("unknown", None, "tool"))
    tool_input = mapping(payload, "tool_input")
    tool_name = implied_tool or text(payload, "tool_name", limit=256)
    file_path = text(
        tool_input, "file_path", "path", "target_file", "filePath", "notebook_path", limit=PATH_MAX + 1
    ) or text(payload, "file_path", limit=PATH_MAX + 1)
    command = text(tool_input, "command", limit=OUTPUT_MAX) or text(payload, "command", limit=OUTPUT_MAX)
    output: str | None = None
    exit_code: int | None = None
    lowered = name.lower()
    if lowered == "posttooluse":
        output, exit_code = _tool_output(payload)
    elif lowered == "aftershellexecution":
        output = text(payload, "output", limit=OUTPUT_MAX)
    elif kind == "post_tool_failure":
        output = text(payload, "error_message", "error", limit=OUTPUT_MAX)
        exit_code = integer(payload, "exit_code", "exitCode")
    roots = strings(payload, "workspace_roots")
    return HookEvent(
        host=HOST_NAME,
        name=name,
        kind=kind,
        session_id=text(payload, "conversation_id", "session_id", limit=256),
        generation_id=text(payload, "generation_id", limit=256),
        tool_use_id=text(payload, "tool_use_id", limit=256),
        tool_name=tool_name,
        file_path=file_path,
        command=command,
        output=output,
        exit_code=exit_code,
        cwd=text(payload, "cwd") or text(tool_input, "working_directory"),
        roots=roots,
        loop_count=integer(payload, "loop_count") or 0,
        stop_status=text(payload, "status", limit=64),
        interrupted=flag(payload, "is_interrupt"),
        failure_type=text(payload, "failure_type", limit=64),
        source="after" if source == "after" else "tool",
        digest=payload_digest(payload),
    )


def encode(answer: Answer, event: HookEvent) -> dict[str, Any] | None:
    """The JSON Cursor reads for ``answer`` (None: print nothing, no decision)."""
    if answer.empty:
        return None
    out: dict[str, Any] = {}
    if answer.deny and event.kind == "pre_tool":
        reason = clip(answer.deny)
        out.update(permission="deny", user_message=reason, agent_message=reason)
    if answer.context and event.kind in ("post_tool", "post_tool_failure", "session_start"):
        out["additional_context"] = clip(answer.context)
    if answer.block and event.kind == "stop":
        out["followup_message"] = clip(answer.block)
    return out or None


def project_dirs(event: HookEvent, env: Mapping[str, str]) -> tuple[str | None, ...]:
    """Where the project may be: Cursor's variable, its first workspace root, Claude Code's
    variable, the event's working directory."""
    first_root = event.roots[0] if event.roots else None
    return env.get(PROJECT_VARIABLE), first_root, env.get(CLAUDE_PROJECT_VARIABLE), event.cwd


HOST = HostDescription(
    name=HOST_NAME,
    parse=parse,
    encode=encode,
    settings_file=(".cursor", "hooks.json"),
    layout="flat",
    handlers=HANDLERS,
    project_dirs=project_dirs,
    project_variables=(PROJECT_VARIABLE, CLAUDE_PROJECT_VARIABLE),
    edit_tools=EDIT_TOOLS,
    shell_tools=SHELL_TOOLS,
    read_tools=READ_TOOLS,
    settings_defaults=(("version", 1),),
    recognises=looks_like_cursor,
)
