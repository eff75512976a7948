"""Replay real agent runs through the host hook path and measure what the triggers do.

The data (``--data``: gzipped JSON-lines files kept outside this repository, by default the
three development corpora in a ``shared/data`` folder beside the checkout) holds real
SWE-bench runs of coding agents: every command, its exit code and output, and whether the run
went on to solve its task. Each run is fed to the product exactly as Claude Code delivers a
call to its hooks (``replay_core.py``): ``PreToolUse`` before the call, then ``PostToolUse``
(exit 0) or ``PostToolUseFailure`` (``error`` = ``"Exit code N"`` and the output) after it,
each a JSON payload handed to the same two functions the hook process and the relay run
(``hooks/dispatch.py``), on a real SQLite store with the default config (or ``--config``).
Every run gets a store of its own, with the folder the agent worked in as its project.

A run stops where it is paused: the ``PreToolUse`` of its next command is denied, because a
human is now in the loop (the recorded agent went on, so nothing after that point is
evidence of what the product would have done).

What it reports, per escalation type and in total:

- the share of unsolved and of solved runs it paused, and the lift (the first over the
  second: how much likelier a pause is on a run that was going to fail);
- where it paused: the step, and the step over the run's length;
- the share of pauses whose headline (the first line the model and the operator read)
  carries the failing step's error line. The error line is found by ``error_line`` below,
  a rule of its own and deliberately not the product's ``rules/reading/salient.py``: the last line
  of the output that names an error the way Python, pytest and shells print one;
- warnings (the tier before a pause): on how many runs one was shown, how many steps before
  the pause, and on how many paused runs no warning came first.

``--process`` hands each payload to the installed console script instead
(``mcp-server-escalation hook claude-code`` on stdin, as the host runs it, answered by the
relay daemon its first run starts): slower, and the proof that the in-process path decides
exactly as the installed one does (``tests/test_replay.py`` compares the two).

Each run's outcome is replayed once per config and kept (``replay_outcomes.py``, ``--jobs``
processes, ``--cache``); the figures of each corpus's whole, its five folds and a length cap
beside it are computed from the outcomes (``replay_folds.py``), and ``--sweep`` judges
candidate configs by the protocol of docs/triggers.md (``replay_sweep.py``).

    python benchmarks/replay_trajectories.py                    # the whole set
    python benchmarks/replay_trajectories.py --limit 20 --json replay.json
    python benchmarks/replay_trajectories.py --config tuned.toml --show 5
    python benchmarks/replay_trajectories.py --sweep hooks.repeat_grace_calls=10,20,30
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from replay_core import (
    CORPORA,
    DATA,
    SHARED,
    Pause,
    Replayed,
    agent_of,
    benign,
    carries,
    editor_call,
    error_line,
    payloads,
    project_of,
    replay,
    replay_one,
    runs,
    work_steps,
)
from replay_folds import by_folds, combined_table, table
from replay_outcomes import CACHE, outcomes
from replay_sweep import sweep

# The replay's parts, for the benchmarks and tests that use them by this module's name.
__all__ = [
    "CORPORA",
    "DATA",
    "SHARED",
    "Pause",
    "Replayed",
    "agent_of",
    "benign",
    "carries",
    "editor_call",
    "error_line",
    "figures_toml",
    "main",
    "payloads",
    "project_of",
    "replay",
    "replay_one",
    "runs",
    "summarise",
    "work_steps",
]


def _share(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole else 0.0


def _lift(unsolved: float, solved: float) -> float | None:
    if solved == 0:
        return None if unsolved == 0 else float("inf")
    return round(unsolved / solved, 2)


def summarise(replayed: list[Replayed]) -> dict[str, Any]:
    """The figures of the module docstring."""
    solved = [r for r in replayed if r.resolved]
    unsolved = [r for r in replayed if not r.resolved]
    paused = [r for r in replayed if r.pause is not None]
    types = sorted({t for r in paused for t in r.pause.types})  # type: ignore[union-attr]

    def row(selected: list[Replayed]) -> dict[str, Any]:
        on_unsolved = _share(sum(1 for r in selected if not r.resolved), len(unsolved))
        on_solved = _share(sum(1 for r in selected if r.resolved), len(solved))
        at = [r.pause.step for r in selected if r.pause]
        relative = [r.pause.step / max(r.steps, 1) for r in selected if r.pause]
        with_line = [r for r in selected if r.pause and r.pause.error_line]
        return {
            "runs": len(selected),
            # Of these paused runs, the share that were going to fail: the trigger was right.
            "precision": _share(sum(1 for r in selected if not r.resolved), len(selected)),
            "unsolved_share": on_unsolved,
            "solved_share": on_solved,
            "lift": _lift(on_unsolved, on_solved),
            "median_step": statistics.median(at) if at else None,
            "median_position": round(statistics.median(relative), 2) if relative else None,
            "headline_carries_error": _share(
                sum(1 for r in with_line if carries(r.pause.headline, r.pause.error_line)),  # type: ignore[union-attr,arg-type]
                len(with_line),
            ),
            "with_error_line": len(with_line),
        }

    unsolved_steps = sum(r.steps for r in unsolved)
    solved_steps = sum(r.steps for r in solved)
    overall = {
        # Of the runs paused, the share that were going to fail, against that share of all runs.
        "precision": _share(sum(1 for r in paused if not r.resolved), len(paused)),
        "base_rate": _share(len(unsolved), len(replayed)),
        # What a human could have saved: the steps of unsolved runs after their pause.
        "unsolved_steps_after_pause": _share(
            sum(r.steps - r.pause.step for r in unsolved if r.pause), unsolved_steps
        ),
        # What the pauses cost healthy runs: the steps of solved runs held up.
        "solved_steps_held": _share(sum(r.steps - r.pause.step for r in solved if r.pause), solved_steps),
    }
    warned = [r for r in replayed if r.warnings]
    lead = [
        r.pause.step - r.warnings[0]
        for r in paused
        if r.pause and r.warnings and r.warnings[0] <= r.pause.step
    ]
    return {
        "runs": len(replayed),
        "solved": len(solved),
        "unsolved": len(unsolved),
        "steps": sum(r.steps for r in replayed),
        "paused": row(paused),
        "overall": overall,
        "by_type": {t: row([r for r in paused if t in r.pause.types]) for t in types},  # type: ignore[union-attr]
        "first_type": dict(Counter(r.pause.types[0] for r in paused if r.pause)),
        "warnings": {
            "runs_warned": len(warned),
            "solved_warned_share": _share(sum(1 for r in warned if r.resolved), len(solved)),
            "unsolved_warned_share": _share(sum(1 for r in warned if not r.resolved), len(unsolved)),
            "warnings_shown": sum(len(r.warnings) for r in replayed),
            "paused_without_warning": sum(1 for r in paused if not r.warnings),
            "paused_after_warning": sum(1 for r in paused if r.warnings and r.warnings[0] <= r.pause.step),  # type: ignore[union-attr]
            "median_steps_warning_before_pause": statistics.median(lead) if lead else None,
        },
    }


def _table(figures: dict[str, Any]) -> str:
    lines = [
        f"{figures['runs']} runs ({figures['solved']} solved, {figures['unsolved']} unsolved), "
        f"{figures['steps']} commands",
        "",
        "| trigger | runs | unsolved paused | solved paused | lift | median step | median position "
        "| headline carries the error |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]

    def line(name: str, row: dict[str, Any]) -> str:
        lift = "-" if row["lift"] is None else f"{row['lift']:.2f}"
        return (
            f"| {name} | {row['runs']} | {row['unsolved_share']:.1%} | {row['solved_share']:.1%} | {lift} "
            f"| {row['median_step']} | {row['median_position']} "
            f"| {row['headline_carries_error']:.0%} of {row['with_error_line']} |"
        )

    lines.append(line("**any (paused)**", figures["paused"]))
    for name, row in figures["by_type"].items():
        lines.append(line(name, row))
    w = figures["warnings"]
    lines += [
        "",
        f"warnings: shown {w['warnings_shown']} times on {w['runs_warned']} runs "
        f"({w['unsolved_warned_share']:.1%} of unsolved, {w['solved_warned_share']:.1%} of solved); "
        f"{w['paused_without_warning']} pauses came without one; median "
        f"{w['median_steps_warning_before_pause']} steps from the first warning to the pause",
    ]
    o = figures["overall"]
    lines.append(
        f"precision {o['precision']:.0%} (base rate {o['base_rate']:.0%}); steps of unsolved runs after "
        f"their pause {o['unsolved_steps_after_pause']:.1%}; "
        f"steps of solved runs held up {o['solved_steps_held']:.1%}"
    )
    return "\n".join(lines)


# The figures the product's ``stats`` shows beside the operators' verdicts (``--figures``).
FIGURES = (
    Path(__file__).resolve().parents[1] / "server" / "mcp_server_escalation" / "data" / "replay_figures.toml"
)


def figures_toml(figures: dict[str, dict[str, Any]], measured_on: str) -> str:
    """Each corpus's precision, overall and per trigger type, as ``data/replay_figures.toml``
    holds it: the one source ``stats`` reads them from."""
    lines = [
        "# Written by benchmarks/replay_trajectories.py --figures; replay again to change it.",
        "# Of the replayed real runs each trigger type paused, the share that were going to fail",
        '# (precision), per corpus; type "any" is every pause. `stats` shows them beside the',
        "# operators' verdicts on the team's own escalations.",
        f'measured_on = "{measured_on}"',
    ]
    for corpus, found in figures.items():
        rows = [("any", found["paused"]), *sorted(found["by_type"].items())]
        for type_, row in rows:
            lines += [
                "",
                "[[figure]]",
                f'corpus = "{corpus.removesuffix(".gz").removesuffix(".jsonl")}"',
                f'type = "{type_}"',
                f"runs = {found['runs']}",
                f"base_rate = {found['overall']['base_rate']}",
                f"paused = {row['runs']}",
                f"precision = {row['precision']}",
            ]
    return "\n".join(lines) + "\n"


def _arguments() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data",
        type=Path,
        action="append",
        help="a corpus of trajectories (JSONL, gzip); repeat for several "
        "(default: the three development corpora)",
    )
    parser.add_argument("--config", help="a config file (thresholds, [hooks]) instead of the defaults")
    parser.add_argument("--limit", type=int, help="replay only this many runs of each corpus")
    parser.add_argument("--start", type=int, default=0, help="skip this many runs first")
    parser.add_argument("--json", type=Path, help="also write the figures and every pause here")
    parser.add_argument("--show", type=int, default=0, help="print this many pauses of solved runs")
    parser.add_argument(
        "--figures",
        type=Path,
        nargs="?",
        const=FIGURES,
        help=f"write each corpus's precision per trigger type here (no value: {FIGURES.name}, "
        "which stats reads)",
    )
    parser.add_argument(
        "--process", action="store_true", help="through the installed hook process (slower; same decisions)"
    )
    parser.add_argument("--jobs", type=int, default=2, help="replay runs in this many processes (default 2)")
    parser.add_argument(
        "--cache", type=Path, default=CACHE, help=f"where each run's outcome is kept (default {CACHE})"
    )
    parser.add_argument("--no-cache", action="store_true", help="replay every run, keep nothing")
    parser.add_argument(
        "--sweep",
        nargs="+",
        metavar="CANDIDATE",
        help="judge candidates by the protocol (docs/triggers.md): config files, and grids "
        "section.key=v1,v2,... on [thresholds] and [hooks] keys (over --config)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _arguments().parse_args(argv)
    if args.jobs < 1:
        raise SystemExit(f"--jobs: {args.jobs} is not a number of processes (at least 1)")
    corpora = args.data or [c for c in CORPORA if c.exists()]
    if not corpora:
        raise SystemExit(f"no corpus: none of the development corpora is in {SHARED} (give --data)")
    cache = None if args.no_cache else args.cache
    if args.sweep:
        return sweep(
            args.sweep,
            corpora,
            base=args.config,
            jobs=args.jobs,
            process=args.process,
            limit=args.limit,
            cache=cache,
            json_path=args.json,
        )
    results = {}
    for corpus in corpora:
        began = time.perf_counter()
        replayed = outcomes(
            corpus,
            args.config,
            jobs=args.jobs,
            process=args.process,
            limit=args.limit,
            start=args.start,
            cache=cache,
        )
        took = time.perf_counter() - began
        figures = summarise(replayed)
        folds = by_folds(replayed)
        results[corpus.name] = {
            "figures": figures,
            "folds": folds,
            "runs": [r._asdict() for r in replayed],
        }
        named = f"{agent_of(corpus.name)} ({corpus.name})"
        print(f"## {corpus.name}\n\n{_table(figures)}\n\n{table(named, folds)}\n")
        print(f"replayed (or read back from the cache) in {took:.1f} s\n")
        _show(replayed, args.show)
    if len(results) > 1:
        print(_side_by_side({name: r["figures"] for name, r in results.items()}))
        print(f"\n{combined_table({agent_of(name): r['folds'] for name, r in results.items()})}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, default=str))
    if args.figures:
        measured_on = time.strftime("%Y-%m-%d", time.gmtime())
        found = {name: r["figures"] for name, r in results.items()}
        args.figures.write_text(figures_toml(found, measured_on), encoding="utf-8")
    failed = sum(r["folds"]["whole"]["hook_errors"] for r in results.values())
    if failed:
        print(f"{failed} hook runs failed (their errors are on stderr): every hook run must answer")
        return 1
    return 0


def _show(replayed: list[Replayed], count: int) -> None:
    """The first ``count`` pauses of solved runs, with their headlines."""
    for r in [r for r in replayed if r.pause and r.resolved][:count]:
        print(f"{r.run} (solved) paused at step {r.pause.step}/{r.steps}: {r.pause.types}")  # type: ignore[union-attr]
        print(f"  headline: {r.pause.headline[:200]}")  # type: ignore[union-attr]
        print(f"  error line: {r.pause.error_line}\n")  # type: ignore[union-attr]


def _side_by_side(figures: dict[str, dict[str, Any]]) -> str:
    """One row per corpus: the figures the targets are judged on."""
    lines = [
        "| corpus | solved paused | unsolved paused | lift | precision (base rate) "
        "| unsolved steps after the pause | solved steps held | pauses warned first |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, f in figures.items():
        p, o, w = f["paused"], f["overall"], f["warnings"]
        paused = round(p["solved_share"] * f["solved"]), round(p["unsolved_share"] * f["unsolved"])
        lift = "-" if p["lift"] is None else f"{p['lift']:.2f}"
        lines.append(
            f"| {name} | {paused[0]}/{f['solved']} ({p['solved_share']:.1%}) "
            f"| {paused[1]}/{f['unsolved']} ({p['unsolved_share']:.1%}) | {lift} "
            f"| {o['precision']:.0%} ({o['base_rate']:.0%}) | {o['unsolved_steps_after_pause']:.1%} "
            f"| {o['solved_steps_held']:.1%} | {w['paused_after_warning']} of {p['runs']} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
