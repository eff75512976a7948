"""One raw hook event in, the host's JSON out: what the hook process and the relay share.

``prepare`` is synchronous and needs no store: it parses the payload, triages it once
(``triage.py``) and sorts out the events whose answer never depends on the store (reads).
``answer`` runs the rest from that triaged value on an open runtime: the hook process opens
its own, the relay (``relay_server.py``) lends the MCP server's. Both end in the same bytes
on the host's stdout.

``prepare_remote`` is ``prepare`` for an event a remote agent posted to the HTTP server
(``adapters/http/hooks.py``): that agent has no environment or working directory here, so
its project is the event's ``cwd`` and its only override the task it names. The answer is
the same JSON, sent as the response's body.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from ..models.limits import PATH_MAX
from ..rules.wording.hook_input import InputProblem
from .events import HookEvent, loads_valid
from .plan import usable_path
from .protocol import encode_answer, parse_payload
from .triage import Triaged, needs_store, triage

if TYPE_CHECKING:
    from ..services.runtime import Runtime
    from ..settings import Settings

# Larger payloads (an Edit's tool_response carries the whole original file) are ignored.
MAX_INPUT_BYTES = 64 * 1024 * 1024
# Where the HTTP server takes a remote agent's events: this, then the entry (``claude-code``).
HTTP_PATH = "/hooks/"


class HookInputError(Exception):
    """The event cannot be handled; the host gets no decision. It carries the facts
    (``problem``); the words are ``rules/wording/hook_input.py``'s, from the prompts."""

    def __init__(self, problem: InputProblem) -> None:
        super().__init__(problem.problem)
        self.problem = problem


def warning(text: str) -> str:
    """The hook's one line on stderr, the same whether the hook or the relay answered."""
    return "mcp-server-escalation hook: " + " ".join(text.split())[:500] + "\n"


def _payload(raw: bytes) -> dict[str, object]:
    if len(raw) > MAX_INPUT_BYTES:
        raise HookInputError(InputProblem("too_large", limit=MAX_INPUT_BYTES))
    try:
        payload = loads_valid(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise HookInputError(InputProblem("not_utf8", byte=exc.start + 1)) from exc
    except json.JSONDecodeError as exc:
        raise HookInputError(InputProblem("malformed_json", line=exc.lineno, column=exc.colno)) from exc
    except RecursionError as exc:  # nested deeper than the parser goes
        raise HookInputError(InputProblem("too_deep")) from exc
    except ValueError as exc:  # JSON, but a value Python refuses (an integer of 5,000 digits)
        raise HookInputError(InputProblem("unreadable")) from exc
    if not isinstance(payload, dict):
        raise HookInputError(InputProblem("not_object"))
    return payload


def prepare(
    raw: bytes,
    settings: Settings,
    env: Mapping[str, str],
    cwd: str | None = None,
    *,
    entry: str = "claude-code",
) -> Triaged | None:
    """The triaged event to answer from the store; None when the answer is "no decision"
    without it. ``env`` and ``cwd`` are the hook process's (the relay answers for another).

    Raises ``HookInputError`` for a payload the hook cannot use.
    """
    return _for_store(triage(_event(raw, entry), settings.hooks, env, cwd), settings)


def prepare_remote(
    raw: bytes, settings: Settings, task: str | None, *, entry: str = "claude-code"
) -> Triaged | None:
    """``prepare`` for an event posted by an agent on another machine: the project is the
    event's ``cwd`` (this process's own means nothing to that agent), ``task`` the task it
    names (its ``ESCALATION_TASK``), and no other variable of this process counts.

    Raises ``HookInputError`` for a payload the hook cannot use, or one without an absolute ``cwd``.
    """
    event = _event(raw, entry)
    root = usable_path(event.cwd)
    if root is None or not PurePosixPath(root).is_absolute():
        raise HookInputError(InputProblem("no_cwd", limit=PATH_MAX))
    env = {"ESCALATION_TASK": task} if task else {}
    return _for_store(triage(event, settings.hooks, env, root), settings)


def _event(raw: bytes, entry: str) -> HookEvent:
    payload = _payload(raw)
    event = parse_payload(payload, entry)
    if event.kind == "unknown":
        # The name as sent (the event's own is cut short unmarked); the words clip it visibly.
        named = payload.get("hook_event_name")
        raise HookInputError(
            InputProblem("unknown_event", name=named[:1024] if isinstance(named, str) else "")
        )
    return event


def _for_store(triaged: Triaged, settings: Settings) -> Triaged | None:
    if not needs_store(triaged, settings.hooks):
        return None  # a read: let through and never recorded, whatever the store holds
    return triaged


async def answer(rt: Runtime, entry: str, triaged: Triaged, settings: Settings) -> str:
    """The JSON the host reads for the event ("" for no decision), after recording it."""
    from .runner import handle  # noqa: PLC0415 (the services load only for store events)

    decided = await handle(rt, triaged, settings.hooks)
    encoded = encode_answer(decided, triaged.event, entry)
    return json.dumps(encoded, ensure_ascii=False) if encoded else ""
