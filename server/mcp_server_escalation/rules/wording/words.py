"""Words for the names the store uses, wherever a person reads them (pure, no I/O).

The store names things as code does: ``repeated_error``, ``count_at_firing``, ``True``.
A person reads "repeated error", "count when it fired", "yes". The CLI and the console
turn every kind, trigger, field name and flag they show into words here, so the two say
the same; ids, paths and what an agent wrote are shown as they are.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from ..triggers.records import RECORDS

# Each escalation type in words, in the records' order (the console's charts colour by it).
KIND_WORDS: dict[str, str] = {record.type: record.words for record in RECORDS}
# Statuses (of escalations and tasks) whose plain rewording would mislead or read badly.
STATUS_WORDS = {
    "agent_terminated": "ended with its task",
    "terminated_by_human": "terminated by a human",
}
# Field names whose plain rewording would mislead or read badly.
FIELD_WORDS = {
    "count_at_firing": "count when it fired",
    "at_firing": "when it fired",
    "latest": "since then",
    "all_occurrences": "all occurrences",
    "out_of_scope_paths": "paths outside the scope",
    "spec_deviation_detected": "checks its scope",
    "first_seen_at": "first seen",
    "last_seen_at": "last seen",
    "agent_id": "agent",
    "task_id": "task",
    "failure_id": "failure",
    "raised_by": "raised by",
    "attempted_action": "attempted action",
}
# The replayed corpora (data/replay_figures.toml names them by their files) as the agents and
# models whose real runs they hold.
CORPUS_WORDS = {
    "trajectories-dev": "mini-swe-agent with Gemini 3 Pro",
    "trajectories-openhands-dev": "OpenHands' CodeActAgent with Claude 3.5 Sonnet",
    "trajectories-sweagent-dev": "SWE-agent with GPT-4",
}
# An empty value as the pages and the CLI say it where nothing more specific fits.
NOTHING = "(none)"
# What is absent, said as what it is where the reader knows what is missing.
ABSENT_WORDS = {
    "files": "no files",
    "note": "no note",
    "limit": "no limit",
    "time": "not yet",
    "error": "no error",
    "place": "unknown",
    "action": "none named",
    "project": "no project",
    "scope": "any path",
    "duration": "none yet",
    "rate": "not measured",
    "escalations": "none",
    "answer": "no answer",
    "verdict": "no verdict yet",
}
# A value that is itself one of the store's names (a budget, a threshold, a signal type).
_NAME = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+")


def kind_words(kind: str) -> str:
    """An escalation's or trigger's kind in words."""
    return KIND_WORDS.get(kind) or kind.replace("_", " ")


def trigger_words(key: str) -> str:
    """A trigger's key (``budget:tool_calls``, ``repeated_error:fp-1``) in words: its kind,
    and what it counts when that is a name (a fingerprint is not for reading)."""
    kind, _, what = key.partition(":")
    said = kind_words(kind)
    return f"{said} ({name_words(what)})" if what and not what.startswith("fp-") else said


def field_words(key: str) -> str:
    """A field's name in words."""
    return FIELD_WORDS.get(key) or key.replace("_", " ")


def name_words(value: str) -> str:
    """A value that is one of the store's names in words; any other text as it is."""
    if _NAME.fullmatch(value):
        return KIND_WORDS.get(value) or STATUS_WORDS.get(value) or value.replace("_", " ")
    return value


def replay_words(precision: float, paused: int, corpus: str, base_rate: float) -> str:
    """One replay figure as a person reads it: "75% of 8 paused real runs of mini-swe-agent
    with Gemini 3 Pro (base rate 26%)", never the corpus's file name."""
    runs = counted(paused, "paused real run", "paused real runs")
    agent = CORPUS_WORDS.get(corpus, "another agent")
    return f"{precision:.0%} of {runs} of {agent} (base rate {base_rate:.0%})"


def counted(count: int, one: str, many: str) -> str:
    """A count and its noun as a person writes them: "1 time", "4 times", "1,234 escalations".

    Both forms are given: English plurals ("1 entry", "2 entries") are not made by rule."""
    return f"{count:,} {one if count == 1 else many}"


def rate_words(key: str, value: object) -> str | None:
    """A pass rate the store keeps as a share (``best_pass_rate`` 0.8) as a person reads it,
    "80%"; None for any other field or value."""
    if key.endswith("pass_rate") and isinstance(value, int | float) and not isinstance(value, bool):
        return f"{value:.0%}"
    return None


def yes_no(value: bool) -> str:
    """A flag as a person says it."""
    return "yes" if value else "no"


def ago(at: str, now: str) -> str:
    """How long ago ``at`` was, in its largest whole unit: "45 s ago", "12 min ago", "3 h ago"."""
    seconds = int((datetime.fromisoformat(now) - datetime.fromisoformat(at)).total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size} {unit} ago"
    return f"{max(seconds, 0)} s ago"


def readable_time(at: str) -> str:
    """A stored timestamp as a person writes it, in UTC: 2026-11-28 11:24:47 UTC."""
    return datetime.fromisoformat(at).astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def absent(what: str = "") -> str:
    """What is missing in words ("no files", "not yet"), else the generic ``NOTHING``."""
    return ABSENT_WORDS.get(what, NOTHING)


def duration(seconds: float | None) -> str:
    """A span of time as a person says it: "45 s", "12 min", "2.5 h"; "none yet" for none.

    The console's pages and the CLI's lines both say spans here, so a median reads the same
    in both."""
    if seconds is None:
        return absent("duration")
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    return f"{round(seconds / 3600, 1):g} h"


def criteria_words(criteria: dict[str, Any], pairs: Callable[[dict[str, Any]], str]) -> str:
    """A trigger's threshold in words; ``pairs`` words the fields of an ordinary one.

    A scope check is a rule, not a figure: "the task's scope src/calc/**; edits outside it
    escalate", where the fields read "checks its scope yes, scope src/calc/**". A task's
    settings say a check that is off the same way: "... do not escalate"."""
    if isinstance(criteria.get("immediate"), bool):
        return _blocker_rule(criteria)
    checks = criteria.get("spec_deviation_detected")
    if not isinstance(checks, bool):
        return pairs(criteria)
    scope = ", ".join(str(glob) for glob in criteria.get("scope") or [])
    escalate = "escalate" if checks else "do not escalate"
    rule = (
        f"the task's scope {scope}; edits outside it {escalate}"
        if scope
        else f"edits outside the task's scope {escalate}"
    )
    rest = {key: value for key, value in criteria.items() if key not in ("spec_deviation_detected", "scope")}
    return f"{rule}; {pairs(rest)}" if rest else rule


def _blocker_rule(criteria: dict[str, Any]) -> str:
    """An external blocker's threshold, a rule: "at once" for a blocker the agent declared,
    "once it repeats" for one read off a tool's output ("immediate no" said nothing)."""
    kinds = ", ".join(name_words(str(kind)) for kind in criteria.get("signal_types") or [])
    when = "at once" if criteria["immediate"] else "once it repeats, not at once"
    return f"a blocker ({kinds}) escalates {when}" if kinds else f"a blocker escalates {when}"
