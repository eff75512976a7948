"""A client's wait for a human's answer, run as an MCP task (adapters/mcp/task_waits.py)."""

from __future__ import annotations

from typing import Any, Literal

from .base import Record

# How the wait asks the person at the client: a form, the console's link, or not (the client
# cannot show one, the human declined, or the link is open already).
Asking = Literal["form", "url", "no"]
WaitStatus = Literal["working", "completed", "cancelled"]


class Wait(Record):
    """One wait as stored: the escalation it waits on, who may read it, how it asks, when
    the caller's wait ends (None: a wait stored before waits ended) and the revision it named,
    and the tool result it completed with (kept, so every later read returns the same)."""

    wait_id: str
    escalation_id: int
    owner: str
    asking: Asking
    status: WaitStatus
    result: dict[str, Any] | None
    created_at: str
    updated_at: str
    ends_at: str | None = None
    known_revision: int | None = None
