"""Running the real Claude Code CLI headless against the scripted model, in a scratch project.

The CLI is the pinned npm release (``client_envs.npm_modules``), installed once. Each run
gets a fresh HOME and a scratch git repository whose one test fails (``add`` subtracts), and
reaches nothing but the scripted model on 127.0.0.1: the base URL is loopback and the CLI's
non-essential traffic (telemetry, error reports, auto-update, feature flags) is switched off
with its documented variables.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from client_envs import npm_modules
from hooks_support import SCRIPT, daemons_of, stop_daemons
from scripted_model import Say, Step, ToolCall, Turn

BUGGY = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
# The test command the scripted agent runs: the test's own Python, so pytest is there.
PYTEST = f"{sys.executable} -m pytest -q -p no:cacheprovider tests"
CLAUDE_TIMEOUT = 120  # one headless run; a scenario's runs take a few seconds each
# What keeps the CLI on the machine: every switch its docs give for traffic beyond the API.
QUIET = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_BUG_COMMAND": "1",
    "CLAUDE_CODE_DISABLE_FEATURE_FLAGS": "1",
}
# The tools a headless run may use without asking (root may not bypass permissions).
ALLOWED = "Bash,Edit,Write,Read,ToolSearch,mcp__escalation"
GUIDANCE = "add must add: return a + b"  # the operator's answer in the scenarios
RAISED = "mcp-server-escalation raised escalation"
DENIED = "Blocked by mcp-server-escalation"


def fresh_home() -> Path:
    """A new HOME under /tmp, short enough for the relay's socket path (108 bytes at most)."""
    return Path(tempfile.mkdtemp(prefix="home-", dir="/tmp"))


def claude_binary() -> Path:
    """The pinned Claude Code CLI."""
    return npm_modules("claude-code") / ".bin" / "claude"


def scratch_project(root: Path) -> Path:
    """A git repository with a failing test: ``src/calc.py``'s ``add`` subtracts."""
    project = root / "project"
    (project / "src").mkdir(parents=True)
    (project / "tests").mkdir()
    (project / "src" / "calc.py").write_text(BUGGY, encoding="utf-8")
    (project / "tests" / "test_calc.py").write_text(TEST, encoding="utf-8")
    (project / "pytest.ini").write_text("[pytest]\npythonpath = src\n", encoding="utf-8")
    git = ["git", "-c", "user.name=test", "-c", "user.email=test@example.invalid"]
    subprocess.run([*git, "init", "-q"], cwd=project, check=True)
    subprocess.run([*git, "add", "-A"], cwd=project, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "a failing test"], cwd=project, check=True)
    return project


def our_cli(home: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The installed script run as a user runs it, in a fresh user's environment; it must succeed."""
    ran = subprocess.run(
        [str(SCRIPT), *args],
        cwd=cwd,
        env=base_env(home),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    return ran


def install_hooks(project: Path, db: str, home: Path, *options: str) -> str:
    """``hook install claude-code`` into the project, as a user runs it; what it printed."""
    args = ("hook", "install", "claude-code", "--db", db, "--project-dir", str(project), *options)
    return our_cli(home, *args, cwd=project).stdout


def base_env(home: Path) -> dict[str, str]:
    """A fresh user's environment: this machine's PATH and locale, nothing of ours. Its
    runtime folder (where the hooks' relay daemon listens) is the home's own ``run``."""
    runtime = home / "run"
    runtime.mkdir(mode=0o700, exist_ok=True)
    return {"PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C.UTF-8", "XDG_RUNTIME_DIR": str(runtime)}


def claude_env(home: Path, model_url: str, **extra: str) -> dict[str, str]:
    """What the CLI runs with: the scripted model as its API, a dummy key, no other traffic."""
    return {
        **base_env(home),
        **QUIET,
        "ANTHROPIC_BASE_URL": model_url,
        "ANTHROPIC_API_KEY": "sk-ant-scripted-model-dummy-key",
        # the scratch project's pytest loads none of the plugins of the suite's venv: faster
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        **extra,
    }


def run_claude(
    project: Path, env: dict[str, str], prompt: str, *options: str
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """One headless run (``claude -p``); the process and its JSON result."""
    ran = subprocess.run(
        [str(claude_binary()), "-p", prompt, "--output-format", "json", "--allowedTools", ALLOWED, *options],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=CLAUDE_TIMEOUT,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    lines = [line for line in ran.stdout.splitlines() if line.startswith("{")]
    result = json.loads(lines[-1]) if lines else {}
    return ran, result


def rows(db: str, query: str) -> list[dict[str, Any]]:
    """What ``query`` finds in the store (none when no hook has created it yet)."""
    if not Path(db).exists():
        return []
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        return [dict(row) for row in conn.execute(query)]
    finally:
        conn.close()


def escalations(db: str) -> list[dict[str, Any]]:
    """The store's escalations, oldest first."""
    return rows(db, "SELECT * FROM escalations ORDER BY escalation_id")


def tasks(db: str) -> list[dict[str, Any]]:
    """The store's tasks."""
    return rows(db, "SELECT * FROM tasks ORDER BY task_id")


def failures(db: str) -> list[dict[str, Any]]:
    """The store's failures, in the order recorded."""
    return rows(db, "SELECT * FROM failures ORDER BY seq")


def respond(db: str, home: Path, escalation: int, *how: str) -> subprocess.CompletedProcess[str]:
    """The operator answers with our CLI."""
    return our_cli(home, "escalations", "respond", str(escalation), *how, "--db", db)


@contextmanager
def scratch_setup(
    tmp_path: Path, config: str | None = None, installed: tuple[str, ...] = ()
) -> Iterator[tuple[Path, Path, str]]:
    """(the project, a fresh HOME, the store) with the hooks installed as a user would (with
    ``config`` as the config file's text, if given, and the installer's options
    ``installed``). Afterwards the relay daemon the hooks started (the one process the docs
    say stays) is the only one left of the store, and is stopped."""
    home = fresh_home()
    project = scratch_project(tmp_path)
    db = str(tmp_path / "escalations.db")
    options: tuple[str, ...] = installed
    if config is not None:
        config_file = tmp_path / "config.toml"
        config_file.write_text(config, encoding="utf-8")
        options = (*options, "--config", str(config_file))
    install_hooks(project, db, home, *options)
    try:
        yield project, home, db
    finally:
        others = lingering(db)
        left = daemons_of(db)
        stop_daemons(home / "run" / "mcp-server-escalation")
        shutil.rmtree(home, ignore_errors=True)
        assert len(left) <= 1, f"more than one relay daemon of the store: {left}"
        assert not others, f"still running a minute after the host exited: {others}"


def lingering(db: str, seconds: float = 60) -> list[str]:
    """The command lines of the processes naming the store ``db`` (our server, a hook run)
    other than its relay daemon that are still running ``seconds`` after the host exited."""
    deadline = time.monotonic() + seconds
    while True:
        found = [
            " ".join(words)
            for pid, words in _processes()
            if db in " ".join(words) and pid not in daemons_of(db)
        ]
        if not found or time.monotonic() >= deadline:
            return found
        time.sleep(0.5)


def _processes() -> list[tuple[int, list[str]]]:
    listed = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            words = (proc / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue  # gone meanwhile
        listed.append((int(proc.name), words))
    return listed


def mcp_config(folder: Path, db: str) -> Path:
    """A ``--mcp-config`` file naming our server on the store, by its absolute command."""
    config = folder / "mcp.json"
    server = {"command": str(SCRIPT), "args": ["--db", db]}
    config.write_text(json.dumps({"mcpServers": {"escalation": server}}), encoding="utf-8")
    return config


def start_claude(project: Path, env: dict[str, str], prompt: str, *options: str) -> subprocess.Popen[str]:
    """A headless run in the background, for a test that acts while it runs."""
    return subprocess.Popen(
        [str(claude_binary()), "-p", prompt, "--output-format", "json", "--allowedTools", ALLOWED, *options],
        cwd=project,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )


def result_of(process: subprocess.Popen[str]) -> tuple[int, dict[str, Any], str]:
    """The exit status, the JSON result and stderr of a background run, once it ends."""
    out, err = process.communicate(timeout=CLAUDE_TIMEOUT)
    lines = [line for line in out.splitlines() if line.startswith("{")]
    return process.returncode, json.loads(lines[-1]) if lines else {}, err


# --- Codex --------------------------------------------------------------------------------

# A model the CLI's bundled catalog knows, so that it offers its own tools (apply_patch
# among them); the scripted model answers whatever the request names.
CODEX_MODEL = "gpt-5.5"
# Hooks run without the review a person gives them in Codex's /hooks view; nothing is sandboxed
# (the scratch project is the test's own), and the run asks nobody.
CODEX_FLAGS = ("--dangerously-bypass-hook-trust", "--dangerously-bypass-approvals-and-sandbox", "--json")


def codex_binary() -> Path:
    """The pinned Codex CLI."""
    return npm_modules("codex") / ".bin" / "codex"


def install_codex_hooks(home: Path, db: str, config: str | None = None) -> None:
    """``hook install codex --user`` (``~/.codex/hooks.json``), as a user runs it."""
    options = ["--config", config] if config else []
    our_cli(home, "hook", "install", "codex", "--user", "--db", db, *options)


def codex_config(home: Path, model_url: str) -> None:
    """``~/.codex/config.toml``: the scripted model as a custom provider (the Responses API),
    no update check, no analytics."""
    folder = home / ".codex"
    folder.mkdir(exist_ok=True)
    (folder / "config.toml").write_text(
        f'model = "{CODEX_MODEL}"\n'
        'model_provider = "scripted"\n'
        "check_for_update_on_startup = false\n"
        "[analytics]\nenabled = false\n"
        "[model_providers.scripted]\n"
        'name = "scripted"\n'
        f'base_url = "{model_url}/v1"\n'
        'wire_api = "responses"\n'
        'env_key = "SCRIPTED_MODEL_KEY"\n',
        encoding="utf-8",
    )


def run_codex(
    project: Path, home: Path, *args: str
) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
    """One headless run (``codex exec``); the process and the events it printed."""
    ran = subprocess.run(
        [str(codex_binary()), "exec", *CODEX_FLAGS, *args],
        cwd=project,
        env={
            **base_env(home),
            "SCRIPTED_MODEL_KEY": "scripted-model-dummy-key",
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        },
        capture_output=True,
        text=True,
        timeout=CLAUDE_TIMEOUT,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    events = [json.loads(line) for line in ran.stdout.splitlines() if line.startswith("{")]
    return ran, events


def waiting_agent(project: Path, tools: str) -> Any:
    """A model that reruns the failing test until an escalation is raised, then does as it
    is told: loads the escalation tools (named ``<tools>__<tool>``, as the host names the MCP
    server's) with ToolSearch, waits with get_escalation until the answer comes, acknowledges
    it, fixes the file and runs the test."""
    calc = str(project / "src" / "calc.py")
    get, ack = f"{tools}__get_escalation", f"{tools}__acknowledge_response"

    def policy(turn: Turn, history: list[Turn]) -> Step:
        last = turn.last_text
        called = history[-1].reply if history else None
        previous = called.name if isinstance(called, ToolCall) else None
        if DENIED in last and previous == "ToolSearch":
            return Say("My host refused ToolSearch, so I cannot reach get_escalation to wait.")
        if RAISED in last:
            return ToolCall("ToolSearch", {"query": f"select:{get},{ack}", "max_results": 2})
        if previous == "ToolSearch" or (previous == get and GUIDANCE not in last):
            return ToolCall(get, {"escalation_id": 1, "wait_seconds": 4})
        if previous == get:
            return ToolCall(ack, {"escalation_id": 1, "note": "I will make add add."})
        if previous == ack:
            return ToolCall("Read", {"file_path": calc})
        if previous == "Read":
            return ToolCall("Edit", {"file_path": calc, "old_string": "a - b", "new_string": "a + b"})
        if previous == "Bash" and "passed" in last and "failed" not in last:
            return Say("Fixed: add adds, and the test passes.")
        return ToolCall("Bash", {"command": PYTEST, "description": "Run the tests"})

    return policy
