"""The plugin inside the real Claude Code, set up as docs/install.md says, with nothing else.

In a fresh HOME: the checkout installed lastingly with the pinned ``uv tool install`` (its
``~/.local/bin`` on ``PATH``, as uv says to put it, and no other copy of the script on it),
this repository added as a local marketplace and the plugin installed with the CLI's own
commands. Then a headless run whose model (``scripted_model``) plays a stuck agent: the
plugin's hooks pause it, the plugin's server (its tools deferred behind ``ToolSearch``)
carries the wait and the answer, and the agent acknowledges and fixes the test. Meanwhile
every process of that HOME is watched: at most one relay daemon, and a minute after the host
exits none of ours is left.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from client_envs import cache_root, client_python
from host_support import (
    DENIED,
    FIXED,
    GUIDANCE,
    QUIET,
    RAISED,
    claude_binary,
    fresh_home,
    result_of,
    rows,
    scratch_project,
    waiting_agent,
)
from mcp_server_escalation.settings import HooksConfig
from scripted_model import ToolCall, Turn, serve

pytestmark = pytest.mark.interop

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = "escalation@mcp-server-escalation"  # <plugin>@<marketplace>, .claude-plugin/
TOOLS = "mcp__plugin_escalation_escalation"  # mcp__plugin_<plugin>_<server>
GET = f"{TOOLS}__get_escalation"
ACK = f"{TOOLS}__acknowledge_response"
ALLOWED = f"Bash,Edit,Write,Read,ToolSearch,{TOOLS}"
# What docs/hooks.md promises: the relay daemon leaves a minute after the last hook run (and
# the 2 s between its checks); the few seconds more are the scheduler's on a busy machine.
GONE_WITHIN = HooksConfig().relay_idle_minutes * 60 + 2 + 8


@dataclass
class Watch:
    """The processes of one HOME (their environment names it), sampled until stopped."""

    home: Path
    seen: dict[int, str] = field(default_factory=dict)  # pid -> command line
    stop: threading.Event = field(default_factory=threading.Event)

    def ours(self) -> dict[int, str]:
        """The processes running now whose HOME is this one, but this test's own."""
        marker = f"HOME={self.home}".encode()
        found = {}
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit() or int(proc.name) == os.getpid():
                continue
            try:
                environ = (proc / "environ").read_bytes().split(b"\0")
                words = (proc / "cmdline").read_bytes().decode(errors="replace").split("\0")
            except OSError:
                continue  # gone meanwhile
            if marker in environ:
                found[int(proc.name)] = " ".join(words).strip()
        return found

    def sample(self) -> None:
        while not self.stop.wait(0.2):
            self.seen.update(self.ours())

    def daemons(self) -> list[int]:
        """Every relay daemon seen (``hook daemon``), by pid."""
        return sorted(pid for pid, line in self.seen.items() if " hook daemon" in line)


def _uv_tool_install(home: Path) -> Path:
    """``uv tool install /path/to/checkout`` (docs/install.md) into ``home``; its bin folder."""
    uv = client_python("uv").parent / "uv"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "ESCALATION_", "VIRTUAL_ENV"))},
        "HOME": str(home),
        "UV_CACHE_DIR": str(cache_root() / "uv-cache"),
        "UV_PYTHON": sys.executable,
    }
    done = subprocess.run(
        [str(uv), "tool", "install", str(ROOT)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    bin_folder = home / ".local" / "bin"
    assert (bin_folder / "mcp-server-escalation").exists(), done.stderr
    return bin_folder


def _env(home: Path, bin_folder: Path, model_url: str = "") -> dict[str, str]:
    """A user's environment after the install: uv's bin folder first, node for the CLI, the
    system's folders, and no other copy of the script."""
    path = os.pathsep.join([str(bin_folder), str(Path(str(shutil.which("node"))).parent), "/usr/bin", "/bin"])
    assert shutil.which("mcp-server-escalation", path=path) == str(bin_folder / "mcp-server-escalation")
    runtime = home / "run"
    runtime.mkdir(mode=0o700, exist_ok=True)
    env = {"PATH": path, "HOME": str(home), "LANG": "C.UTF-8", "XDG_RUNTIME_DIR": str(runtime), **QUIET}
    if model_url:
        env["ANTHROPIC_BASE_URL"] = model_url
        env["ANTHROPIC_API_KEY"] = "sk-ant-scripted-model-dummy-key"
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    return env


def _claude(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(claude_binary()), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


@pytest.fixture
def home() -> Iterator[Path]:
    made = fresh_home()
    try:
        yield made
    finally:
        watch = Watch(made)
        for pid in watch.ours():  # only what this HOME started, should an assertion have failed
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(made, ignore_errors=True)


def test_the_plugin_installed_as_documented_pauses_the_loop_carries_the_answer_and_leaves_nothing(
    home: Path, tmp_path: Path
) -> None:
    watch = Watch(home)  # from the install on: the set-up was said to start two relay daemons
    sampler = threading.Thread(target=watch.sample, daemon=True)
    sampler.start()
    bin_folder = _uv_tool_install(home)
    project = scratch_project(tmp_path)
    setup = _env(home, bin_folder)
    _claude(setup, home, "plugin", "marketplace", "add", str(ROOT))
    _claude(setup, home, "plugin", "install", PLUGIN)
    listed = _claude(setup, project, "mcp", "list").stdout
    assert any(
        line.startswith("plugin:escalation:escalation") and "Connected" in line
        for line in listed.splitlines()
    )
    store = home / ".local" / "share" / "mcp-server-escalation" / "escalations.db"  # the default store

    policy = waiting_agent(project, TOOLS)
    with serve(policy) as model:  # type: ignore[arg-type]
        claude = subprocess.Popen(
            [
                str(claude_binary()),
                "-p",
                "Fix the failing test.",
                "--output-format",
                "json",
                "--allowedTools",
                ALLOWED,
            ],
            cwd=project,
            env=_env(home, bin_folder, model.url),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        try:
            waiting = model.wait_until(
                lambda turns: any(_waits(t) for t in turns) or claude.poll() is not None, 120
            )
            assert waiting, "the agent neither waited on get_escalation nor ended"
            assert claude.poll() is None, "the agent ended without waiting on get_escalation"
            time.sleep(0.5)  # the call is under way: the server holds it until the answer
            answered = subprocess.run(
                [
                    str(bin_folder / "mcp-server-escalation"),
                    "escalations",
                    "respond",
                    "1",
                    "--guidance",
                    GUIDANCE,
                ],
                env=setup,
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            assert answered.returncode == 0, answered.stderr
            assert model.wait_until(lambda turns: any(GUIDANCE in t.last_text for t in turns), 30)
        finally:
            code, result, err = result_of(claude)
    exited = time.monotonic()
    assert code == 0, err

    # The plugin's hooks paused the loop: the escalation came from a test run's result.
    raised = next(t for t in model.turns if RAISED in t.last_text)
    assert model.turns.index(raised) > 0
    # Its server's tools are deferred: loaded through ToolSearch, let through during the pause.
    searched = model.called("ToolSearch")
    assert len(searched) == 1
    before_search = model.turns[: model.turns.index(searched[0]) + 1]
    assert not any(GET in t.tools for t in before_search)  # named as deferred, its schema not loaded
    assert GET in before_search[-1].all_text
    after_search = model.turns[model.turns.index(searched[0]) + 1]
    assert DENIED not in after_search.last_text
    assert GET in after_search.tools
    assert len(model.called(ACK)) == 1
    assert (project / "src" / "calc.py").read_text(encoding="utf-8") == FIXED
    assert "1 passed" in model.turns[-1].last_text
    assert result["result"].startswith("Fixed")
    (escalation,) = rows(str(store), "SELECT * FROM escalations")
    assert (escalation["status"], escalation["response_content"]) == ("resolved", GUIDANCE)
    assert escalation["acknowledgement_note"] == "I will make add add."
    assert [t["status"] for t in rows(str(store), "SELECT status FROM tasks")] == ["active"]

    # One relay daemon at most for the store, and a minute after the host exits none of ours.
    while watch.ours() and time.monotonic() - exited < GONE_WITHIN:
        time.sleep(0.5)
    watch.stop.set()
    sampler.join(5)
    left = watch.ours()
    assert len(watch.daemons()) <= 1, {pid: watch.seen[pid] for pid in watch.daemons()}
    assert not left, f"still running {time.monotonic() - exited:.0f} s after the host exited: {left}"
    sys.stdout.write(
        f"processes of the run: {len(watch.seen)}, relay daemons: {len(watch.daemons())}, "
        f"all gone {time.monotonic() - exited:.1f} s after the host exited\n"
    )


def _waits(turn: Turn) -> bool:
    return isinstance(turn.reply, ToolCall) and turn.reply.name == GET
