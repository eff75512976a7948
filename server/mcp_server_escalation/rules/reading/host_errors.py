"""Host-side API errors (a turn that ended on the model provider's error): what each one is
worth to an operator, as pure functions.

Such an error is not the agent's work failing, so it never counts in a run of identical
errors, and most of them pass by themselves:

- **Transient** (a rate limit, an overloaded or failing server, anything unknown): recorded
  and counted, never a page, unless it *persists*: it keeps coming back, with no quiet spell
  longer than ``api_error_minutes``, for at least ``api_error_minutes``. Then it is an
  external blocker that holds the task until a human looks.
- **A notice** (authentication or billing): only a person can fix it, but nothing the agent
  does is wrong, so it is shown to the operator as a non-blocking escalation with its type,
  once while it stays open, and it never gates an edit.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Literal

HostErrorKind = Literal["transient", "notice"]

# The error types a person must act on; every other type passes by itself or persists.
NOTICE_TYPES = frozenset({"authentication_failed", "billing_error"})
KEY_PREFIX = "host_error:"


# Whose hooks record their API's errors: every host the hooks' registry describes with
# api_errors (a pure rule imports no adapter, so it names them; tests/test_host_registry.py).
HOSTS = ("claude-code", "cursor", "codex")
HOST_SIGNAL = "api_unavailable"


def host_tool(host: str) -> str:
    """The tool name a host's API error is recorded under."""
    return f"{host} API"


def is_host_error(signal_type: str, tool_name: str | None) -> bool:
    """Was this failure the host's API failing (recorded by its hook), not the agent's work?
    Past failures teach the agent what not to repeat; an error of its host's provider is
    nothing it did."""
    return signal_type == HOST_SIGNAL and tool_name in {host_tool(host) for host in HOSTS}


def kind_of(error_type: str) -> HostErrorKind:
    """A notice for authentication and billing errors, else transient."""
    return "notice" if error_type in NOTICE_TYPES else "transient"


def key_of(error_type: str) -> str:
    """The trigger key of the escalation about this error type: one open at a time."""
    return f"{KEY_PREFIX}{error_type}"


def persisted(seen: list[datetime], now: datetime, minutes: float) -> bool:
    """True when the error came back with no gap longer than ``minutes`` for at least that long.

    ``seen``: earlier occurrences of the error, any order (the call's own is ``now``)."""
    window = timedelta(minutes=minutes)
    reached = now
    for at in sorted(seen, reverse=True):
        if reached - at > window:
            break  # a quiet spell: what came before it was another episode
        reached = at
    return now - reached >= window
