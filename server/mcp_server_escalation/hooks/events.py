"""One host hook event, normalised, and the host-neutral answer to it (pure, no I/O).

The host modules (``claude_code``, ``cursor``, ``codex``: ``hosts.py``) read their payloads
into ``HookEvent`` and write ``Answer`` back in their own JSON; everything between is
host-neutral, and the tools their descriptions name are classified here together. Payload fields
are read defensively: a missing field, a field of the wrong type or an absurdly long
string is treated as absent or clipped, never trusted.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal, NamedTuple

from . import hosts

Kind = Literal[
    "pre_tool",
    "permission_request",
    "post_tool",
    "post_tool_failure",
    "stop",
    "stop_failure",
    "session_start",
    "unknown",
]
ToolKind = Literal["edit", "shell", "read", "own", "other"]

# Longest string kept from a payload field that names something (ids, tool names, paths).
NAME_MAX = 4096
# Longest tool output read (the host already truncates Bash output to ~10,000 characters).
OUTPUT_MAX = 1024 * 1024
# The hosts cap hook output strings at 10,000 characters.
ANSWER_MAX = 9500
# JSON may escape half a surrogate pair on its own ("\\udc80": a tool that printed bytes
# no encoding reads); Python's parser gives such a string, which has no UTF-8 form, so no
# store, hash or answer could take it. Only an escape can bring one in: the text itself
# was read as strict UTF-8.
SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
LONE_SURROGATE = re.compile("[\ud800-\udfff]")

# This server's tools: let through during a pause (the agent must be able to read and
# acknowledge the answer) and never recorded (the tool records itself).
OWN_TOOLS = frozenset(
    {
        "start_task",
        "end_task",
        "get_task",
        "record_failure",
        "report_progress",
        "check_edit",
        "record_attempt",
        "report_review",
        "get_feedback",
        "get_guidance",
        "update_failure",
        "raise_escalation",
        "get_escalation",
        "acknowledge_response",
        "list_escalations",
        "resolve_escalation",
    }
)


# NamedTuples, not dataclasses, in every module a hook run imports (this one, plan, runner,
# services/hooks, rules/reading/shell_output): a hook is a new process on every tool call, and a
# NamedTuple is the cheaper class to define (figures in benchmarks/README.md).
class HookEvent(NamedTuple):
    """What one hook invocation tells us, whichever host sent it."""

    host: str  # the payload's shape: a registered host's name (hosts.py)
    name: str  # the event name as received
    kind: Kind
    session_id: str | None = None
    generation_id: str | None = None
    tool_use_id: str | None = None
    tool_name: str | None = None
    file_path: str | None = None
    paths: tuple[str, ...] = ()  # every file the call edits, when it names several (a patch)
    command: str | None = None
    output: str | None = None  # what the tool printed, or the error text without "Exit code N"
    exit_code: int | None = None
    outcome_unknown: bool = False  # the host does not say whether the call succeeded
    cwd: str | None = None
    roots: tuple[str, ...] = ()
    stop_hook_active: bool = False
    loop_count: int = 0
    stop_status: str | None = None
    interrupted: bool = False
    failure_type: str | None = None  # Cursor's failure kind; the API error of a StopFailure
    source: Literal["tool", "after"] = "tool"  # after*: Cursor's afterShellExecution/afterFileEdit
    digest: str = ""  # of the whole payload: tells deliveries apart when no id does
    request_digest: str = ""  # of a permission request's tool and input: the same request again
    description: str | None = None  # what the agent says the tool call is for


class Answer(NamedTuple):
    """What the hook tells the host; empty means no decision (the host goes on as usual)."""

    deny: str | None = None  # refuse the tool call; the model reads the reason
    context: str | None = None  # add to the model's context
    block: str | None = None  # refuse to stop; the model reads the reason
    halt: str | None = None  # stop the agent altogether; the user reads the reason
    notice: str | None = None  # a message to the user only
    allow: bool = False  # grant a permission request (the user is not asked)

    @property
    def empty(self) -> bool:
        """True when there is nothing to say."""
        return not (self.deny or self.context or self.block or self.halt or self.notice or self.allow)


def loads_valid(text: str) -> Any:
    """``json.loads(text)`` with every lone surrogate in a string (a key too) made U+FFFD,
    so what an event carries is always valid text. Raises ``ValueError`` or ``RecursionError``
    as ``json.loads`` does."""
    value = json.loads(text)
    if SURROGATE_ESCAPE.search(text) is None:
        return value  # a pair the parser joined is one valid character; no escape, no surrogate
    return _made_valid(value)


def _made_valid(value: Any) -> Any:
    if isinstance(value, str):
        return LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_made_valid(key): _made_valid(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_made_valid(item) for item in value]
    return value


def clip(text: str, limit: int = ANSWER_MAX) -> str:
    """``text`` cut to ``limit`` characters (the hosts' cap on hook output)."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def text(data: object, *keys: str, limit: int = NAME_MAX) -> str | None:
    """The first of ``keys`` holding a non-empty string, clipped to ``limit``; else None."""
    if not isinstance(data, Mapping):
        return None
    for key in keys:
        value = data.get(key)
        if isinstance(value, str) and value.strip():
            return value[:limit]
    return None


def mapping(data: object, key: str) -> Mapping[str, Any]:
    """``data[key]`` if it is an object (or a JSON string of one), else an empty mapping."""
    if not isinstance(data, Mapping):
        return {}
    value = data.get(key)
    if isinstance(value, str) and value.lstrip().startswith("{") and len(value) <= OUTPUT_MAX:
        try:
            value = loads_valid(value)
        except (ValueError, RecursionError):
            return {}
    return value if isinstance(value, Mapping) else {}


def integer(data: object, *keys: str) -> int | None:
    """The first of ``keys`` holding an integer (bools are not integers here)."""
    if not isinstance(data, Mapping):
        return None
    for key in keys:
        value = data.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and -(2**31) <= value < 2**31:
            return value
    return None


def flag(data: object, key: str) -> bool:
    """True only for a JSON ``true``."""
    return isinstance(data, Mapping) and data.get(key) is True


def strings(data: object, key: str) -> tuple[str, ...]:
    """The strings of a list field (non-strings skipped)."""
    if not isinstance(data, Mapping):
        return ()
    value = data.get(key)
    if not isinstance(value, list):
        return ()
    return tuple(v[:NAME_MAX] for v in value[:50] if isinstance(v, str) and v.strip())


def payload_digest(payload: Mapping[str, Any]) -> str:
    """A short, stable digest of the whole payload."""
    canonical = json.dumps(payload, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def input_digest(tool_name: str | None, tool_input: Mapping[str, Any]) -> str:
    """A short, stable digest of a tool call's name and input (one request, asked again)."""
    return payload_digest({"tool_name": tool_name or "", "tool_input": dict(tool_input)})


def own_tool(name: str, servers: Iterable[str]) -> bool:
    """``mcp__<server>__<tool>`` (or a plugin's ``mcp__plugin_<p>_<server>__<tool>``) of ours,
    or Cursor's ``MCP:<tool>`` naming one of our tools."""
    if name.startswith("MCP:"):
        return name[4:] in OWN_TOOLS
    if not name.startswith("mcp__"):
        return False
    server, sep, tool = name[5:].rpartition("__")
    if not sep or tool not in OWN_TOOLS:
        return False
    return any(server == s or (server.startswith("plugin_") and server.endswith("_" + s)) for s in servers)


@functools.cache
def host_tools() -> dict[str, ToolKind]:
    """Each tool the host descriptions name (``hosts.py``), and its kind."""
    return {tool: kind for host in hosts.every() for tool, kind in host.tools().items()}


def tool_kind(name: str | None, *, servers: Iterable[str], read_only: Iterable[str] = ()) -> ToolKind | None:
    """What a tool does, as far as gating and recording care."""
    if not name:
        return None
    if own_tool(name, servers):  # before the hosts' tools: none of theirs is named mcp__ or MCP:
        return "own"
    return host_tools().get(name) or ("read" if name in set(read_only) else "other")
