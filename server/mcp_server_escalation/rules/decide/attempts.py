"""What one attempt's verdict decides, as a pure function of what the store holds.

``record_attempt`` (services/attempts.py) reads the task's counters and thresholds, the
step's cycle and its latest attempts; ``decide`` says what follows from them: the counters
to save, the escalation cycle to start (a stagnation), which triggers fire and the message
the agent gets when it may go on. The service writes and fires what this says, so each of
these rules can be read, and tested, without a database.

A stagnation is the step's last ``stagnation_patience`` rejected attempts of its current
cycle (those after the cycle's last accepted one), pairwise similar (``rules.decide.similarity``).
It starts the step's next cycle; past ``max_escalation_cycles`` it also goes to a human.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...models.feedback import Attempt
from ...models.tasks import Counters
from ...models.thresholds import Thresholds
from . import triggers
from .budgets import count_call
from .decisions import Fires, Wording, verification_limit_fires
from .similarity import similar_run

# The fewest of a step's latest attempts read to find its run of rejected ones: a run longer
# than the patience still counts whole in the stagnation (its similar_count).
HISTORY = 50


@dataclass(frozen=True)
class Verdict:
    """What the agent recorded: the step, accepted or rejected, and the steps upstream of
    it that a stagnation's summary also goes to."""

    task_id: str
    step: str
    status: str
    upstream: tuple[str, ...] = ()

    @property
    def rejected(self) -> bool:
        return self.status == "rejected"


@dataclass(frozen=True)
class CycleStart:
    """A stagnation: the similar rejected attempts, the steps their summary goes to (the
    step first), and the cycle the step goes on in."""

    similar: tuple[Attempt, ...]
    targets: tuple[str, ...]
    new_cycle: int


@dataclass(frozen=True)
class AttemptDecision:
    """What one verdict decides (``decide``)."""

    counters: Counters
    cycle_start: CycleStart | None
    stagnation: Fires | None  # the step stagnated in more cycles than allowed: a human
    verification_limit: Fires | None
    message: Wording  # what the agent reads when it may go on


def stagnation_window(t: Thresholds) -> int:
    """How many of the cycle's latest attempts ``decide`` needs to see (``recent``)."""
    return max(t.stagnation_patience * 4, HISTORY)


def trailing_rejected(attempts: list[Attempt]) -> list[Attempt]:
    """The rejected attempts after the cycle's last accepted one."""
    run: list[Attempt] = []
    for attempt in reversed(attempts):
        if attempt.status != "rejected":
            break
        run.append(attempt)
    return list(reversed(run))


def decide(
    verdict: Verdict,
    *,
    attempt_number: int,
    cycle: int,
    counters: Counters,
    thresholds: Thresholds,
    recent: list[Attempt],
) -> AttemptDecision:
    """The consequences of a verdict just stored as ``attempt_number`` in ``cycle``.

    ``counters`` are the task's before it; ``recent`` the cycle's latest attempts, oldest
    first, this one included (``stagnation_window`` of them; none needed for an accepted one).
    A rejected verdict is one more verification attempt, and every verdict is a tool call.
    """
    after = count_call(triggers.after_verification(counters, passed=not verdict.rejected))
    cycle_start = _stagnated(verdict, cycle, thresholds, recent) if verdict.rejected else None
    stagnation = None
    if cycle_start is not None:
        stagnation = _to_human(verdict.step, cycle, thresholds, len(cycle_start.similar))
    return AttemptDecision(
        counters=after,
        cycle_start=cycle_start,
        stagnation=stagnation,
        verification_limit=verification_limit_fires(after, thresholds),
        message=_message(verdict, attempt_number, cycle, cycle_start, to_human=stagnation is not None),
    )


def _stagnated(verdict: Verdict, cycle: int, t: Thresholds, recent: list[Attempt]) -> CycleStart | None:
    rejected = trailing_rejected(recent)
    similar = similar_run([a.feedback for a in rejected], t.stagnation_patience, t.stagnation_similarity)
    if not similar:
        return None
    upstream = [u for u in dict.fromkeys(verdict.upstream) if u != verdict.step]
    return CycleStart(tuple(rejected[-similar:]), (verdict.step, *upstream), cycle + 1)


def _to_human(step: str, cycle: int, t: Thresholds, similar_count: int) -> Fires | None:
    firing = triggers.stagnation(cycle, t, step=step, similar_count=similar_count)
    if firing is None:
        return None
    summary = Wording(
        "trigger_stagnation", {"step": step, "cycles": cycle, "max_cycles": t.max_escalation_cycles}
    )
    return Fires(firing, summary, key=f"stagnation:{step}")


def _message(
    verdict: Verdict, attempt_number: int, cycle: int, cycle_start: CycleStart | None, *, to_human: bool
) -> Wording:
    """A cycle the agents go on with is announced; one that went to a human is not (the
    pause says it), so that attempt reads as any other rejected one."""
    task_id, step = verdict.task_id, verdict.step
    if cycle_start is not None and not to_human:
        return Wording(
            "message_stagnation_cycle",
            {
                "task_id": task_id,
                "step": step,
                "cycle": cycle_start.new_cycle,
                "escalated_to": ", ".join(cycle_start.targets),
            },
        )
    if verdict.rejected:
        return Wording(
            "message_attempt_recorded",
            {"task_id": task_id, "step": step, "attempt_number": attempt_number, "cycle": cycle},
        )
    return Wording(
        "message_attempt_accepted", {"task_id": task_id, "step": step, "attempt_number": attempt_number}
    )
