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
  a rule of its own and deliberately not the product's ``rules/reading/salient.py``: the last line
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
from mcp_server_escalation.store import escalation_lookups
from mcp_server_escalation.store import tasks as task_store

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
# The development corpora: mini-swe-agent with Gemini 3 Pro (shell only), and OpenHands'
# CodeActAgent with Claude 3.5 Sonnet (a shell and a file editor).
DATA = SHARED / "trajectories-dev.jsonl.gz"
CORPORA = (DATA, SHARED / "trajectories-openhands-dev.jsonl.gz")
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
    """The steps of the run's work: the submission (mini-swe-agent's final command, OpenHands'
    ``finish``) and a last call whose result was never logged (the iteration limit) left out."""
    return [s for s in run["steps"] if not _submission(s) and not _unlogged(s)]


def _submission(step: dict[str, Any]) -> bool:
    return SUBMIT in step["command"] or step["command"].strip() == "finish"


def _unlogged(step: dict[str, Any]) -> bool:
    return step["returncode"] is None and not step.get("timed_out") and not step["output"]


# The folder each corpus's agent worked in (its commands and outputs name it): the project.
WORKSPACES = ("/workspace", "/testbed")


def project_of(run: dict[str, Any]) -> str:
    """The run's project: the agent's working folder, as its commands name it."""
    commands = " ".join(s["command"] for s in run["steps"][:20])
    return next((w for w in WORKSPACES if w + "/" in commands or commands.startswith(f"cd {w}")), "/testbed")


# Claude Code reports exit 1 of these as a success (no match, a difference): PostToolUse.
_BENIGN_EXIT_1 = re.compile(r"^\s*(?:grep|rg|find|diff|test|\[|git\s+(?:diff|grep))\b")


def benign(step: dict[str, Any]) -> bool:
    """True for a command whose exit 1 the host delivers as a success."""
    return step["returncode"] == 1 and _BENIGN_EXIT_1.match(step["command"]) is not None


# A file editor's call, as the second corpus records it: ``str_replace_editor <command> <path>``
# and its arguments, each ``--name`` followed by a JSON string (the whole cut to 2,000
# characters, so the last one may end unterminated).
EDITOR = "str_replace_editor"
_EDITOR_ARGUMENT = re.compile(r"\s--(\w+)\s+")
# Which host tool a coding host delivers each editor command as.
EDITOR_TOOLS = {
    "view": "Read",
    "create": "Write",
    "str_replace": "Edit",
    "insert": "Edit",
    "undo_edit": "Edit",
}


def editor_call(command: str) -> tuple[str, dict[str, Any]] | None:
    """The host tool and its ``tool_input`` for a file editor's call; None for a shell command."""
    parts = command.split(None, 3)
    if len(parts) < 3 or parts[0] != EDITOR:
        return None
    tool = EDITOR_TOOLS.get(parts[1], "Edit")
    arguments = _editor_arguments(parts[3] if len(parts) > 3 else "")
    tool_input: dict[str, Any] = {"file_path": parts[2]}
    if tool == "Write":
        tool_input["content"] = arguments.get("file_text", "")
    elif tool == "Edit":
        tool_input["old_string"] = arguments.get("old_str", "")
        tool_input["new_string"] = arguments.get("new_str", "")
    return tool, tool_input


def _editor_arguments(text: str) -> dict[str, str]:
    """``--name "json"`` pairs; a value cut short is kept as it stands."""
    found: dict[str, str] = {}
    decoder = json.JSONDecoder()
    at = 0
    while (match := _EDITOR_ARGUMENT.search(" " + text, at)) is not None:
        start = match.end() - 1  # in ``text``, which the search saw behind one space
        try:
            value, end = decoder.raw_decode(text, start)
        except ValueError:
            found[match.group(1)] = text[start:].strip('"')
            break
        found[match.group(1)] = str(value)
        at = end
    return found


def payloads(run_id: str, project: str, number: int, step: dict[str, Any]) -> tuple[dict, dict]:
    """The ``PreToolUse`` and the post event Claude Code sends for one step: a shell command
    as Bash, a file editor's call as Read, Write or Edit."""
    editor = editor_call(step["command"])
    tool, tool_input = editor or ("Bash", {"command": step["command"], "description": "replayed"})
    envelope = {
        "session_id": run_id,
        "transcript_path": f"/replay/{run_id}.jsonl",
        "cwd": project,
        "permission_mode": "default",
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_use_id": f"toolu_{run_id}_{number:05d}",  # unique, as the host makes them
    }
    pre = {**envelope, "hook_event_name": "PreToolUse"}
    output = step["output"]
    failure = {**envelope, "hook_event_name": "PostToolUseFailure", "is_interrupt": False}
    if editor is not None:
        if step["returncode"] not in (0, None):
            return pre, {**failure, "error": output}  # the editor's own refusal, as the host says it
        return pre, {
            **envelope,
            "hook_event_name": "PostToolUse",
            "tool_response": _editor_response(tool, tool_input, output),
        }
    if step.get("timed_out"):
        return pre, {**failure, "error": f"{output}\nCommand timed out after 1m 0s"}
    if step["returncode"] == 0 or benign(step):
        response = {"stdout": output, "stderr": "", "interrupted": False, "isImage": False}
        return pre, {**envelope, "hook_event_name": "PostToolUse", "tool_response": response}
    return pre, {**failure, "error": f"Exit code {step['returncode']}\n{output}"}


def _editor_response(tool: str, tool_input: dict[str, Any], output: str) -> dict[str, Any]:
    """A successful file tool's ``tool_response``, in the fields Claude Code gives it."""
    path = tool_input["file_path"]
    if tool == "Read":
        return {"type": "text", "file": {"filePath": path, "content": output}}
    if tool == "Write":
        return {"type": "create", "filePath": path, "content": tool_input.get("content", "")}
    return {
        "filePath": path,
        "oldString": tool_input.get("old_string", ""),
        "newString": tool_input.get("new_string", ""),
        "replaceAll": False,
    }


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
    # The script beside the interpreter running the replay (an unactivated venv's too), else PATH's.
    beside = Path(sys.executable).parent / "mcp-server-escalation"
    exe = str(beside) if beside.exists() else shutil.which("mcp-server-escalation")
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


async def replay_run(rt: Runtime, deliver: Deliver, run: dict[str, Any], project: str) -> Replayed:
    """Feed one run's commands through the hook path until it ends or is paused."""
    run_id = run["instance_id"]
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
        held = escalation_lookups.blocking_open(conn, task.task_id)
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
    for number, run in enumerate(runs(path, limit, start)):
        project = project_of(run)
        env = {"CLAUDE_PROJECT_DIR": project}
        settings = Settings.from_sources(db=str(folder / f"run-{number}.db"), config=config, env={})
        async with open_runtime(settings) as rt:
            deliver = (
                installed(settings, env, folder / "home", runtime)
                if process
                else in_process(rt, settings, env)
            )
            replayed.append(await replay_run(rt, deliver, run, project))
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data",
        type=Path,
        action="append",
        help="a corpus of trajectories (JSONL, gzip); repeat for several (default: both development corpora)",
    )
    parser.add_argument("--config", help="a config file (thresholds, [hooks]) instead of the defaults")
    parser.add_argument("--limit", type=int, help="replay only this many runs")
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
    args = parser.parse_args(argv)
    corpora = args.data or [c for c in CORPORA if c.exists()]
    results = {}
    for corpus in corpora:
        with tempfile.TemporaryDirectory() as folder:
            began = time.perf_counter()
            selected = replay(corpus, Path(folder), args.config, args.limit, args.start, args.process)
            replayed = asyncio.run(selected)
            took = time.perf_counter() - began
        figures = summarise(replayed)
        results[corpus.name] = {"figures": figures, "runs": [r._asdict() for r in replayed]}
        print(f"## {corpus.name}\n\n{_table(figures)}\n\nreplayed in {took:.1f} s\n")
        _show(replayed, args.show)
    if len(results) > 1:
        print(_side_by_side({name: r["figures"] for name, r in results.items()}))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, default=str))
    if args.figures:
        measured_on = time.strftime("%Y-%m-%d", time.gmtime())
        found = {name: r["figures"] for name, r in results.items()}
        args.figures.write_text(figures_toml(found, measured_on), encoding="utf-8")
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
