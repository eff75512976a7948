"""OpenAI Codex CLI's hook payloads and answers.

Codex speaks Claude Code's hook protocol with its own tools and limits (checked against
Codex's hook schemas and tool handlers):

- **Events used**: ``PreToolUse`` (gate, pause), ``PermissionRequest`` (an approval
  prompt is about to be shown), ``PostToolUse`` (edits, shell output, test runs), ``Stop``
  and ``SessionStart``. Every payload carries ``session_id``, ``cwd``, ``hook_event_name``,
  ``model``, ``permission_mode`` and ``transcript_path``; the turn's events add ``turn_id``,
  the tool events ``tool_name``, ``tool_input`` and (not ``PermissionRequest``)
  ``tool_use_id``. There is no ``PostToolUseFailure``: ``PostToolUse`` follows failed calls
  too.
- **Tools**: every shell tool (``shell``, ``exec_command``, unified exec) reaches a hook as
  ``Bash`` with ``tool_input.command``. Every edit is ``apply_patch`` with the whole patch
  text in ``tool_input.command`` (``*** Add File:``, ``*** Update File:`` with an optional
  ``*** Move to:``, ``*** Delete File:``), paths relative to ``cwd`` or absolute; each file
  it names is an edit, and each is gated. MCP tools are ``mcp__<server>__<tool>``.
- **Results**: ``tool_response`` of ``Bash`` is a string, the command's output, without an
  exit status as a field; when the string is Codex's own summary ("Process exited with code
  N", "Exit code: N") the status is read from it, else the outcome is unknown and only a
  test run's summary is recorded (as for Cursor's ``afterShellExecution``). ``apply_patch``
  answers a string too ("Success. Updated the following files: ...").
- **Answers** (stdout JSON, exit 0; Codex rejects an answer with a field it does not
  support, and then ignores all of it): ``PreToolUse`` denies with
  ``hookSpecificOutput.permissionDecision: "deny"`` and a non-empty reason, and accepts
  neither ``continue: false``, ``stopReason`` nor ``additionalContext`` there, so a halt is
  said as ``systemMessage``; ``PermissionRequest`` answers ``hookSpecificOutput.decision``
  ``{"behavior": "allow"}`` or ``{"behavior": "deny", "message": ...}``; ``PostToolUse``
  and ``SessionStart`` add ``hookSpecificOutput.additionalContext``; ``Stop`` refuses with
  ``decision: "block"`` and a ``reason``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..models.limits import PATH_MAX
from . import claude_code
from .description import HostDescription
from .events import (
    OUTPUT_MAX,
    Answer,
    HookEvent,
    Kind,
    flag,
    input_digest,
    mapping,
    text,
)

HOST_NAME = "codex"
EVENTS: dict[str, Kind] = {
    "PreToolUse": "pre_tool",
    "PermissionRequest": "permission_request",
    "PostToolUse": "post_tool",
    "Stop": "stop",
    "SessionStart": "session_start",
    "StopFailure": "stop_failure",
}
PATCH_TOOL = "apply_patch"
SHELL_TOOL = "Bash"
READ_TOOLS = (
    "view_image",
    # Its own: a deferred tool's schema (our tools wait behind it), MCP resources.
    "tool_search", "list_mcp_resources", "list_mcp_resource_templates", "read_mcp_resource",
)  # fmt: skip
# Codex sets no variable of its own: one exported as Claude Code's is read as there.
PROJECT_VARIABLE = "CLAUDE_PROJECT_DIR"
# PreToolUse and PermissionRequest on every tool, PostToolUse on the shell and the patch
# (Codex has no PostToolUseFailure: a failed call reaches PostToolUse).
HANDLERS = (
    ("PreToolUse", "*"),
    ("PermissionRequest", "*"),
    ("PostToolUse", f"{SHELL_TOOL}|{PATCH_TOOL}"),
    ("Stop", None),
    ("SessionStart", None),
)
# The most files one patch is read for: gating and recording stay bounded.
PATCH_FILES_MAX = 50

# The header lines of a patch that name a file: add, update, delete, and the target of a move.
_PATCH_HEADER = re.compile(r"^\*\*\* (?:Add File|Update File|Delete File|Move to): (.+?)\s*$", re.M)
# Codex's own summary of a finished command: the exit status, then the output.
_EXIT_LINE = re.compile(r"^(?:Process exited with code|Exit code:?)\s+(-?\d+)\s*$", re.M)
_OUTPUT_LINE = re.compile(r"^(?:Final output|Output):[ \t]*\n", re.M)
_SUMMARY_HEAD = 400  # the status line is among the first lines of the summary


def patch_paths(patch: str, cwd: str | None) -> tuple[str, ...]:
    """Every file a patch adds, updates, deletes or moves to, absolute, in order, once each."""
    found: list[str] = []
    for match in _PATCH_HEADER.finditer(patch):
        path = match.group(1)
        if not path.startswith("/") and cwd:
            path = cwd.rstrip("/") + "/" + path
        if path not in found:
            found.append(path[: PATH_MAX + 1])
        if len(found) >= PATCH_FILES_MAX:
            break
    return tuple(found)


def split_exit_status(response: str) -> tuple[int | None, str]:
    """The exit status Codex's summary names (else None) and the output without the summary."""
    head = response[:_SUMMARY_HEAD]
    status = _EXIT_LINE.search(head)
    if status is None:
        return None, response
    code = int(status.group(1))
    body = _OUTPUT_LINE.search(response, status.end())
    return code, response[body.end() :] if body else response[status.end() :].lstrip("\n")


def _response(response: object) -> tuple[str | None, int | None]:
    """A ``tool_response``: a string (Codex's form) or an object of the usual fields."""
    if isinstance(response, str):
        code, output = split_exit_status(response[:OUTPUT_MAX])
        return output or None, code
    parts = [text(response, key, limit=OUTPUT_MAX) for key in ("stdout", "stderr", "output")]
    joined = "\n".join(p for p in parts if p)
    code = response.get("exit_code") if isinstance(response, Mapping) else None
    return joined or None, code if isinstance(code, int) and not isinstance(code, bool) else None


def parse(payload: Mapping[str, Any]) -> HookEvent:
    """A Codex payload as a ``HookEvent``."""
    name = text(payload, "hook_event_name", limit=64) or ""
    kind = EVENTS.get(name, "unknown")
    tool_name = text(payload, "tool_name", limit=256)
    tool_input = mapping(payload, "tool_input")
    cwd = text(payload, "cwd")
    command = text(tool_input, "command", limit=OUTPUT_MAX)
    paths: tuple[str, ...] = ()
    if tool_name == PATCH_TOOL:
        paths = patch_paths(command or text(tool_input, "patch", "input", limit=OUTPUT_MAX) or "", cwd)
        command = None  # a patch is not a shell command
    output: str | None = None
    exit_code: int | None = None
    if kind == "post_tool" and tool_name != PATCH_TOOL:
        output, exit_code = _response(payload.get("tool_response"))
    elif kind == "stop_failure":
        output = text(payload, "error_details", "last_assistant_message", limit=OUTPUT_MAX)
    return HookEvent(
        host=HOST_NAME,
        name=name,
        kind=kind,
        session_id=text(payload, "session_id", limit=256),
        tool_use_id=text(payload, "tool_use_id", limit=256),
        tool_name=tool_name,
        file_path=paths[0] if paths else None,
        paths=paths,
        command=command,
        output=output,
        exit_code=exit_code,
        # Codex says nothing about a command's success but what its summary says.
        outcome_unknown=kind == "post_tool" and tool_name != PATCH_TOOL and exit_code is None,
        cwd=cwd,
        stop_hook_active=flag(payload, "stop_hook_active"),
        failure_type=text(payload, "error", limit=64) if kind == "stop_failure" else None,
        request_digest=input_digest(tool_name, tool_input) if kind == "permission_request" else "",
        description=text(tool_input, "description", limit=1000),
    )


def encode(answer: Answer, event: HookEvent) -> dict[str, Any] | None:
    """The JSON Codex reads for ``answer`` (None: print nothing, no decision): Claude Code's,
    but a halt before a tool call is said as a message (Codex takes no ``continue: false``
    there) and a denied permission never interrupts."""
    if event.kind == "pre_tool" and answer.halt:
        answer = answer._replace(halt=None, notice=" ".join(n for n in (answer.halt, answer.notice) if n))
    out = claude_code.encode(answer, event)
    if out is not None and event.kind == "permission_request":
        out["hookSpecificOutput"]["decision"].pop("interrupt", None)
    return out


HOST = HostDescription(
    name=HOST_NAME,
    parse=parse,
    encode=encode,
    # Claude Code's layout; Codex also reads [hooks] tables of config.toml, left alone.
    settings_file=(".codex", "hooks.json"),
    layout="groups",
    handlers=HANDLERS,
    project_variables=(PROJECT_VARIABLE,),
    edit_tools=(PATCH_TOOL,),
    shell_tools=(SHELL_TOOL,),
    read_tools=READ_TOOLS,
    api_errors=True,
)
