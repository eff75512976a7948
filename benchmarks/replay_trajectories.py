"""Replay real agent runs through the host hook path and measure what the triggers do.

The data (``--data``: a gzipped JSON-lines file kept outside this repository, by default
``trajectories-dev.jsonl.gz`` in a ``shared/data`` folder beside the checkout) holds real
SWE-bench runs of a coding agent: every shell command, its exit code and output, and whether
the run went on to solve its task. Each run is fed to the product exactly as Claude Code
delivers a shell command to its hooks: ``PreToolUse`` before the command, then
``PostToolUse`` (exit 0) or ``PostToolUseFailure`` (``error`` = ``"Exit code N"`` and the
output) after it, each a JSON payload handed to the same two functions the hook process and
the relay run (``hooks/dispatch.py``), on a real SQLite store with the default config (or
``--config``). Every run gets a store of its own, with ``/testbed`` as its project (the
folder the agent worked in, which its commands and outputs name).

A run stops where it is paused: the ``PreToolUse`` of its next command is denied, because a
human is now in the loop (the recorded agent went on, so nothing after that point is
evidence of what the product would have done).

What it reports, per escalation type and in total:

- the share of unsolved and of solved runs it paused, and the lift (the first over the
  second: how much likelier a pause is on a run that was going to fail);
- where it paused: the step, and the step over the run's length;
- the share of pauses whose headline (the first line the model and the operator read)
  carries the failing step's error line. The error line is found by ``error_line`` below,
  a rule of its own and deliberately not the product's ``rules/salient.py``: the last line
  of the output that names an error the way Python, pytest and shells print one;
- warnings (the tier before a pause): on how many runs one was shown, how many steps before
  the pause, and on how many paused runs no warning came first.

``--process`` hands each payload to the installed console script instead
(``mcp-server-escalation hook claude-code`` on stdin, as the host runs it, answered by the
relay daemon its first run starts): slower, and the proof that the in-process path decides
exactly as the installed one does (``tests/test_replay.py`` compares the two).

    python benchmarks/replay_trajectories.py                    # the whole set
    python benchmarks/replay_trajectories.py --limit 20 --json replay.json
    python benchmarks/replay_trajectories.py --config tuned.toml --show 5
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from mcp_server_escalation.hooks.dispatch import answer, prepare
from mcp_server_escalation.services.runtime import Runtime, open_runtime
from mcp_server_escalation.settings import Settings
from mcp_server_escalation.store import escalations as escalation_store
from mcp_server_escalation.store import tasks as task_store

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "trajectories-dev.jsonl.gz"
ENTRY = "claude-code"
# The agent's final step: its output is the submitted diff, not work the hooks would see.
SUBMIT = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"

# An error line as Python, pytest and shells print one: ``ValueError: ...``,
# ``django.core.exceptions.FieldError: ...``, ``E   AssertionError``, ``FAILED tests/...``,
# ``ERROR: ...``, ``bash: x: command not found``, ``SyntaxError``, pytest's ``Failed: ...``.
_ERROR_LINE = re.compile(
    r"^(?:E\s+)?(?:[\w.]*(?:Error|Exception|Exit|Failure|Failed|Interrupt)\b(?::|$)"
    r"|FAILED\b|ERROR\b|error:|fatal:|\S+: (?:line \d+: )?.*(?:command not found|No such file or directory))"
)


# Lines that count or name failed tests rather than say the error: pytest's short summary cut
# to the terminal's width (``FAILED t.py::x - Ty...``) and unittest's totals (``FAILED
# (failures=3)``). The error is printed whole further up.
_CUT_SUMMARY = re.compile(r"^(?:(?:FAILED|ERROR) \S+ - .*\.\.\.|FAILED \((?:failures|errors)=.*\))$")


def error_line(output: str) -> str | None:
    """The last line of ``output`` that names an error (module docstring); None if none does.

    A cut pytest summary or unittest's totals count only when no whole error line is
    printed above them."""
    found = [
        re.sub(r"^E\s+", "", stripped)  # pytest's marker of an assertion line
        for stripped in (line.strip() for line in output.splitlines())
        if stripped and _ERROR_LINE.match(stripped)
    ]
    whole = [line for line in found if not _CUT_SUMMARY.match(line)]
    return (whole or found or [None])[-1]


def carries(headline: str, line: str) -> bool:
    """True when the headline shows the error line (its first 40 characters, spaces folded)."""
    want = " ".join(line.split())[:40]
    return want in " ".join(headline.split())


class Pause(NamedTuple):
    """Where and why a run was paused."""

    step: int
    types: tuple[str, ...]  # every trigger of the escalation, first first
    headline: str
    error_line: str | None  # of the step that fired it


class Replayed(NamedTuple):
    """One run after the replay."""

    run: str
    resolved: bool
    steps: int  # commands the agent ran (the submission excluded)
    pause: Pause | None
    warnings: tuple[int, ...]  # steps after which a warning was shown


def runs(path: Path, limit: int | None = None, start: int = 0) -> Iterator[dict[str, Any]]:
    """The runs of the data file, in order, from ``start``, at most ``limit``."""
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        for number, line in enumerate(lines):
            if number < start:
                continue
            if limit is not None and number >= start + limit:
                return
            yield json.loads(line)


def work_steps(run: dict[str, Any]) -> list[dict[str, Any]]:
    """The commands of the run's work (the final submission left out)."""
    return [s for s in run["steps"] if SUBMIT not in s["command"]]


# Claude Code reports exit 1 of these as a success (no match, a difference): PostToolUse.
_BENIGN_EXIT_1 = re.compile(r"^\s*(?:grep|rg|find|diff|test|\[|git\s+(?:diff|grep))\b")


def benign(step: dict[str, Any]) -> bool:
    """True for a command whose exit 1 the host delivers as a success."""
    return step["returncode"] == 1 and _BENIGN_EXIT_1.match(step["command"]) is not None


def payloads(run_id: str, project: str, number: int, step: dict[str, Any]) -> tuple[dict, dict]:
    """The ``PreToolUse`` and the post event Claude Code sends for one shell command."""
    envelope = {
        "session_id": run_id,
        "transcript_path": f"/replay/{run_id}.jsonl",
        "cwd": project,
        "permission_mode": "default",
        "tool_name": "Bash",
        "tool_input": {"command": step["command"], "description": "replayed"},
        "tool_use_id": f"toolu_{run_id}_{number:05d}",  # unique, as the host makes them
    }
    pre = {**envelope, "hook_event_name": "PreToolUse"}
    output = step["output"]
    if step.get("timed_out"):
        post = {
            **envelope,
            "hook_event_name": "PostToolUseFailure",
            "error": f"{output}\nCommand timed out after 1m 0s",
            "is_interrupt": False,
        }
    elif step["returncode"] == 0 or benign(step):
        post = {
            **envelope,
            "hook_event_name": "PostToolUse",
            "tool_response": {"stdout": output, "stderr": "", "interrupted": False, "isImage": False},
        }
    else:
        post = {
            **envelope,
            "hook_event_name": "PostToolUseFailure",
            "error": f"Exit code {step['returncode']}\n{output}",
            "is_interrupt": False,
        }
    return pre, post


Deliver = Callable[[dict], Awaitable[dict]]


def in_process(rt: Runtime, settings: Settings, env: dict[str, str]) -> Deliver:
    """What the hook prints for a payload ({} for no decision), as a hook run computes it."""

    async def deliver(payload: dict) -> dict:
        event = prepare(json.dumps(payload).encode(), settings, env, env["CLAUDE_PROJECT_DIR"])
        if event is None:
            return {}
        text = await answer(rt, ENTRY, event, settings)
        return json.loads(text) if text else {}

    return deliver


def installed(settings: Settings, env: dict[str, str], home: Path, runtime: Path | None = None) -> Deliver:
    """What the installed hook process prints for a payload, run as the host runs it.

    ``home`` stands in for the user's folders, so no config or daemon of the user's own is
    read; the store and the config are the replay's. ``runtime`` is where the hook finds its
    relay daemon (by default a folder in ``home``, which may be too long a path for a socket,
    so each hook run then opens the store itself)."""
    exe = shutil.which("mcp-server-escalation")
    assert exe is not None, "the console script is not installed"
    config = ["--config", settings.config_path] if settings.config_path else []
    argv = [exe, "--db", settings.db_path, *config, "hook", ENTRY]
    process_env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_RUNTIME_DIR": str(runtime or home / "run"),
        **env,
    }
    (runtime or home / "run").mkdir(mode=0o700, parents=True, exist_ok=True)

    async def deliver(payload: dict) -> dict:
        hook = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=process_env,
        )
        out, err = await hook.communicate(json.dumps(payload).encode())
        if hook.returncode != 0 or err:
            raise RuntimeError(f"hook exit {hook.returncode}: {err.decode()[:500]}")
        return json.loads(out) if out.strip() else {}

    return deliver


def denied(printed: dict) -> bool:
    """True when the hook refused the tool call."""
    return printed.get("hookSpecificOutput", {}).get("permissionDecision") == "deny"


def context_of(printed: dict) -> str:
    """The text the hook added to the model's context."""
    return str(printed.get("hookSpecificOutput", {}).get("additionalContext", ""))


PROJECT = "/testbed"


async def replay_run(rt: Runtime, deliver: Deliver, run: dict[str, Any]) -> Replayed:
    """Feed one run's commands through the hook path until it ends or is paused."""
    run_id = run["instance_id"]
    project = PROJECT
    steps = work_steps(run)
    warnings: list[int] = []
    last_failing_output = ""
    for number, step in enumerate(steps):
        pre, post = payloads(run_id, project, number, step)
        if denied(await deliver(pre)):
            pause = await _pause(rt, project, number, last_failing_output)
            return Replayed(run_id, run["resolved"], len(steps), pause, tuple(warnings))
        printed = await deliver(post)
        if step["returncode"] != 0 and not benign(step):
            last_failing_output = step["output"]
        context = context_of(printed)
        if context and "raised escalation" not in context:  # hooks.toml: a warning
            warnings.append(number)
    return Replayed(run_id, run["resolved"], len(steps), None, tuple(warnings))


async def _pause(rt: Runtime, project: str, step: int, output: str) -> Pause:
    """The escalation holding the run's task, read from the store."""

    def read(conn: Any) -> Pause:
        task = task_store.latest_active_in_project(conn, project)
        assert task is not None, f"{project}: denied without a task"
        held = escalation_store.blocking_open(conn, task.task_id)
        assert held is not None, f"{project}: denied without an escalation"
        summary = held.triggers[-1].summary if held.triggers else ""
        return Pause(
            step,
            tuple(t.type for t in held.triggers) or (held.type,),
            summary.splitlines()[0] if summary else "",
            error_line(output),
        )

    return await rt.db.read(read)


async def replay(
    path: Path,
    folder: Path,
    config: str | None,
    limit: int | None,
    start: int = 0,
    process: bool = False,
    runtime: Path | None = None,
) -> list[Replayed]:
    """Every selected run, each replayed into a new store in ``folder``.

    ``process``: through the installed hook process rather than in this one (its relay
    daemons' sockets in ``runtime``, see ``installed``)."""
    replayed = []
    env = {"CLAUDE_PROJECT_DIR": PROJECT}
    for number, run in enumerate(runs(path, limit, start)):
        settings = Settings.from_sources(db=str(folder / f"run-{number}.db"), config=config, env={})
        async with open_runtime(settings) as rt:
            deliver = (
                installed(settings, env, folder / "home", runtime)
                if process
                else in_process(rt, settings, env)
            )
            replayed.append(await replay_run(rt, deliver, run))
    return replayed


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
        "by_type": {t: row([r for r in paused if t in r.pause.types]) for t in types},  # type: ignore[union-attr]
        "first_type": dict(Counter(r.pause.types[0] for r in paused if r.pause)),
        "warnings": {
            "runs_warned": len(warned),
            "solved_warned_share": _share(sum(1 for r in warned if r.resolved), len(solved)),
            "unsolved_warned_share": _share(sum(1 for r in warned if not r.resolved), len(unsolved)),
            "warnings_shown": sum(len(r.warnings) for r in replayed),
            "paused_without_warning": sum(1 for r in paused if not r.warnings),
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
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="the trajectories (JSONL, gzip)")
    parser.add_argument("--config", help="a config file (thresholds, [hooks]) instead of the defaults")
    parser.add_argument("--limit", type=int, help="replay only this many runs")
    parser.add_argument("--start", type=int, default=0, help="skip this many runs first")
    parser.add_argument("--json", type=Path, help="also write the figures and every pause here")
    parser.add_argument("--show", type=int, default=0, help="print this many pauses of solved runs")
    parser.add_argument(
        "--process", action="store_true", help="through the installed hook process (slower; same decisions)"
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        began = time.perf_counter()
        selected = replay(args.data, Path(folder), args.config, args.limit, args.start, args.process)
        replayed = asyncio.run(selected)
        took = time.perf_counter() - began
    figures = summarise(replayed)
    print(_table(figures))
    print(f"\nreplayed in {took:.1f} s")
    shown = [r for r in replayed if r.pause and r.resolved][: args.show]
    for r in shown:
        print(f"\n{r.run} (solved) paused at step {r.pause.step}/{r.steps}: {r.pause.types}")  # type: ignore[union-attr]
        print(f"  headline: {r.pause.headline[:200]}")  # type: ignore[union-attr]
        print(f"  error line: {r.pause.error_line}")  # type: ignore[union-attr]
    if args.json:
        args.json.write_text(
            json.dumps({"figures": figures, "runs": [r._asdict() for r in replayed]}, indent=1, default=str)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
