"""Which host sent a payload, and the answer in the JSON that host reads (pure, no I/O).

The entry that ran (``hook <host>``) names the host whose hooks ran it; its description
(``hosts.py``) may name guests, other hosts that run its hooks with their own payloads:
Cursor runs the hooks of ``.claude/settings.json`` with its own payload shape. Such a
payload is read as the guest's, and the answer carries both forms (here Claude Code's
``hookSpecificOutput``/``decision`` and Cursor's ``permission``/``agent_message``/
``followup_message``), so it is understood whichever way the guest reads it.

Codex's payloads look like Claude Code's (the same event and field names), so it is the
entry, not the payload, that tells them apart.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .events import Answer, HookEvent
from .hosts import describe


def parse_payload(payload: Mapping[str, Any], entry: str = "claude-code") -> HookEvent:
    """The event in ``payload``, whichever host's shape it has, sent to the ``entry`` that ran."""
    host = describe(entry)
    for guest in map(describe, host.guests):
        if guest.recognises(payload):
            return guest.parse(payload)
    return host.parse(payload)


def encode_answer(answer: Answer, event: HookEvent, entry: str) -> dict[str, Any] | None:
    """The JSON to print (None: print nothing) for ``answer`` at the ``entry`` that ran."""
    native = describe(event.host).encode(answer, event)
    if event.host == entry:
        return native
    both = {**(describe(entry).encode(answer, event) or {}), **(native or {})}
    return both or None
