"""``--sweep``: candidate configs judged by the protocol of docs/triggers.md ("How a rule or
default is chosen"), on every corpus's folds, and chosen with one agent left out.

A candidate is a config file, or one point of a grid of ``section.key=v1,v2,...`` values (on
``[thresholds]`` and ``[hooks]`` keys, over ``--config`` or the defaults). Each candidate is
replayed once per corpus (``replay_outcomes.py``: cached, so a sweep run again, or grown by a
value, replays only what is new); then:

- a candidate's figures on a corpus are those of its worst fold (``replay_folds.py``);
- it is admissible on a set of corpora when on each one's worst fold it pauses at most 4% of
  solved runs (5% on the short-run agent), has a lift of at least 3 (2 on the short-run
  agent), a precision above the base rate and no hook error;
- a grid point whose neighbour on any of its parameters' grid (one value either side) is not
  admissible too is "narrow window: a fit", and rejected;
- of the rest, the best saves the most steps of unsolved runs on its worst fold (the smallest
  of the corpora's worst folds).

Chosen on all the corpora, and once for each corpus left out: chosen on the others, scored on
it. A choice that does not hold on the agent it never saw was fitted to the ones it did.
"""

from __future__ import annotations

import itertools
import json
import math
import tempfile
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp_server_escalation.errors import ConfigError
from mcp_server_escalation.settings import Settings
from replay_core import SHORT_RUNS, agent_of
from replay_folds import LIMITS, SHORT_RUN_LIMITS, by_folds, failed_limits
from replay_outcomes import code_digest, outcomes

# The sections a grid may vary: the thresholds and the hooks' keys.
GRID_SECTIONS = ("thresholds", "hooks")


@dataclass
class Candidate:
    """One config to judge: its name, its file, and its place on the grid (if it is on one)."""

    name: str
    config: str | None
    point: dict[str, Any] = field(default_factory=dict)  # "section.key" -> value
    figures: dict[str, dict[str, Any]] = field(default_factory=dict)  # agent -> by_folds


def limits_for(agent: str) -> dict[str, float]:
    """The protocol's limits on a corpus (named by its agent): the short-run agent's own, else
    the others'."""
    return SHORT_RUN_LIMITS if agent == agent_of(SHORT_RUNS.name) else LIMITS


def parse_grid(items: Sequence[str]) -> dict[str, list[Any]]:
    """``section.key=v1,v2`` items: each key's values, in the order given (TOML scalars; a
    value that is not one is a string)."""
    grid: dict[str, list[Any]] = {}
    for item in items:
        key, _, values = item.partition("=")
        section, _, name = key.strip().partition(".")
        if section not in GRID_SECTIONS or not name or not values.strip():
            raise SystemExit(
                f"--sweep {item!r}: a grid is section.key=v1,v2,... with section one of "
                f"{', '.join(GRID_SECTIONS)} (e.g. hooks.repeat_grace_calls=10,20,30)"
            )
        grid[f"{section}.{name}"] = [_scalar(v.strip()) for v in values.split(",")]
    return grid


def _scalar(text: str) -> Any:
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return json.dumps(str(value))  # a TOML basic string


def toml_text(config: dict[str, Any]) -> str:
    """A config of tables of scalars (and lists of them) as TOML."""
    lines = [f"{k} = {_toml_value(v)}" for k, v in config.items() if not isinstance(v, dict)]
    for section, keys in config.items():
        if isinstance(keys, dict):
            lines += ["", f"[{section}]", *(f"{k} = {_toml_value(v)}" for k, v in keys.items())]
    return "\n".join(lines).strip() + "\n"


def grid_candidates(grid: dict[str, list[Any]], base: str | None, folder: Path) -> list[Candidate]:
    """Every point of the grid, each a config file in ``folder`` (``base`` with the point's values)."""
    loaded = tomllib.loads(Path(base).read_text(encoding="utf-8")) if base else {}
    found = []
    for values in itertools.product(*grid.values()):
        point = dict(zip(grid, values, strict=True))
        config = json.loads(json.dumps(loaded))  # a copy, tables and all
        for key, value in point.items():
            section, name = key.split(".", 1)
            config.setdefault(section, {})[name] = value
        name = " ".join(f"{k}={_toml_value(v)}" for k, v in point.items())
        path = folder / f"candidate-{len(found)}.toml"
        path.write_text(toml_text(config), encoding="utf-8")
        found.append(Candidate(name, str(path), point))
    return found


def candidates_of(items: Sequence[str], base: str | None, folder: Path) -> list[Candidate]:
    """The candidates ``--sweep`` names: each config file, and every point of the grid."""
    files = [item for item in items if "=" not in item]
    grid = parse_grid([item for item in items if "=" in item])
    found = [Candidate(Path(f).name, f) for f in files]
    if grid:
        found += grid_candidates(grid, base, folder)
    if not found:
        raise SystemExit("--sweep: no candidate (give config files or section.key=v1,v2 grids)")
    for candidate in found:
        _check(candidate)
    return found


def _check(candidate: Candidate) -> None:
    """A candidate the server would refuse is refused here, before any replay."""
    if candidate.config and not Path(candidate.config).is_file():
        raise SystemExit(f"--sweep {candidate.name}: no such config file")
    try:
        Settings.from_sources(db=":memory:", config=candidate.config, env={})
    except (ConfigError, ValueError, OSError) as error:
        raise SystemExit(f"--sweep {candidate.name}: the config is refused: {error}") from error


def admissible(candidate: Candidate, corpora: Sequence[str]) -> list[str]:
    """What keeps the candidate from being admissible on ``corpora``, a line per corpus that
    misses a limit (nothing: admissible)."""
    missed = {
        corpus: failed_limits(candidate.figures[corpus]["worst"], limits_for(corpus)) for corpus in corpora
    }
    return [f"{corpus}: {', '.join(misses)}" for corpus, misses in missed.items() if misses]


def score(candidate: Candidate, corpora: Sequence[str]) -> float:
    """Steps saved on unsolved runs at the worst fold of the worst of ``corpora``."""
    saved = [candidate.figures[c]["worst"]["unsolved_steps_saved"] for c in corpora]
    return -math.inf if None in saved or not saved else min(saved)


def neighbours(candidate: Candidate, grid: list[Candidate]) -> list[Candidate]:
    """The grid points one value either side of the candidate on one of its parameters."""
    if not candidate.point:
        return []
    values = {key: list(dict.fromkeys(c.point[key] for c in grid if c.point)) for key in candidate.point}
    found = []
    for key, axis in values.items():
        at = axis.index(candidate.point[key])
        for other in (at - 1, at + 1):
            if 0 <= other < len(axis):
                wanted = {**candidate.point, key: axis[other]}
                found += [c for c in grid if c.point == wanted]
    return found


@dataclass
class Judged:
    """A candidate judged on a set of corpora."""

    candidate: Candidate
    missed: list[str]  # the limits it misses, a line per corpus
    narrow: list[str]  # its neighbours that are not admissible
    score: float
    limits_missed: int  # how many limits, over every corpus

    @property
    def eligible(self) -> bool:
        return not self.missed and not self.narrow


def judge(candidates: list[Candidate], corpora: Sequence[str]) -> list[Judged]:
    """Each candidate judged on ``corpora``, best first (the eligible ones ahead)."""
    missed = {id(c): admissible(c, corpora) for c in candidates}
    judged = [
        Judged(
            c,
            missed[id(c)],
            [n.name for n in neighbours(c, candidates) if missed[id(n)]],
            score(c, corpora),
            sum(len(failed_limits(c.figures[corpus]["worst"], limits_for(corpus))) for corpus in corpora),
        )
        for c in candidates
    ]
    return sorted(judged, key=lambda j: (not j.eligible, -j.score))


def _percent(value: float | None) -> str:
    return "-" if value is None or value == -math.inf else f"{value:.1%}"


def _lift(value: float | None) -> str:
    if value is None:
        return "-"
    return "inf" if value == math.inf else f"{value:.2f}"


def _points(share: float | None) -> str:
    return "-" if share is None else f"{100 * share:+.1f} points"


def why(judged: list[Judged], corpora: Sequence[str]) -> str:
    """Which candidate wins on ``corpora``, and why, in words."""
    on = ", ".join(corpora)
    best = judged[0]
    if not best.eligible:
        closest = min(judged, key=lambda j: (j.limits_missed, -j.score))
        return (
            f"no candidate is admissible on {on}; the closest, {closest.candidate.name}, misses: "
            + "; ".join(closest.missed or [f"narrow window: a fit (beside {', '.join(closest.narrow)})"])
        )
    beaten = [j for j in judged[1:] if j.eligible]
    against = (
        f", against {_percent(beaten[0].score)} for the next, {beaten[0].candidate.name}"
        if beaten
        else " (the only candidate admissible with admissible neighbours)"
    )
    rejected = [j.candidate.name for j in judged if not j.missed and j.narrow]
    fits = f"; rejected as narrow windows (fits): {', '.join(rejected)}" if rejected else ""
    return (
        f"{best.candidate.name} wins on {on}: admissible on every worst fold, its grid neighbours "
        f"too, and it saves {_percent(best.score)} of unsolved runs' steps at the worst fold{against}{fits}"
    )


def candidates_table(judged: list[Judged], corpora: Sequence[str]) -> str:
    """One row per candidate: its worst folds per corpus and the verdict."""
    head = " | ".join(f"{c}: solved paused, lift, saved" for c in corpora)
    lines = [f"| candidate | {head} | verdict |", "| --- |" + " ---: |" * len(corpora) + " --- |"]
    for j in judged:
        cells = []
        for corpus in corpora:
            w = j.candidate.figures[corpus]["worst"]
            cells.append(
                f"{_percent(w['solved_paused'])}, {_lift(w['lift'])}, {_percent(w['unsolved_steps_saved'])}"
            )
        if j.missed:
            verdict = "not admissible: " + "; ".join(j.missed)
        elif j.narrow:
            verdict = f"narrow window: a fit (not admissible beside it: {', '.join(j.narrow)})"
        else:
            verdict = f"admissible, scores {_percent(j.score)}"
        lines.append(f"| {j.candidate.name} | " + " | ".join(cells) + f" | {verdict} |")
    return "\n".join(lines)


def left_out(candidates: list[Candidate], corpora: Sequence[str]) -> tuple[str, list[dict[str, Any]]]:
    """For each corpus, the candidate chosen on the others and how it does on it."""
    rows = []
    lines = [
        "| left out | chosen on the others | its worst fold there: solved paused, lift, precision over "
        "base rate, saved (over the cap) | admissible there |",
        "| --- | --- | --- | --- |",
    ]
    for held in corpora:
        others = [c for c in corpora if c != held]
        best = judge(candidates, others)[0]
        if not best.eligible:
            lines.append(f"| {held} | none admissible on {', '.join(others)} | - | - |")
            rows.append({"left_out": held, "chosen": None})
            continue
        w = best.candidate.figures[held]["worst"]
        missed = failed_limits(w, limits_for(held))
        lines.append(
            f"| {held} | {best.candidate.name} | {_percent(w['solved_paused'])}, {_lift(w['lift'])}, "
            f"{_points(w['precision_over_base_rate'])}, {_percent(w['unsolved_steps_saved'])} "
            f"({_points(w['saved_over_cap'])}) | {'yes' if not missed else 'no: ' + '; '.join(missed)} |"
        )
        rows.append({"left_out": held, "chosen": best.candidate.name, "worst": w, "missed": missed})
    return "\n".join(lines), rows


def sweep(
    items: Sequence[str],
    corpora: Sequence[Path],
    *,
    base: str | None,
    jobs: int,
    process: bool,
    limit: int | None,
    cache: Path | None,
    json_path: Path | None,
) -> int:
    """``--sweep``: replay every candidate on every corpus, judge, print the tables."""
    code = code_digest()
    names = [agent_of(c.name) for c in corpora]
    with tempfile.TemporaryDirectory(prefix="replay-sweep-") as folder:
        candidates = candidates_of(items, base, Path(folder))
        for candidate in candidates:
            for corpus in corpora:
                replayed = outcomes(
                    corpus, candidate.config, jobs=jobs, process=process, limit=limit, cache=cache, code=code
                )
                candidate.figures[agent_of(corpus.name)] = by_folds(replayed)
            print(f"replayed {candidate.name}", flush=True)
    judged = judge(candidates, names)
    print(f"\n## The candidates, at each corpus's worst fold\n\n{candidates_table(judged, names)}\n")
    print(f"**Chosen on {', '.join(names)}:** {why(judged, names)}\n")
    rows: list[dict[str, Any]] = []
    if len(names) > 1:  # one agent left out needs another to choose on
        table, rows = left_out(candidates, names)
        print(f"## Leave one agent out\n\n{table}\n")
    if json_path:
        found = {
            "candidates": [
                {
                    "name": j.candidate.name,
                    "point": j.candidate.point,
                    "missed": j.missed,
                    "narrow": j.narrow,
                    "score": None if j.score == -math.inf else j.score,
                    "worst": {c: j.candidate.figures[c]["worst"] for c in names},
                }
                for j in judged
            ],
            "chosen": judged[0].candidate.name if judged[0].eligible else None,
            "left_out": rows,
        }
        json_path.write_text(json.dumps(found, indent=1, default=str), encoding="utf-8")
    return 0
