"""Bounded evidence: what an escalation shows of a history that keeps growing.

A trigger keeps firing while its counter keeps rising: a stuck agent repeats its error
hundreds of times, and every repeat refreshes the trigger on the open escalation. Its
evidence keeps the items that fired it, the latest few since, and counts; everything else
stays in the store, where the resources show it (``failure://{id}``). So the escalation, and
every result that carries it, is as large after a thousand repeats as after four, and
refreshing it reads and writes a fixed amount.

A run's evidence, as stored in the escalation's ``context.evidence``::

    {"count": 1000,          # items of the run so far (the counter that fired)
     "count_at_firing": 3,   # the count when the trigger joined the escalation
     "at_firing": [...],     # the items that fired it (the latest FIRING_SHOWN of them)
     "latest": [...],        # the latest items since (at most LATEST_SHOWN)
     "omitted": 994}         # items of the run in neither list

Texts are clipped to ``TEXT_SHOWN`` characters, keeping head and tail: an error's last line
is as often the one that matters as its first. Within a list, an item without ``message``
has the message of the item before it.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from typing import Any

FIRING_SHOWN = 5
LATEST_SHOWN = 3
TEXT_SHOWN = 400
# Lists that are not runs: the latest test runs of a stall, the files already modified.
TEST_RUNS_SHOWN = 10
PATHS_SHOWN = 50
# A task's scope as escalations show it (the task keeps it whole): the first globs, clipped;
# messages that name the scope show fewer and say how many more there are.
SCOPE_SHOWN = 20
SCOPE_NAMED = 5
GLOB_TEXT_SHOWN = 160
# Items read per refresh: enough for either list, never the run.
RUN_READ = max(FIRING_SHOWN, LATEST_SHOWN)
# The task's latest actions as an escalation shows them: summaries. Each action's texts are
# clipped and its lists cut to their first items (twenty progress reports of 500 paths made
# one escalation 3.2 MB); an action still over ACTION_MAX_BYTES shows its detail as one
# clipped line, and the actions shown stop at RECENT_ACTIONS_MAX_BYTES, newest first.
# Bytes, not characters: a character costs up to four.
ACTION_TEXT_SHOWN = 160
ACTION_ITEMS_SHOWN = 5
ACTION_MAX_BYTES = 1024
RECENT_ACTIONS_MAX_BYTES = 4096
# Action summaries kept in memory (``stored_summary``): the latest actions of many tasks.
SUMMARIES_KEPT = 4096
_ACTION_STEPS = ((ACTION_TEXT_SHOWN, ACTION_ITEMS_SHOWN), (80, 3), (40, 2))
# The last step: every text at most 40 characters (160 bytes), the action's few fields and
# one line of its detail, far under ACTION_MAX_BYTES.
_LAST_TEXT = 40
_CLIP_MARK = " […{omitted} characters omitted…] "


def clip(text: str, limit: int = TEXT_SHOWN) -> str:
    """``text`` in at most about ``limit`` characters: head and tail, and how much is left out."""
    if len(text) <= limit:
        return text
    head, tail = clip_sides(limit)
    return clipped(text[:head], text[-tail:], len(text))


def clip_sides(limit: int) -> tuple[int, int]:
    """The characters ``clip`` keeps of a longer text's head and of its tail."""
    return limit // 3, limit - limit // 3


def clipped(head: str, tail: str, length: int) -> str:
    """What ``clip`` shows of a text of ``length`` characters, from its ``head`` and ``tail``
    (the store reads only those of a long text)."""
    return head + _CLIP_MARK.format(omitted=length - len(head) - len(tail)) + tail


def is_clipped(text: str) -> bool:
    """Was ``text`` shortened by ``clip`` (its middle, where an error may be, left out)?"""
    _, _, rest = text.partition(" […")
    return bool(rest) and rest.split(" ", 1)[0].isdigit() and " characters omitted…] " in rest


def clip_texts(value: Any, limit: int = TEXT_SHOWN) -> Any:
    """``value`` (JSON-like) with every string clipped (``clip``)."""
    if isinstance(value, str):
        return clip(value, limit)
    if isinstance(value, dict):
        return {key: clip_texts(item, limit) for key, item in value.items()}
    if isinstance(value, list):
        return [clip_texts(item, limit) for item in value]
    return value


def shortened(value: Any, text_limit: int, items: int) -> Any:
    """``value`` (JSON-like) with every string clipped and every list and object cut to its
    first ``items`` entries, a last item saying how many more there are."""
    if isinstance(value, str):
        return clip(value, text_limit)
    if isinstance(value, dict):
        kept = {key: shortened(item, text_limit, items) for key, item in list(value.items())[:items]}
        rest = len(value) - len(kept)
        return {**kept, "(more)": f"(+{rest} more)"} if rest else kept
    if isinstance(value, list):
        kept_items = [shortened(item, text_limit, items) for item in value[:items]]
        rest = len(value) - len(kept_items)
        return [*kept_items, f"(+{rest} more)"] if rest else kept_items
    return value


def json_bytes(value: Any) -> int:
    """Bytes of ``value`` as compact JSON in UTF-8, as the tools send it."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode())


def action_summary(action: dict[str, Any]) -> dict[str, Any]:
    """One action as an escalation shows it, in at most ``ACTION_MAX_BYTES``: shortened a
    step further each time it is still over, down to one short line of its detail."""
    detail = action.get("detail", {})
    for text_limit, items in _ACTION_STEPS:
        summary = {**clip_texts(action, text_limit), "detail": shortened(detail, text_limit, items)}
        if json_bytes(summary) <= ACTION_MAX_BYTES:
            return summary
    line = json.dumps(detail, ensure_ascii=False, sort_keys=True)
    return {**clip_texts(action, _LAST_TEXT), "detail": {"summary": clip(line, _LAST_TEXT)}}


def sized_summary(action: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """``action_summary(action)`` and its bytes as compact JSON."""
    summary = action_summary(action)
    return summary, json_bytes(summary)


def stored_summary(action: tuple[str, str, str, str]) -> tuple[dict[str, Any], int]:
    """``sized_summary`` of an action as stored (when, by whom, what kind, its detail as JSON
    text), a fresh copy each time (the caller may change it)."""
    text, size = _stored_summary_text(action)
    return json.loads(text), size


@functools.lru_cache(maxsize=SUMMARIES_KEPT)
def _stored_summary_text(action: tuple[str, str, str, str]) -> tuple[str, int]:
    """An action's summary as JSON, and its bytes. An action never changes once recorded,
    and a paused agent that repeats its error refreshes the open escalation's context with
    every repeat: summarising the same latest actions again each time was a sixth of the
    call (``benchmarks/bench_user_paths.py``)."""
    at, agent_id, kind, detail_json = action
    summary, size = sized_summary(
        {"at": at, "agent_id": agent_id, "kind": kind, "detail": json.loads(detail_json)}
    )
    return json.dumps(summary, ensure_ascii=False), size


def recent_summaries(
    actions: Sequence[Any], summarise: Callable[[Any], tuple[dict[str, Any], int]] = sized_summary
) -> list[dict[str, Any]]:
    """The latest of ``actions`` (oldest first) as summaries, at most
    ``RECENT_ACTIONS_MAX_BYTES`` in all: the newest are kept. ``summarise`` gives an action's
    summary and its bytes (``sized_summary``, or a cache of it)."""
    shown: list[dict[str, Any]] = []
    total = 0
    for action in reversed(actions):
        summary, size = summarise(action)
        total += size
        if total > RECENT_ACTIONS_MAX_BYTES:
            break
        shown.append(summary)
    return shown[::-1]


def fired_run(latest: list[dict[str, Any]], count: int) -> dict[str, Any]:
    """A run's evidence when its trigger fires: ``latest`` holds the run's latest items."""
    at_firing = latest_only(latest, min(FIRING_SHOWN, count))
    return {
        "count": count,
        "count_at_firing": count,
        "at_firing": at_firing,
        "latest": [],
        "omitted": count - len(at_firing),
    }


def refreshed_run(
    previous: dict[str, Any] | None, latest: list[dict[str, Any]], count: int
) -> dict[str, Any]:
    """The run's evidence after one more firing: what fired it stays, the latest few follow.

    A count that did not grow means a new run (the counter was reset in between): it is
    evidence of its own firing, not a continuation of the old one.
    """
    if not previous or count <= previous.get("count", 0) or "count_at_firing" not in previous:
        return fired_run(latest, count)
    since = count - previous["count_at_firing"]
    shown = latest_only(latest, min(LATEST_SHOWN, since))
    return {
        **previous,
        "count": count,
        "latest": shown,
        "omitted": count - len(previous["at_firing"]) - len(shown),
    }


def latest_only(items: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """The latest ``limit`` of ``items`` (oldest first), their texts clipped.

    An item whose ``message`` is the one of the item before it leaves it out: the
    occurrences of a repeated error mostly carry the same text, and a model would read it
    once per occurrence (a pytest failure is hundreds of characters).
    """
    if limit <= 0:
        return []
    shown: list[dict[str, Any]] = []
    before: Any = None
    for item in items[-limit:]:
        clipped = clip_texts(item)
        message = clipped.get("message")
        if message is not None and message == before:
            clipped = {key: value for key, value in clipped.items() if key != "message"}
        before = message
        shown.append(clipped)
    return shown


def scope_shown(scope: list[str]) -> list[str]:
    """The first ``SCOPE_SHOWN`` globs of a scope, clipped: how an escalation shows it."""
    return [clip(glob, GLOB_TEXT_SHOWN) for glob in scope[:SCOPE_SHOWN]]


def scope_named(scope: list[str]) -> list[str]:
    """A scope as a message names it: the first ``SCOPE_NAMED`` globs, clipped, and a last
    item saying how many more there are (a short scope is named whole)."""
    named = [clip(glob, GLOB_TEXT_SHOWN) for glob in scope[:SCOPE_NAMED]]
    rest = len(scope) - len(named)
    return [*named, f"(+{rest} more)"] if rest else named
