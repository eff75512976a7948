"""From a finished tool call to the service calls that record it (pure, no I/O).

What the hooks record (docs/hooks.md), and why:

- **An edit** (``Edit``, ``Write``, ``MultiEdit``, ``NotebookEdit``, Cursor's ``Write``,
  ``Delete`` and ``afterFileEdit``) is ``report_progress(files_modified=[path])``: progress,
  which resets the no-file-change count. Edits outside the project root are ignored unless
  ``[hooks] outside_project = "gate"`` (hosts write plan files there).
- **A test run** is a shell command that the test-command detector recognises *and* whose
  output ends with a summary we can read; it is ``report_progress(tests_passed=,
  tests_failed=)`` with outcome ``success`` when nothing failed. A run with failures is also
  a failure (below), whatever its exit code, so piping ``pytest | tail`` changes nothing.
- **A failure** (a failed tool call, a non-zero exit, a test run with failures) is
  ``record_failure`` with the tail of the output as the message (where every runner prints
  its failing checks and its summary), the tool name, ``exit N`` as the error code, the
  command or the edited file, and ``timeout`` as the signal when the host killed it.
- **A successful shell command** that is neither a test run nor read-only is a successful
  operation: ``report_progress(outcome="success")`` naming the command, which ends a run of
  identical errors only when this command is the one that failed (an agent edits and reads
  between its tries). The files it says it writes inside the project (``sed -i``,
  ``cat > file``, ``tee``: ``rules/reading/shell_work.py``) are progress, as an edit is.
- **Reading and searching are never recorded**: read-only tools, read-only shell commands
  (``rules/reading/commands.py``), failures of either, and this server's own MCP tools.

What counts as an *attempt* for ``no_file_progress``: edits (which reset it) and test runs,
by default. Successful commands count too only with ``[hooks] attempts = ["test_run",
"command"]``: an agent that edits through the shell (``sed -i``, formatters, ``git apply``)
or sets up its environment would otherwise look stuck while it works. Cursor's
``afterShellExecution`` carries no exit code, and Codex's ``PostToolUse`` often does not
either, so only test runs are taken from those.

An edit through Codex's ``apply_patch`` names several files: each one inside the project
is a modified file of the same report.
"""

from __future__ import annotations

from typing import NamedTuple

from ..models.limits import PATH_MAX
from ..rules.decide.paths import normalise_path
from ..rules.reading.commands import is_read_only_command, is_test_command
from ..rules.reading.salient import headline
from ..rules.reading.shell_output import digest, parse_summary, timed_out
from ..rules.reading.shell_work import written_files
from .events import HookEvent, ToolKind

# Longest command kept as the attempted action or the note of a report.
ACTION_MAX = 1000
# Of a failure that only its command can name, the most of the command's first line shown.
COMMAND_SHOWN = 160


class Rules(NamedTuple):
    """The configuration the plan depends on (from ``[hooks]``)."""

    test_command: str
    read_only_commands: tuple[str, ...] = ()
    attempts: frozenset[str] = frozenset({"test_run"})
    outside_project: str = "ignore"


class FailureCall(NamedTuple):
    """Arguments of ``record_failure``."""

    message: str
    tool_name: str
    error_code: str | None = None
    file: str | None = None
    attempted_action: str | None = None
    signal_type: str | None = None


class ProgressCall(NamedTuple):
    """Arguments of ``report_progress``; ``attempt`` False keeps no_file_progress untouched."""

    files_modified: tuple[str, ...] = ()
    tests_passed: int | None = None
    tests_failed: int | None = None
    outcome: str = "neutral"
    note: str | None = None
    attempt: bool = True
    operation: str | None = None  # what succeeded: ends a run of its own identical errors


class PostPlan(NamedTuple):
    """What to record for one finished tool call, and why (for logs and tests)."""

    why: str
    failure: FailureCall | None = None
    progress: ProgressCall | None = None


def usable_path(path: str | None) -> str | None:
    """The path if it can be stored as given: not too long, no control characters."""
    if not path or len(path) > PATH_MAX or any(ord(ch) < 32 for ch in path):
        return None
    return path


def edit_counts(path: str, root: str, rules: Rules) -> bool:
    """False for an edit the hooks leave alone (outside the project, by default)."""
    return rules.outside_project == "gate" or normalise_path(path, root).inside_root


def edited_paths(event: HookEvent, root: str, rules: Rules) -> tuple[str, ...]:
    """The files an edit tool call changes that the hooks gate and record, in order."""
    named = event.paths or ((event.file_path,) if event.file_path else ())
    usable = (usable_path(p) for p in named)
    return tuple(p for p in usable if p is not None and edit_counts(p, root, rules))


def _clip(text: str | None) -> str | None:
    return text[:ACTION_MAX] if text else None


def _message(event: HookEvent, tool: str, slow: bool) -> str:
    """The failure's message: the output's tail, named by the command where the output alone
    names no failure (none at all, or only the host's timeout notice): two silent commands
    failing, or two scripts timing out, are two failures, not one."""
    tail = _with_error(event.output or "", digest(event.output or ""))
    command = (event.command or "").strip().split("\n", 1)[0][:COMMAND_SHOWN]
    if slow and command:
        return f"{tail}\n{tool} timed out: {command}".strip()
    if tail:
        return tail
    ended = f"exit {event.exit_code}" if event.exit_code is not None else "failed"
    return f"{tool}: {ended} with no output: {command}" if command else f"{tool}: {ended}"


def _with_error(output: str, tail: str) -> str:
    """The tail, led by the output's error line when the tail lost it: warnings printed
    after a test's error push it out of the last lines, and the summary that stays names
    the test, cut short, not the error."""
    error = headline(output)
    return f"{error}\n{tail}" if error and headline(tail) != error else tail


def edit_operation(tool: str, path: str) -> str:
    """An edit of ``path`` by ``tool`` as an operation: a refused edit (the text to replace
    not found, a file that already exists) and a later edit of that file by that tool that
    went through are the same operation failing and succeeding."""
    return f"{tool} {path}"


def _failure(event: HookEvent, kind: ToolKind, path: str | None) -> FailureCall:
    output = event.output or ""
    tool = event.tool_name or "tool"
    if kind == "shell" and event.command:
        action = f"{tool}: {event.command}"
    elif kind == "edit" and path:
        action = edit_operation(tool, path)
    else:
        action = f"{tool} {path}" if path else tool
    slow = timed_out(output) or event.failure_type == "timeout"
    return FailureCall(
        message=_message(event, tool, slow and kind == "shell"),
        tool_name=tool,
        error_code=f"exit {event.exit_code}" if event.exit_code is not None else None,
        file=path if kind == "edit" else None,
        attempted_action=_clip(action),
        signal_type="timeout" if slow else None,
    )


def plan_post(event: HookEvent, kind: ToolKind | None, root: str, rules: Rules) -> PostPlan:
    """The service calls that record this finished tool call (module docstring)."""
    if kind is None or kind in ("own", "read"):
        return PostPlan("not recorded: reading, or this server's own tool" if kind else "no tool")
    if event.interrupted or event.failure_type == "permission_denied":
        return PostPlan("not recorded: interrupted or refused by the user")
    failed = event.kind == "post_tool_failure" or (event.exit_code is not None and event.exit_code != 0)
    if kind == "edit":
        return _plan_edit(event, root, rules, failed=failed)
    if kind == "shell":
        return _plan_shell(event, root, rules, failed=failed)
    if failed:
        return PostPlan("failure", _failure(event, kind, None))
    return PostPlan("not recorded: a successful call of another tool")


def _plan_edit(event: HookEvent, root: str, rules: Rules, *, failed: bool) -> PostPlan:
    edited = edited_paths(event, root, rules)
    if not edited:
        return PostPlan("not recorded: no usable path inside the project")
    if failed:
        return PostPlan("failure", _failure(event, "edit", edited[0]))
    # The edit went through: it ends a run of refusals of the same edit (``edit_operation``).
    operation = edit_operation(event.tool_name or "tool", edited[0])
    progress = ProgressCall(files_modified=edited, note=_clip(event.tool_name), operation=operation)
    return PostPlan("edit", progress=progress)


def _plan_shell(event: HookEvent, root: str, rules: Rules, *, failed: bool) -> PostPlan:
    command = event.command or ""
    if not command.strip() or is_read_only_command(command, rules.read_only_commands):
        return PostPlan("not recorded: a read-only command")
    operation = _clip(f"{event.tool_name or 'tool'}: {command}")
    test_run = _test_run(event, command, rules, failed=failed, operation=operation)
    if failed or (test_run is not None and (test_run.tests_failed or 0) > 0):
        return PostPlan(
            "failure" + (" and test run" if test_run else ""), _failure(event, "shell", None), test_run
        )
    if test_run is not None:
        return PostPlan("test run", progress=test_run)
    if event.source == "tool" and not event.outcome_unknown:
        written = tuple(p for p in written_files(command) if usable_path(p) and edit_counts(p, root, rules))
        return PostPlan(
            "successful command" + (" writing files" if written else ""),
            progress=ProgressCall(
                files_modified=written,
                outcome="success",
                note=_clip(command),
                attempt="command" in rules.attempts,
                operation=operation,
            ),
        )
    return PostPlan("not recorded: no exit code and no test summary")


def _test_run(
    event: HookEvent, command: str, rules: Rules, *, failed: bool, operation: str | None
) -> ProgressCall | None:
    """A test command whose output ends with a summary we can read, as a test run."""
    if not event.output or not is_test_command(command, rules.test_command):
        return None
    summary = parse_summary(event.output)
    if summary is None:
        return None
    return ProgressCall(
        tests_passed=summary.passed,
        tests_failed=summary.failed,
        outcome="failure" if failed or summary.failed else "success",
        note=_clip(f"{summary.runner}: {summary.line}"),
        attempt="test_run" in rules.attempts,
        operation=operation,
    )
