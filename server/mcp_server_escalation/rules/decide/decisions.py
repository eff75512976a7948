"""The shapes a decide step returns: the wording of a text and a trigger that fires.

Also the one trigger more than one decide step fires (a test run or a rejected verdict
reaching the verification limit), worded once.

A decide step (``rules/decide/attempts.py``, ``rules/decide/progress.py``, ``rules/decide/edits.py``,
``rules/decide/budgets.py``) says what a call's outcome is worded with and which triggers fire,
as plain data; its service renders the wording from prompts/ and gathers the evidence the
store holds for each trigger.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ...models.tasks import Counters
from ...models.thresholds import Thresholds
from . import triggers
from .triggers import Firing


class Wording(NamedTuple):
    """A text from prompts/: the template and the values it is rendered with."""

    template: str
    values: dict[str, Any]


@dataclass(frozen=True)
class Fires:
    """A trigger that fires, the wording of its summary, the key it is kept under on the
    escalation (empty: its type), and the facts of its evidence known without a read (the
    service adds those the store holds before them)."""

    firing: Firing
    summary: Wording
    key: str = ""
    facts: dict[str, Any] = field(default_factory=dict)


def verification_limit_fires(counters: Counters, t: Thresholds) -> Fires | None:
    """The task's verification attempts reached their limit (a failing test run, a rejected
    verdict); it fires again while they stay there, to add evidence."""
    firing = triggers.verification_limit(counters, t)
    if firing is None:
        return None
    summary = Wording(
        "trigger_verification_limit",
        {"count": counters.verification_attempts, "threshold": t.total_verification_attempts},
    )
    return Fires(firing, summary)
