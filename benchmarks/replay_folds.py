"""What a config's pauses are worth, from per-run outcomes: per corpus, its whole and each of
five folds, against a plain length cap, and as if every pause were a stop.

Pure functions of the outcomes ``replay_outcomes.py`` returns (anything with a run id,
``resolved``, ``steps``, ``pause.step``, ``warnings`` and ``hook_errors``): no replay here.

**Folds.** A run's fold is the first eight bytes of the SHA-256 of its SWE-bench instance id
(the run id up to an ``@``: SWE-agent's ``<id>@run<N>``), read as a big-endian integer,
modulo 5. All runs of one instance fall in one fold, the same one on every machine and every
run, and the same instance in the same fold on every corpus.

**A pause at step k** denies the run's k-th command (counted from 0): k commands ran, and the
run's ``steps - k`` later ones are what a pause could save (or, on a solved run, held up).

**The length cap** pauses every run at step L (the runs longer than L); L is the smallest
whose share of solved runs paused is at most the config's on the same runs: the baseline a
rule must beat, saving more steps of unsolved runs at the same cost to solved ones.
"""

from __future__ import annotations

import hashlib
import statistics
from collections.abc import Callable, Sequence
from typing import Any, Protocol

FOLDS = 5


class PauseLike(Protocol):
    @property
    def step(self) -> int: ...


class Outcome(Protocol):
    """What the figures read of one replayed run (``replay_core.Replayed``)."""

    @property
    def run(self) -> str: ...
    @property
    def resolved(self) -> bool: ...
    @property
    def steps(self) -> int: ...
    @property
    def pause(self) -> PauseLike | None: ...
    @property
    def warnings(self) -> tuple[int, ...]: ...
    @property
    def hook_errors(self) -> int: ...


def instance_of(run_id: str) -> str:
    """The SWE-bench instance a run worked on (its id up to an ``@``)."""
    return run_id.split("@", 1)[0]


def fold_of(run_id: str, folds: int = FOLDS) -> int:
    """The run's fold (module docstring): a fixed hash of its instance id."""
    digest = hashlib.sha256(instance_of(run_id).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % folds


def split(outcomes: Sequence[Outcome], folds: int = FOLDS) -> list[list[Outcome]]:
    """The outcomes in their folds, each in corpus order."""
    found: list[list[Outcome]] = [[] for _ in range(folds)]
    for outcome in outcomes:
        found[fold_of(outcome.run, folds)].append(outcome)
    return found


def _share(part: float, whole: float) -> float | None:
    return part / whole if whole else None


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _after(outcome: Outcome) -> int:
    """The steps a pause kept from running (0 for a run not paused)."""
    return outcome.steps - outcome.pause.step if outcome.pause else 0


def lift(unsolved_share: float | None, solved_share: float | None) -> float | None:
    """How much likelier a pause is on a run that was going to fail; None when nothing is
    paused (or a side is empty), infinite when no solved run is."""
    if unsolved_share is None or solved_share is None or (unsolved_share == 0 and solved_share == 0):
        return None
    return unsolved_share / solved_share if solved_share else float("inf")


def length_cap(outcomes: Sequence[Outcome], solved_paused: float) -> int:
    """The smallest L at which a cap pausing every run at step L pauses at most
    ``solved_paused`` of the solved runs (module docstring)."""
    solved = sorted((o.steps for o in outcomes if o.resolved), reverse=True)
    # A cap at L pauses the solved runs longer than L: allow the longest `allowed` of them.
    allowed = int(solved_paused * len(solved) + 1e-9)
    if allowed >= len(solved):
        return 1
    return max(solved[allowed], 1)


def cap_figures(outcomes: Sequence[Outcome], cap: int) -> dict[str, float | None]:
    """A length cap's shares: solved and unsolved runs paused, steps of unsolved runs saved."""
    solved = [o for o in outcomes if o.resolved]
    unsolved = [o for o in outcomes if not o.resolved]
    return {
        "solved_paused": _share(sum(1 for o in solved if o.steps > cap), len(solved)),
        "unsolved_paused": _share(sum(1 for o in unsolved if o.steps > cap), len(unsolved)),
        "unsolved_steps_saved": _share(
            sum(o.steps - cap for o in unsolved if o.steps > cap), sum(o.steps for o in unsolved)
        ),
    }


def early_stop(outcomes: Sequence[Outcome]) -> dict[str, float | None]:
    """If every pause were a stop: the share of all steps cut, and the resolve rate lost (solved
    runs stopped over all runs, in points)."""
    return {
        "steps_cut": _share(sum(_after(o) for o in outcomes), sum(o.steps for o in outcomes)),
        "resolution_lost_points": _share(
            100 * sum(1 for o in outcomes if o.resolved and o.pause), len(outcomes)
        ),
    }


def measure(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """Every figure of one set of runs (a corpus, or one of its folds)."""
    solved = [o for o in outcomes if o.resolved]
    unsolved = [o for o in outcomes if not o.resolved]
    paused = [o for o in outcomes if o.pause]
    warned = [o for o in outcomes if o.warnings]
    solved_paused = _share(sum(1 for o in solved if o.pause), len(solved))
    unsolved_paused = _share(sum(1 for o in unsolved if o.pause), len(unsolved))
    base_rate = _share(len(unsolved), len(outcomes))
    precision = _share(sum(1 for o in paused if not o.resolved), len(paused))
    saved = _share(sum(_after(o) for o in unsolved), sum(o.steps for o in unsolved))
    cap = length_cap(outcomes, solved_paused or 0.0)
    capped = cap_figures(outcomes, cap)
    return {
        "runs": len(outcomes),
        "solved": len(solved),
        "unsolved": len(unsolved),
        "solved_paused": solved_paused,
        "unsolved_paused": unsolved_paused,
        "lift": lift(unsolved_paused, solved_paused),
        "precision": precision,
        "base_rate": base_rate,
        "precision_over_base_rate": None if precision is None or base_rate is None else precision - base_rate,
        "unsolved_steps_saved": saved,
        "solved_steps_held": _share(sum(_after(o) for o in solved), sum(o.steps for o in solved)),
        "pause_step": _median([o.pause.step for o in paused if o.pause]),
        "pause_share": _median([o.pause.step / max(o.steps, 1) for o in paused if o.pause]),
        "warning_step": _median([o.warnings[0] for o in warned]),
        "warning_share": _median([o.warnings[0] / max(o.steps, 1) for o in warned]),
        "hook_errors": sum(o.hook_errors for o in outcomes),
        "cap_step": cap,
        "cap_solved_paused": capped["solved_paused"],
        "cap_unsolved_steps_saved": capped["unsolved_steps_saved"],
        "saved_over_cap": None
        if saved is None or capped["unsolved_steps_saved"] is None
        else saved - capped["unsolved_steps_saved"],
        **early_stop(outcomes),
    }


# Which way each figure is worse: the worst fold is the one with the highest of these...
HIGHER_IS_WORSE = frozenset(
    {
        "solved_paused",
        "solved_steps_held",
        "pause_step",
        "pause_share",
        "warning_step",
        "warning_share",
        "hook_errors",
        "resolution_lost_points",
    }
)
# ...and the lowest of these. An undefined figure (nothing paused in the fold) is the worst.
LOWER_IS_WORSE = frozenset(
    {
        "unsolved_paused",
        "lift",
        "precision",
        "precision_over_base_rate",
        "unsolved_steps_saved",
        "saved_over_cap",
        "steps_cut",
    }
)


def worst(values: list[float | None], figure: str) -> float | None:
    """The worst of one figure across folds (an undefined one, None, is worst of all)."""
    if not values:
        return None
    if figure in HIGHER_IS_WORSE:
        return None if None in values else max(v for v in values if v is not None)
    if figure in LOWER_IS_WORSE:
        return None if None in values else min(v for v in values if v is not None)
    raise KeyError(f"{figure}: no direction in which it is worse")


def by_folds(outcomes: Sequence[Outcome], folds: int = FOLDS) -> dict[str, Any]:
    """A corpus's figures: the whole, each fold, the worst fold and the spread (min, max) per
    figure. The worst fold is taken figure by figure (each one's worst over the folds); a fold
    no run fell in (a few runs replayed) has no figures and is left out of both."""
    whole = measure(outcomes)
    each = [measure(fold) for fold in split(outcomes, folds)]
    filled = [f for f in each if f["runs"]]
    judged = HIGHER_IS_WORSE | LOWER_IS_WORSE
    worst_fold = {name: worst([f[name] for f in filled], name) for name in judged}
    spread = {
        name: (min(defined), max(defined))
        if (defined := [f[name] for f in filled if f[name] is not None])
        else None
        for name in [*judged, "cap_step"]
    }
    return {"whole": whole, "folds": each, "worst": worst_fold, "spread": spread}


# Admissible (the protocol of docs/triggers.md, "How a rule or default is chosen"): on the
# worst fold of every corpus, at most this share of solved runs paused and at least this lift,
# precision above the base rate and no hook error. The short-run agent gets its own limits.
LIMITS = {"solved_paused": 0.04, "lift": 3.0}
SHORT_RUN_LIMITS = {"solved_paused": 0.05, "lift": 2.0}


def failed_limits(worst_fold: dict[str, Any], limits: dict[str, float]) -> list[str]:
    """The limits a worst fold misses, in words (none: admissible on this corpus)."""
    missed = []
    solved = worst_fold["solved_paused"]
    if solved is None:
        missed.append("a fold without solved runs")
    elif solved > limits["solved_paused"]:
        missed.append(f"solved runs paused {_percent(solved)} > {limits['solved_paused']:.0%}")
    if worst_fold["lift"] is None or worst_fold["precision_over_base_rate"] is None:
        missed.append("a fold with no run paused")
    else:
        if worst_fold["lift"] < limits["lift"]:
            missed.append(f"lift {_number(worst_fold['lift'])} < {limits['lift']:g}")
        if worst_fold["precision_over_base_rate"] <= 0:
            missed.append("precision not above the base rate")
    if worst_fold["hook_errors"]:
        missed.append(f"{worst_fold['hook_errors']:g} hook errors")
    return missed


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _number(value: float | None) -> str:
    if value is None:
        return "-"
    return "inf" if value == float("inf") else f"{value:.2f}"


# The table's rows: a figure, its words, and how it is written.
ROWS: tuple[tuple[str, str, Callable[[float | None], str]], ...] = (
    ("solved_paused", "solved runs paused", _percent),
    ("unsolved_paused", "unsolved runs paused", _percent),
    ("lift", "lift", _number),
    ("precision", "precision", _percent),
    (
        "precision_over_base_rate",
        "precision over the base rate (points)",
        lambda v: "-" if v is None else f"{100 * v:+.1f}",
    ),
    ("unsolved_steps_saved", "steps saved on unsolved runs", _percent),
    ("solved_steps_held", "solved steps held up", _percent),
    ("pause_step", "first pause, median step", lambda v: "-" if v is None else f"{v:g}"),
    ("pause_share", "first pause, median share of the run", _percent),
    ("warning_step", "first warning, median step", lambda v: "-" if v is None else f"{v:g}"),
    ("warning_share", "first warning, median share of the run", _percent),
    ("hook_errors", "hook errors", lambda v: "-" if v is None else f"{v:g}"),
    (
        "saved_over_cap",
        "steps saved over the length cap's (points)",
        lambda v: "-" if v is None else f"{100 * v:+.1f}",
    ),
    ("steps_cut", "if every pause were a stop: steps cut", _percent),
    (
        "resolution_lost_points",
        "if every pause were a stop: resolve rate lost (points)",
        lambda v: "-" if v is None else f"{v:.1f}",
    ),
)


def table(name: str, figures: dict[str, Any]) -> str:
    """One corpus's figures: whole, worst fold, spread, and the length cap beside them."""
    whole, worst_fold, spread = figures["whole"], figures["worst"], figures["spread"]
    lines = [
        f"### {name}, {whole['runs']} runs ({whole['solved']} solved, {whole['unsolved']} unsolved; "
        f"base rate {_percent(whole['base_rate'])}), {len(figures['folds'])} folds",
        "",
        "| figure | whole | worst fold | spread (min-max) |",
        "| --- | ---: | ---: | ---: |",
    ]
    for key, words, written in ROWS:
        low_high = spread.get(key)
        ranged = "-" if low_high is None else f"{written(low_high[0])} - {written(low_high[1])}"
        lines.append(f"| {words} | {written(whole[key])} | {written(worst_fold[key])} | {ranged} |")
    cap = whole["cap_step"]
    lines += [
        "",
        f"length cap at the same solved-paused share: step {cap} (in the folds: "
        f"{spread['cap_step'][0]:g}-{spread['cap_step'][1]:g}); it pauses "
        f"{_percent(whole['cap_solved_paused'])} of solved runs and saves "
        f"{_percent(whole['cap_unsolved_steps_saved'])} of unsolved runs' steps, against the config's "
        f"{_percent(whole['unsolved_steps_saved'])}",
    ]
    return "\n".join(lines)


def combined_table(by_agent: dict[str, dict[str, Any]]) -> str:
    """Every corpus side by side: each figure as whole / worst fold (spread across the folds),
    then the length cap at the same solved-paused share."""
    agents = list(by_agent)
    lines = [
        "| figure: whole / worst fold (spread) | " + " | ".join(agents) + " |",
        "| --- |" + " ---: |" * len(agents),
    ]
    for key, words, written in ROWS:
        cells = []
        for agent in agents:
            f = by_agent[agent]
            low_high = f["spread"].get(key)
            ranged = "-" if low_high is None else f"{written(low_high[0])} to {written(low_high[1])}"
            cells.append(f"{written(f['whole'][key])} / {written(f['worst'][key])} ({ranged})")
        lines.append(f"| {words} | " + " | ".join(cells) + " |")
    cap_cells = []
    for agent in agents:
        whole, spread = by_agent[agent]["whole"], by_agent[agent]["spread"]["cap_step"]
        cap_cells.append(
            f"step {whole['cap_step']} (folds {spread[0]:g}-{spread[1]:g}): "
            f"{_percent(whole['cap_solved_paused'])} solved paused, "
            f"saves {_percent(whole['cap_unsolved_steps_saved'])}"
        )
    lines.append("| length cap at the same solved-paused share | " + " | ".join(cap_cells) + " |")
    return "\n".join(lines)
