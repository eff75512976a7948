"""Shared by the hook tests: the console script as a subprocess, recorded payloads, runner
outputs, and a snapshot of what a store holds (to compare a hook's writes with the MCP
tools' writes on another store).

Payloads follow the hosts' documented hook examples (Claude Code's hooks reference,
Cursor's hooks documentation), with our paths;
the runner outputs are what each runner prints, colour codes included where it prints them.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from bounds import HUNG_AFTER
from in_process import run_main
from mcp_server_escalation.hooks.relay import connect, socket_path
from mcp_server_escalation.hooks.relay_spawn import log_path

SCRIPT = Path(sys.executable).parent / "mcp-server-escalation"
PROJECT = "/work/project"  # the same project as conftest's servers
SCRUBBED = (
    "ESCALATION_DB",
    "ESCALATION_CONFIG",
    "ESCALATION_PROMPTS",
    "ESCALATION_TASK",
    "XDG_DATA_HOME",
    "CLAUDE_PROJECT_DIR",
    "CURSOR_PROJECT_DIR",
)


@dataclass
class Run:
    """One finished hook (or CLI) process."""

    returncode: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        """stdout parsed as JSON."""
        return json.loads(self.stdout)

    @property
    def deny_reason(self) -> str:
        """Claude Code's deny reason (fails if the answer is not a deny)."""
        out = self.json()["hookSpecificOutput"]
        assert out["permissionDecision"] == "deny", out
        return str(out["permissionDecisionReason"])


def environment(tmp: Path, **env: str) -> dict[str, str]:
    """The process environment with every store and project variable of the caller removed.

    A hook run starts no relay daemon unless the test asks for one
    (``ESCALATION_HOOK_RELAY=on``): every other test would leave one per store behind.
    """
    base = {k: v for k, v in os.environ.items() if k not in SCRUBBED}
    base["XDG_DATA_HOME"] = str(tmp / "xdg")
    base["ESCALATION_HOOK_RELAY"] = "no-daemon"
    base.update(env)
    return base


async def run_script(*args: str, stdin: bytes = b"", tmp: Path, **env: str) -> Run:
    """The installed console script with ``args`` and ``stdin``, as a process; bounded."""
    with anyio.fail_after(HUNG_AFTER):
        done = await anyio.run_process(
            [str(SCRIPT), *args], input=stdin, check=False, env=environment(tmp, **env)
        )
    return Run(done.returncode, done.stdout.decode(), done.stderr.decode())


async def run_cli(*args: str, stdin: bytes = b"", tmp: Path, **env: str) -> Run:
    """The console script's ``main`` with ``args`` and ``stdin``, in this process (see
    ``in_process.py``): what it prints and returns is what the process would."""
    code, out, err = await run_main(list(args), stdin=stdin, env=environment(tmp, **env))
    return Run(code, out.decode(), err.decode())


async def hook(entry: str, payload: dict[str, Any] | bytes, *, db: str, tmp: Path, **env: str) -> Run:
    """``mcp-server-escalation --db DB hook ENTRY`` with the payload on stdin, in this process."""
    raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return await run_cli("--db", db, "hook", entry, stdin=raw, tmp=tmp, **env)


async def hook_process(entry: str, payload: dict[str, Any] | bytes, *, db: str, tmp: Path, **env: str) -> Run:
    """The same hook run as a process of the installed script (the boundary a host sees)."""
    raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return await run_script("--db", db, "hook", entry, stdin=raw, tmp=tmp, **env)


# --- Relay daemons (hooks/relay_daemon.py) -------------------------------------------------


def daemon_running(lock_file: Path) -> bool:
    """Does a daemon hold ``lock_file``? (Asked the way the hooks ask: by trying to take it.)"""
    try:
        fd = os.open(lock_file, os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing releases a lock this probe took
    return False


def daemon_pid(lock_file: Path) -> int:
    """The pid the daemon holding ``lock_file`` wrote into it."""
    return int(lock_file.read_text(encoding="ascii"))


def daemons_of(db: str) -> list[int]:
    """The pids of every ``hook daemon`` process of the store ``db`` (Linux: from /proc)."""
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            words = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue  # not a process, or gone meanwhile
        store = db.encode()
        named = any(word in (store, b"--db=" + store) for word in words)
        if b"daemon" in words and b"hook" in words and named:
            pids.append(int(proc.name))
    return sorted(pids)


def socket_of(db: str, tmp_path: Path) -> str:
    """The store's relay socket, as a hook run with ``environment(tmp_path)`` finds it."""
    socket_file = socket_path(db, environment(tmp_path), str(Path.cwd()))
    assert socket_file is not None
    return socket_file


def hook_log(db: str, tmp_path: Path) -> Path:
    """The log beside the store's relay socket, where a hook run's details go."""
    return Path(log_path(socket_of(db, tmp_path)))


@contextmanager
def relaying(db: str, tmp_path: Path, **env: str) -> Iterator[Path]:
    """``hook relay`` for the store while its socket is up (``env`` added to its
    environment); yields the relay's own log."""
    socket_file = socket_of(db, tmp_path)
    own_log = tmp_path / "relay.log"
    with own_log.open("wb") as out:
        relay = subprocess.Popen(
            [str(SCRIPT), "--db", db, "hook", "relay"],
            stdout=subprocess.DEVNULL,
            stderr=out,
            env=environment(tmp_path, **env),
        )
    try:
        deadline = time.monotonic() + 20  # a relay listens within a second or two
        while (conn := connect(socket_file)) is None:
            assert relay.poll() is None, own_log.read_text(encoding="utf-8")
            assert time.monotonic() < deadline, "the relay never listened"
            time.sleep(0.05)
        conn.close()
        yield own_log
    finally:
        relay.terminate()
        relay.wait(timeout=30)


async def wait_for(condition: Any, seconds: float = 60) -> None:
    """Until ``condition()`` holds; fails the test after ``seconds``."""
    with anyio.fail_after(seconds):
        while not condition():
            await anyio.sleep(0.02)


def stop_daemons(folder: Path) -> None:
    """SIGTERM every daemon holding a lock in ``folder`` and wait for it to go (then SIGKILL)."""
    for lock_file in sorted(folder.glob("*.lock")) if folder.is_dir() else []:
        if not daemon_running(lock_file):
            continue
        deadline = time.monotonic() + 20
        try:
            pid: int | None = daemon_pid(lock_file)
        except ValueError:
            pid = None  # started, and leaving before it wrote its pid (its config says no daemon)
        if pid is not None:
            os.kill(pid, signal.SIGTERM)
        while daemon_running(lock_file) and time.monotonic() < deadline:
            time.sleep(0.02)
        if pid is not None and daemon_running(lock_file):
            os.kill(pid, signal.SIGKILL)


# --- Claude Code payloads ------------------------------------------------------------------

ENVELOPE = {
    "session_id": "abc123",
    "transcript_path": "/home/user/.claude/projects/my-project/00893aaf-19fa-41d2-8238-13269b9b3ca0.jsonl",
    "cwd": PROJECT,
    "permission_mode": "default",
}


def no_grace(folder: Path) -> str:
    """A config file without the hooks' grace for repeated errors, for tests of the pause
    loop from a task's first calls (the grace has tests of its own: test_hooks_grace.py)."""
    config = folder / "no-grace.toml"
    if not config.exists():  # written once: a relay answers only for the config it loaded, unchanged
        config.write_text("[hooks]\nrepeat_grace_calls = 0\n", encoding="utf-8")
    return str(config)


def claude(event: str, **fields: Any) -> dict[str, Any]:
    """A Claude Code payload: the common envelope, the event name and ``fields``."""
    return {**ENVELOPE, "hook_event_name": event, **fields}


def pre_edit(path: str, tool_use_id: str = "toolu_01EDIT", tool: str = "Edit") -> dict[str, Any]:
    """PreToolUse of an Edit (or Write) of ``path``."""
    tool_input: dict[str, Any] = (
        {"file_path": path, "old_string": "x = 1", "new_string": "x = 2", "replace_all": False}
        if tool == "Edit"
        else {"file_path": path, "content": "print('hi')\n"}
    )
    return claude("PreToolUse", tool_name=tool, tool_input=tool_input, tool_use_id=tool_use_id)


def pre_tool(tool: str, tool_input: dict[str, Any], tool_use_id: str = "toolu_01PRE") -> dict[str, Any]:
    """PreToolUse of any tool."""
    return claude("PreToolUse", tool_name=tool, tool_input=tool_input, tool_use_id=tool_use_id)


def post_edit(path: str, tool_use_id: str = "toolu_01POSTEDIT") -> dict[str, Any]:
    """PostToolUse of a successful Edit of ``path`` (SDK FileEditOutput, abbreviated)."""
    return claude(
        "PostToolUse",
        tool_name="Edit",
        tool_input={"file_path": path, "old_string": "x = 1", "new_string": "x = 2", "replace_all": False},
        tool_response={
            "filePath": path,
            "oldString": "x = 1",
            "newString": "x = 2",
            "originalFile": "x = 1\n",
            "structuredPatch": [
                {"oldStart": 1, "oldLines": 1, "newStart": 1, "newLines": 1, "lines": ["-x = 1", "+x = 2"]}
            ],
            "userModified": False,
            "replaceAll": False,
        },
        tool_use_id=tool_use_id,
        duration_ms=12,
    )


def post_bash(command: str, stdout: str, tool_use_id: str = "toolu_01BASH") -> dict[str, Any]:
    """PostToolUse of a Bash command that exited 0 (no exit code field, as captured)."""
    return claude(
        "PostToolUse",
        tool_name="Bash",
        tool_input={"command": command, "description": "Run it"},
        tool_response={
            "stdout": stdout,
            "stderr": "",
            "interrupted": False,
            "isImage": False,
            "noOutputExpected": False,
        },
        tool_use_id=tool_use_id,
        duration_ms=850,
    )


def bash_failure(
    command: str, output: str, tool_use_id: str = "toolu_01FAIL", code: int = 1
) -> dict[str, Any]:
    """PostToolUseFailure of a Bash command: ``error`` = "Exit code N" + the output."""
    return claude(
        "PostToolUseFailure",
        tool_name="Bash",
        tool_input={"command": command, "description": "Run it"},
        tool_use_id=tool_use_id,
        error=f"Exit code {code}\n{output}",
        is_interrupt=False,
        duration_ms=4187,
    )


def stop(active: bool = False) -> dict[str, Any]:
    """Stop (the agent wants to end its turn)."""
    return claude(
        "Stop",
        stop_hook_active=active,
        last_assistant_message="I've completed the refactoring.",
        background_tasks=[],
        session_crons=[],
    )


def session_start(source: str = "startup", session_id: str = "fresh-session") -> dict[str, Any]:
    """SessionStart of a new session."""
    return {**claude("SessionStart", source=source, model="claude-sonnet-5"), "session_id": session_id}


# --- Cursor payloads -----------------------------------------------------------------------

CURSOR_ENVELOPE = {
    "conversation_id": "conv-7f3a",
    "generation_id": "gen-0001",
    "model": "claude-sonnet-5",
    "cursor_version": "2.4.1",
    "workspace_roots": [PROJECT],
    "user_email": "dev@example.com",
    "transcript_path": "/home/user/.cursor/transcripts/conv-7f3a.jsonl",
}


def cursor(event: str, **fields: Any) -> dict[str, Any]:
    """A Cursor payload: the common fields, the event name and ``fields``."""
    return {**CURSOR_ENVELOPE, "hook_event_name": event, **fields}


# --- Codex payloads (hooks/codex.py: Codex's hook input schemas and tool handlers) --------

CODEX_ENVELOPE = {
    "session_id": "019a2c3e-codex-session",
    "turn_id": "turn-1",
    "transcript_path": "/home/user/.codex/sessions/2026/05/01/rollout-019a2c3e.jsonl",
    "cwd": PROJECT,
    "model": "gpt-5.5-codex",
    "permission_mode": "default",
}


def codex(event: str, **fields: Any) -> dict[str, Any]:
    """A Codex payload: the common fields, the event name and ``fields``."""
    return {**CODEX_ENVELOPE, "hook_event_name": event, **fields}


def codex_patch(*sections: str) -> str:
    """An apply_patch body: the envelope around ``sections`` (each a file header and lines)."""
    return "\n".join(["*** Begin Patch", *sections, "*** End Patch"]) + "\n"


def codex_pre_patch(patch: str, tool_use_id: str = "call_patch_1") -> dict[str, Any]:
    """PreToolUse of apply_patch: the raw patch text in tool_input.command."""
    return codex(
        "PreToolUse", tool_name="apply_patch", tool_input={"command": patch}, tool_use_id=tool_use_id
    )


def codex_post_patch(patch: str, tool_use_id: str = "call_patch_1") -> dict[str, Any]:
    """PostToolUse of a successful apply_patch (its answer is a plain string)."""
    return codex(
        "PostToolUse",
        tool_name="apply_patch",
        tool_input={"command": patch},
        tool_response="Success. Updated the following files:\nM src/calc.py",
        tool_use_id=tool_use_id,
    )


def codex_post_bash(command: str, response: str, tool_use_id: str = "call_bash_1") -> dict[str, Any]:
    """PostToolUse of a shell command (tool_name Bash; tool_response is a string)."""
    return codex(
        "PostToolUse",
        tool_name="Bash",
        tool_input={"command": command},
        tool_response=response,
        tool_use_id=tool_use_id,
    )


# --- What each runner prints ---------------------------------------------------------------

PYTEST_FAIL = """\
============================= test session starts ==============================
platform linux -- Python 3.12.3, pytest-8.3.4, pluggy-1.5.0
rootdir: /work/project
collected 3 items

tests/test_calc.py .F.                                                   [100%]

=================================== FAILURES ===================================
___________________________________ test_add ___________________________________

    def test_add():
>       assert add(1, 2) == 4
E       assert 3 == 4
E        +  where 3 = add(1, 2)

tests/test_calc.py:9: AssertionError
=========================== short test summary info ============================
FAILED tests/test_calc.py::test_add - assert 3 == 4
========================= 1 failed, 2 passed in 0.13s ==========================
"""
PYTEST_PASS = """\
...                                                                      [100%]
3 passed in 0.04s
"""
JEST_FAIL = """\
FAIL src/calc.test.js
  \u25cf calc \u203a adds

    expect(received).toBe(expected) // Object.is equality

    Expected: 4
    Received: 3

      3 | test('adds', () => {
    > 4 |   expect(add(1, 2)).toBe(4);
        |                     ^

      at Object.<anonymous> (src/calc.test.js:4:21)

Test Suites: 1 failed, 1 passed, 2 total
Tests:       1 failed, 1 skipped, 4 passed, 6 total
Snapshots:   0 total
Time:        1.234 s
Ran all test suites.
"""
# vitest colours its summary; the parser must see through it.
_DIM, _UNDIM, _RED, _GREEN, _GREY, _BOLD, _OFF = (
    "\x1b[2m",
    "\x1b[22m",
    "\x1b[31m",
    "\x1b[32m",
    "\x1b[90m",
    "\x1b[1m",
    "\x1b[39m",
)
VITEST_FAIL = "\n".join(
    [
        f" {_RED}\u276f{_OFF} src/calc.test.ts {_DIM}({_UNDIM}3 tests {_DIM}|{_UNDIM} "
        f"{_RED}1 failed{_OFF}{_DIM}){_UNDIM}",
        f"   {_RED}\u00d7{_OFF} calc > adds",
        "     \u2192 expected 3 to be 4 // Object.is equality",
        "",
        f"{_DIM} Test Files {_UNDIM} {_BOLD}{_RED}1 failed{_OFF}{_UNDIM}{_GREY} (1){_OFF}",
        f"{_DIM}      Tests {_UNDIM} {_BOLD}{_RED}1 failed{_OFF}{_UNDIM}{_DIM} | {_UNDIM}"
        f"{_BOLD}{_GREEN}2 passed{_OFF}{_UNDIM}{_GREY} (3){_OFF}",
        f"{_DIM}   Start at {_UNDIM} 10:00:00",
        f"{_DIM}   Duration {_UNDIM} 412ms",
        "",
    ]
)
GO_FAIL = """\
--- FAIL: TestAdd (0.00s)
    calc_test.go:9: add(1, 2) = 3, want 4
FAIL
FAIL\texample.com/calc\t0.005s
ok  \texample.com/util\t(cached)
?   \texample.com/cmd\t[no test files]
FAIL
"""
CARGO_FAIL = """\
running 3 tests
test tests::subtracts ... ok
test tests::multiplies ... ok
test tests::adds ... FAILED

failures:

---- tests::adds stdout ----
thread 'tests::adds' panicked at src/lib.rs:12:9:
assertion `left == right` failed
  left: 3
 right: 4

failures:
    tests::adds

test result: FAILED. 2 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s

error: test failed, to rerun pass `--lib`
"""
MOCHA_FAIL = """\


  calc
    \u2714 subtracts
    \u2714 multiplies
    1) adds


  2 passing (12ms)
  1 failing

  1) calc
       adds:

      AssertionError [ERR_ASSERTION]: 3 == 4
      + expected - actual

      -3
      +4

      at Context.<anonymous> (test/calc.test.js:9:12)
"""
RSPEC_FAIL = """\
..F

Failures:

  1) Calc adds
     Failure/Error: expect(add(1, 2)).to eq(4)

       expected: 4
            got: 3

     # ./spec/calc_spec.rb:5:in `block (2 levels) in <top (required)>'

Finished in 0.01 seconds (files took 0.1 seconds to load)
3 examples, 1 failure

Failed examples:

rspec ./spec/calc_spec.rb:4 # Calc adds
"""
# runner -> (command, output, passed, failed)
RUNNERS: dict[str, tuple[str, str, int, int]] = {
    "pytest": ("python -m pytest -q", PYTEST_FAIL, 2, 1),
    "jest": ("npx jest", JEST_FAIL, 4, 1),
    "vitest": ("npx vitest run", VITEST_FAIL, 2, 1),
    "go": ("go test ./...", GO_FAIL, 1, 1),
    "cargo": ("cargo test", CARGO_FAIL, 2, 1),
    "mocha": ("npx mocha", MOCHA_FAIL, 2, 1),
    "rspec": ("bundle exec rspec", RSPEC_FAIL, 2, 1),
}


# --- What a store holds ----------------------------------------------------------------------


def snapshot(db_path: str) -> dict[str, Any]:
    """Everything the hooks and the tools write, without ids and times (comparable)."""
    conn = sqlite3.connect(db_path)
    conn.row_factory = sqlite3.Row

    def rows(query: str) -> list[dict[str, Any]]:
        return [dict(r) for r in conn.execute(query).fetchall()]

    try:
        return {
            "tasks": rows(
                "SELECT task_id, project, status, scope_json,"
                " coalesce(json_extract(counters_json, '$.consecutive_same_error'), 0)"
                " AS consecutive_same_error,"
                " json_extract(counters_json, '$.last_fingerprint') AS last_fingerprint,"
                " coalesce(json_extract(counters_json, '$.verification_attempts'), 0)"
                " AS verification_attempts,"
                " coalesce(json_extract(counters_json, '$.attempts_without_file_change'), 0)"
                " AS attempts_without_file_change,"
                " coalesce(json_extract(counters_json, '$.test_runs_without_improvement'), 0)"
                " AS test_runs_without_improvement,"
                " best_pass_rate FROM tasks ORDER BY task_id"
            ),
            "files": rows("SELECT task_id, path, source FROM modified_files ORDER BY task_id, path"),
            "progress": rows(
                "SELECT task_id, step, outcome, files_json, tests_passed, tests_failed, pass_rate,"
                " improved, note FROM progress_reports ORDER BY report_id"
            ),
            "failures": rows(
                "SELECT task_id, step, signal_type, classified_by, severity, fingerprint, message,"
                " error_type, tool_name, error_code, attempted_action, details_json, occurrence_count"
                " FROM failures ORDER BY seq"
            ),
            "occurrences": rows(
                "SELECT task_id, message, file, line, attempted_action FROM failure_occurrences"
                " ORDER BY occurrence_id"
            ),
            "escalations": rows(
                "SELECT task_id, type, priority, status, response_type, response_content,"
                " acknowledged_at IS NOT NULL AS acknowledged FROM escalations ORDER BY escalation_id"
            ),
            "triggers": [
                sorted(t["type"] for t in json.loads(r["triggers_json"]))
                for r in conn.execute("SELECT triggers_json FROM escalations ORDER BY escalation_id")
            ],
            "actions": [r[0] for r in conn.execute("SELECT kind FROM actions ORDER BY action_id").fetchall()],
        }
    finally:
        conn.close()


def count(db_path: str, table: str) -> int:
    """Rows in ``table`` (a fixed name from the test)."""
    conn = sqlite3.connect(db_path)
    try:
        return int(conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])  # noqa: S608
    finally:
        conn.close()


async def escalation_loop(db: str, tmp: Path, **env: str) -> list[Run]:
    """Three identical failing test runs, an edit (denied), the operator's answer, two edits
    (without the grace for repeated errors, unless ``env`` names a config: ``no_grace``)."""
    env = {"ESCALATION_CONFIG": no_grace(tmp), **env}
    runs = [
        await hook(
            "claude-code",
            bash_failure("python -m pytest -q", PYTEST_FAIL, f"toolu_f{n}"),
            db=db,
            tmp=tmp,
            **env,
        )
        for n in (1, 2, 3)
    ]
    runs.append(
        await hook("claude-code", pre_edit(f"{PROJECT}/src/calc.py", "toolu_e1"), db=db, tmp=tmp, **env)
    )
    answered = await run_cli(
        "--db", db, "escalations", "respond", "1", "--guidance", "Fix the carry.", tmp=tmp
    )
    assert answered.returncode == 0, answered.stderr
    for n in (2, 3):
        edit = pre_edit(f"{PROJECT}/src/calc.py", f"toolu_e{n}")
        runs.append(await hook("claude-code", edit, db=db, tmp=tmp, **env))
    runs.append(
        await hook("claude-code", post_bash("npm run build", "built\n", "toolu_b1"), db=db, tmp=tmp, **env)
    )
    runs.append(await hook("claude-code", b"{not json", db=db, tmp=tmp, **env))
    runs.append(
        await hook("claude-code", pre_tool("Read", {"file_path": f"{PROJECT}/a.py"}), db=db, tmp=tmp, **env)
    )
    return runs
