"""Which host sent a payload, and the answer in the JSON that host reads (pure, no I/O).

The ``claude-code`` entry also receives Cursor's payloads: Cursor runs the hooks of
``.claude/settings.json`` with its own payload shape. Such a payload is read as Cursor's,
and the answer carries both forms (Claude Code's ``hookSpecificOutput``/``decision`` and
Cursor's ``permission``/``agent_message``/``followup_message``), so it is understood
whichever way Cursor reads it.

The ``codex`` entry reads Codex's payloads: they look like Claude Code's (the same event
and field names), so it is the entry, not the payload, that tells them apart.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import claude_code, codex, cursor
from .events import Answer, HookEvent


def parse_payload(payload: Mapping[str, Any], entry: str = "claude-code") -> HookEvent:
    """The event in ``payload``, whichever host's shape it has, sent to the ``entry`` that ran."""
    if entry == "codex":
        return codex.parse(payload)
    if cursor.looks_like_cursor(payload):
        return cursor.parse(payload)
    return claude_code.parse(payload)


def encode_answer(answer: Answer, event: HookEvent, entry: str) -> dict[str, Any] | None:
    """The JSON to print (None: print nothing) for ``answer`` at the ``entry`` that ran."""
    if event.host == "codex":
        return codex.encode(answer, event)
    if event.host != "cursor":
        return claude_code.encode(answer, event)
    native = cursor.encode(answer, event)
    if entry != "claude-code":
        return native
    both = {**(claude_code.encode(answer, event) or {}), **(native or {})}
    return both or None
