"""Feeding real agent runs through the host hook path: the replay itself (what
``replay_trajectories.py`` measures)."""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import re
import shutil
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from mcp_server_escalation.hooks.dispatch import answer, prepare
from mcp_server_escalation.services.runtime import Runtime, open_runtime
from mcp_server_escalation.settings import Settings
from mcp_server_escalation.store import escalation_lookups
from mcp_server_escalation.store import tasks as task_store

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
# The development corpora: mini-swe-agent with Gemini 3 Pro (shell only), OpenHands'
# CodeActAgent with Claude 3.5 Sonnet (a shell and a file editor), and SWE-agent with GPT-4
# (its own viewer, searches and a lint-guarded line editor; short runs, three per instance).
DATA = SHARED / "trajectories-dev.jsonl.gz"
SHORT_RUNS = SHARED / "trajectories-sweagent-dev.jsonl.gz"
CORPORA = (DATA, SHARED / "trajectories-openhands-dev.jsonl.gz", SHORT_RUNS)
# The agent each one is, as tables name it.
AGENTS = {
    DATA.name: "mini-swe-agent",
    "trajectories-openhands-dev.jsonl.gz": "OpenHands",
    SHORT_RUNS.name: "SWE-agent",
}


def agent_of(corpus: str) -> str:
    """The corpus's agent, or its file's name for another corpus."""
    return AGENTS.get(corpus, corpus)


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


# A lint guard's finding, as flake8 prints it in the list of a refused edit (``- E999
# IndentationError: unexpected indent``): the guard lists the cause first.
_LINT_FINDING = re.compile(r"^- ([A-Z]\d{3} \S.*)$", re.MULTILINE)


def error_line(output: str) -> str | None:
    """The last line of ``output`` that names an error (module docstring); None if none does.

    A cut pytest summary or unittest's totals count only when no whole error line is
    printed above them; a lint guard's refusal is named by its first finding."""
    lint = _LINT_FINDING.search(output)
    if lint is not None:
        return lint.group(1).strip()
    found = [
        re.sub(r"^E\s+", "", stripped)  # pytest's marker of an assertion line
        for stripped in (line.strip() for line in output.splitlines())
        if stripped and _ERROR_LINE.match(stripped)
    ]
    whole = [line for line in found if not _CUT_SUMMARY.match(line)]
    return (whole or found or [None])[-1]


# pytest's short summary names the test before the error (``FAILED path::test - AssertionError:
# ...``): the error is what follows the dash, and a headline that leads with it carries it.
_SUMMARY_LEAD = re.compile(r"^(?:FAILED|ERROR) \S+ - (?=\S)")


def carries(headline: str, line: str) -> bool:
    """True when the headline shows the error line (its first 40 characters, spaces folded;
    of a pytest summary line, the error after the test's name)."""
    want = " ".join(_SUMMARY_LEAD.sub("", line).split())[:40]
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
    hook_errors: int = 0  # hook runs that failed (the host goes on without their answer)


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
# SWE-agent's checkout, ``/workspace/<owner>__<repo>/``, where its commands ran. OpenHands'
# checkouts carry a version as well (``/workspace/<repo>__<version>/``, not matched: each name
# part holds no ``__``) and that agent writes its scripts beside the checkout, in /workspace.
_CHECKOUT = re.compile(r"/workspace/((?:(?!__)[\w.-])+__(?:(?!__)[\w.-])+)/")


def project_of(run: dict[str, Any]) -> str:
    """The run's project: the agent's working folder, as its commands name it."""
    commands = " ".join(s["command"] for s in run["steps"][:20])
    checkout = _CHECKOUT.search(" ".join(s["command"] for s in run["steps"]))
    if checkout is not None:
        return f"/workspace/{checkout.group(1)}"
    return next((w for w in WORKSPACES if w + "/" in commands or commands.startswith(f"cd {w}")), "/testbed")


# Claude Code reports exit 1 of these as a success (no match, a difference): PostToolUse.
_BENIGN_EXIT_1 = re.compile(r"^\s*(?:grep|rg|find|diff|test|\[|git\s+(?:diff|grep))\b")


def benign(step: dict[str, Any]) -> bool:
    """True for a command whose exit 1 the host delivers as a success."""
    return step["returncode"] == 1 and _BENIGN_EXIT_1.match(step["command"]) is not None


# A file editor's call, as the second and third corpora record it: ``str_replace_editor <command> <path>``
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
    "edit": "Edit",  # SWE-agent's line-range edit (``--lines "a:b" --new_str``)
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
    failed: list[str] = []
    answering = _counting(deliver, failed)
    last_failing_output = ""
    for number, step in enumerate(steps):
        pre, post = payloads(run_id, project, number, step)
        if denied(await answering(pre)):
            pause = await _pause(rt, project, number, last_failing_output)
            return Replayed(run_id, run["resolved"], len(steps), pause, tuple(warnings), len(failed))
        printed = await answering(post)
        if step["returncode"] != 0 and not benign(step):
            last_failing_output = step["output"]
        context = context_of(printed)
        if context and "raised escalation" not in context:  # hooks.toml: a warning
            warnings.append(number)
    return Replayed(run_id, run["resolved"], len(steps), None, tuple(warnings), len(failed))


def _counting(deliver: Deliver, failed: list[str]) -> Deliver:
    """``deliver`` that answers nothing for a hook run that failed, and keeps its error in
    ``failed``: a host goes on when a hook fails, and every failure is a hook error counted."""

    async def answering(payload: dict) -> dict:
        try:
            return await deliver(payload)
        except Exception as error:  # noqa: BLE001  (any failure of a hook run is the figure)
            if not failed:
                print(f"{payload['session_id']}: hook error: {error!r}"[:500], file=sys.stderr)
            failed.append(repr(error))
            return {}

    return answering


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
    return [
        await replay_one(run, folder / f"run-{number}.db", config, process, runtime)
        for number, run in enumerate(runs(path, limit, start))
    ]


async def replay_one(
    run: dict[str, Any], db: Path, config: str | None, process: bool = False, runtime: Path | None = None
) -> Replayed:
    """One run replayed into a new store at ``db`` (``replay`` says the rest)."""
    project = project_of(run)
    env = {"CLAUDE_PROJECT_DIR": project}
    settings = Settings.from_sources(db=str(db), config=config, env={})
    async with open_runtime(settings) as rt:
        deliver = (
            installed(settings, env, db.parent / "home", runtime)
            if process
            else in_process(rt, settings, env)
        )
        return await replay_run(rt, deliver, run, project)
