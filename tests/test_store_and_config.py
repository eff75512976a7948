"""Which store and which config a process uses: never a silent mismatch.

A mistyped store used to give an empty one and "no pending escalations" while the agents
waited on another; a server a host launched without ``ESCALATION_CONFIG`` notified nobody;
``hook install`` dropped ``--db`` and wrote a bare script name that hosts may not find.
Every test runs the installed console script with a home of its own (``HOME`` set, no
``XDG_*`` or ``ESCALATION_*`` variable inherited), so the defaults land in a temp folder.
"""

from __future__ import annotations

import json
import os
import shlex
import sqlite3
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from in_process import run_main
from mcp_server_escalation.hooks.install import detached
from operator_support import eventually, flat, receiver

SCRIPT = Path(sys.executable).parent / "mcp-server-escalation"
INHERITED_CHOICES = (
    "ESCALATION_DB",
    "ESCALATION_CONFIG",
    "ESCALATION_PROMPTS",
    "ESCALATION_TASK",
    "XDG_DATA_HOME",
    "XDG_CONFIG_HOME",
    "CLAUDE_PROJECT_DIR",
    "CURSOR_PROJECT_DIR",
)


@dataclass
class Run:
    """One finished process."""

    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """The user's home for the processes of one test."""
    path = tmp_path / "home"
    path.mkdir()
    return path


def environment(home: Path, **extra: str) -> dict[str, str]:
    """This process's environment without any store or config choice, with ``home`` as HOME."""
    env = {k: v for k, v in os.environ.items() if k not in INHERITED_CHOICES}
    env["HOME"] = str(home)
    env.update(extra)
    return env


async def run(*args: str, home: Path, cwd: Path | None = None, stdin: bytes = b"", **extra: str) -> Run:
    """The console script's ``main`` with ``args``, in this process (``in_process.py``)."""
    code, out, err = await run_main(list(args), stdin=stdin, env=environment(home, **extra), cwd=cwd)
    return Run(code, out.decode(), err.decode())


async def run_process(
    *args: str, home: Path, cwd: Path | None = None, stdin: bytes = b"", **extra: str
) -> Run:
    """The installed console script with ``args``, as a process; bounded, never hangs a test."""
    with anyio.fail_after(60):
        done = await anyio.run_process(
            [str(SCRIPT), *args], input=stdin, check=False, env=environment(home, **extra), cwd=cwd
        )
    return Run(done.returncode, done.stdout.decode(), done.stderr.decode())


def default_store(home: Path) -> Path:
    return home / ".local" / "share" / "mcp-server-escalation" / "escalations.db"


def default_config(home: Path) -> Path:
    return home / ".config" / "mcp-server-escalation" / "config.toml"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


OPERATOR_COMMANDS = [
    ["escalations", "list"],
    ["escalations", "show", "1"],
    ["escalations", "respond", "1", "--guidance", "Use int()"],
    ["escalations", "watch", "--once", "--timeout", "1"],
    ["tasks", "list"],
    ["tasks", "show", "some-task"],
    ["stats"],
    ["db", "migrate"],
    ["db", "backup", "copy.db"],
]


@pytest.mark.parametrize("command", OPERATOR_COMMANDS, ids=lambda c: " ".join(c[:2]))
async def test_an_operator_command_on_a_mistyped_store_fails_naming_it_and_creates_nothing(
    tmp_path: Path, home: Path, command: list[str]
) -> None:
    typo = tmp_path / "stroes" / "agents" / "escalations.db"
    done = await run("--db", str(typo), *command, home=home, cwd=tmp_path)

    assert done.returncode == 1
    assert done.stdout == ""
    assert flat(done.stderr).startswith(f"error: no store at {typo} (given by --db); nothing was created.")
    assert f"mcp-server-escalation --db {typo} db init" in flat(done.stderr)
    assert done.stderr.count("error:") == 1
    assert not (tmp_path / "stroes").exists()
    assert not (tmp_path / "copy.db").exists()


async def test_the_refusal_names_where_the_store_was_taken_from(tmp_path: Path, home: Path) -> None:
    typo = tmp_path / "typo.db"
    by_env = await run("escalations", "list", home=home, ESCALATION_DB=str(typo))
    by_default = await run("escalations", "list", home=home)

    assert by_env.returncode == by_default.returncode == 1
    assert f"no store at {typo} (given by ESCALATION_DB)" in flat(by_env.stderr)
    assert f"no store at {default_store(home)} (the per-user default" in flat(by_default.stderr)
    assert "create the store: mcp-server-escalation db init" in flat(by_default.stderr)
    assert not typo.exists()
    assert not (home / ".local").exists()


async def test_db_init_creates_a_store_the_operator_commands_then_use(tmp_path: Path, home: Path) -> None:
    store = tmp_path / "new" / "folder" / "escalations.db"
    created = await run("db", "init", "--db", str(store), home=home)
    listed = await run("--db", str(store), "escalations", "list", home=home)
    again = await run("--db", str(store), "db", "init", home=home)
    by_default = await run("db", "init", home=home)
    default_listed = await run("tasks", "list", home=home)

    assert created.returncode == 0, created.stderr
    assert created.stdout.startswith(f"{store}: created, schema version ")
    assert store.is_file()
    assert (listed.returncode, listed.stdout) == (0, "no escalations waiting\n")
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith(f"{store}: a store already, schema version ")
    assert by_default.returncode == 0, by_default.stderr
    assert default_store(home).is_file()
    assert (default_listed.returncode, default_listed.stdout) == (0, "no tasks\n")


async def test_db_path_prints_the_path_and_fails_while_no_store_is_there(tmp_path: Path, home: Path) -> None:
    store = tmp_path / "later.db"
    before = await run("db", "path", "--db", str(store), home=home)
    await run("db", "init", "--db", str(store), home=home)
    after = await run("db", "path", "--db", str(store), home=home)

    assert (before.returncode, before.stdout) == (1, f"{store}\n")
    assert "no store at" in before.stderr
    assert (after.returncode, after.stdout, after.stderr) == (0, f"{store}\n", "")


async def test_a_server_launched_by_a_host_creates_its_store_as_before(tmp_path: Path, home: Path) -> None:
    store = tmp_path / "agents" / "escalations.db"
    params = StdioServerParameters(command=str(SCRIPT), args=["--db", str(store)], env={"HOME": str(home)})
    with anyio.fail_after(30):
        async with Client(params, mode="legacy") as client:  # type: ignore[arg-type]
            await client.list_tools()
    listed = await run("--db", str(store), "tasks", "list", home=home)

    assert store.is_file()
    assert (listed.returncode, listed.stdout) == (0, "no tasks\n")


async def test_a_server_launched_without_config_variables_notifies_by_the_per_user_config(
    tmp_path: Path, home: Path
) -> None:
    store = str(tmp_path / "escalations.db")
    with receiver() as hook:
        write(default_config(home), f'[notify]\nwebhook_url = "{hook.url}"\n')
        # As a host launches it: its own minimal environment, no ESCALATION_CONFIG.
        params = StdioServerParameters(command=str(SCRIPT), args=["--db", store], env={"HOME": str(home)})
        with anyio.fail_after(60):
            async with Client(params, mode="legacy") as client:  # type: ignore[arg-type]
                await client.call_tool("start_task", {"title": "Wire the API", "task_id": "cfg-1"})
                raised = await client.call_tool(
                    "raise_escalation", {"task_id": "cfg-1", "reason": "Which auth scheme?"}
                )
                escalation = raised.structured_content["escalation"]  # type: ignore[index]
                await eventually(hook.delivered, 60, "the per-user config's webhook got the escalation")

    assert [r.body["escalation_id"] for r in hook.delivered()] == [escalation["escalation_id"]]


async def test_the_cli_and_a_hook_read_the_per_user_config_unless_one_is_given(
    tmp_path: Path, home: Path
) -> None:
    store = tmp_path / "escalations.db"
    await run("db", "init", "--db", str(store), home=home)
    broken = write(default_config(home), "[notify]\nwebhok_url = 'https://chat.example/hook'\n")
    given = write(tmp_path / "given.toml", "[guidance]\nk = 3\n")
    event = {
        "session_id": "s1",
        "cwd": str(tmp_path),
        "hook_event_name": "PreToolUse",
        "tool_name": "Edit",
        "tool_input": {"file_path": str(tmp_path / "a.py"), "old_string": "1", "new_string": "2"},
        "tool_use_id": "toolu_cfg",
    }

    cli = await run("--db", str(store), "escalations", "list", home=home)
    hook = await run(
        "--db", str(store), "hook", "claude-code", home=home, stdin=json.dumps(event).encode(),
        ESCALATION_HOOK_RELAY="off",
    )  # fmt: skip
    explicit = await run("--db", str(store), "--config", str(given), "escalations", "list", home=home)

    assert cli.returncode == 1
    assert flat(cli.stderr).startswith(f"error: config {broken}: ")
    assert "webhok_url" in cli.stderr
    # A hook never blocks its host: no decision, and the reason on stderr.
    assert (hook.returncode, hook.stdout) == (0, "")
    assert str(broken) in hook.stderr
    assert (explicit.returncode, explicit.stdout) == (0, "no escalations waiting\n")


@pytest.mark.parametrize("via", ["flag", "environment"])
async def test_a_config_path_given_but_missing_is_an_error_naming_it(
    tmp_path: Path, home: Path, via: str
) -> None:
    store = tmp_path / "escalations.db"
    await run("db", "init", "--db", str(store), home=home)
    write(default_config(home), "")  # a usable default must not stand in for a mistyped path
    missing = tmp_path / "notfy.toml"
    given: dict[str, Any] = {"ESCALATION_CONFIG": str(missing)} if via == "environment" else {}
    options = ["--config", str(missing)] if via == "flag" else []
    cli = await run("--db", str(store), *options, "tasks", "list", home=home, **given)
    # The server as a host starts it: a process, whose status and stderr the host reads.
    server = await run_process("--db", str(store), *options, home=home, **given)

    origin = "--config" if via == "flag" else "ESCALATION_CONFIG"
    for done in (cli, server):
        assert done.returncode == 1
        assert done.stdout == ""
        assert flat(done.stderr) == f"error: config {missing}: no such file (given by {origin})"


def hook_commands(settings_file: Path) -> set[str]:
    """Every command line in a Claude Code settings file."""
    hooks = json.loads(settings_file.read_text(encoding="utf-8"))["hooks"]
    return {h["command"] for groups in hooks.values() for g in groups for h in g["hooks"]}


async def test_hook_install_writes_the_absolute_script_with_the_store_and_config_it_was_given(
    tmp_path: Path, home: Path
) -> None:
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    write(tmp_path / "team.toml", "[guidance]\nk = 4\n")
    installed = await run(
        "hook", "install", "claude-code", "--project-dir", str(project),
        "--db", "stores/agents.db", "--config", "team.toml", home=home, cwd=tmp_path,
    )  # fmt: skip
    store = tmp_path / "stores" / "agents.db"
    line = (
        f"{shlex.quote(str(SCRIPT))} --db {shlex.quote(str(store))} "
        f"--config {shlex.quote(str(tmp_path / 'team.toml'))} hook claude-code"
    )

    assert installed.returncode == 0, installed.stderr
    # StopFailure's line detached from the host's process group (hooks/install.py)
    assert hook_commands(project / ".claude" / "settings.json") == {line, detached(line)}
    assert f"note: no store at {store} yet" in flat(installed.stdout)

    # The host runs the line through a shell of its own: no virtualenv on PATH, no variables.
    edit = {
        "session_id": "s1",
        "cwd": str(project),
        "hook_event_name": "PostToolUse",
        "tool_name": "Write",
        "tool_input": {"file_path": str(project / "src" / "app.py"), "content": "x = 1\n"},
        "tool_response": {"filePath": str(project / "src" / "app.py"), "success": True},
        "tool_use_id": "toolu_install",
    }
    host_env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "ESCALATION_HOOK_RELAY": "off"}
    with anyio.fail_after(60):
        ran = await anyio.run_process(
            ["/bin/sh", "-c", line], input=json.dumps(edit).encode(), env=host_env, cwd=project, check=False
        )
    assert (ran.returncode, ran.stderr) == (0, b"")
    with sqlite3.connect(store) as conn:
        tasks = conn.execute("SELECT task_id FROM tasks").fetchall()
    assert tasks == [("claude-code-s1",)]


async def test_installing_again_with_another_store_replaces_our_lines_and_keeps_the_rest(
    tmp_path: Path, home: Path
) -> None:
    project = tmp_path / "project"
    settings = write(
        project / ".claude" / "settings.json",
        json.dumps({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "./notify.sh"}]}]}}),
    )
    first = await run("hook", "install", "claude-code", "--project-dir", str(project), home=home)
    second = await run(
        "hook", "install", "claude-code", "--project-dir", str(project), "--db", str(tmp_path / "b.db"),
        home=home,
    )  # fmt: skip
    third = await run(
        "hook", "install", "claude-code", "--project-dir", str(project), home=home,
        ESCALATION_DB=str(tmp_path / "b.db"),
    )  # fmt: skip

    assert first.returncode == second.returncode == third.returncode == 0
    assert first.stdout.count(" added ") == 7  # every Claude Code event we install
    assert second.stdout.count(" replaced ") == 7
    assert " added " not in second.stdout
    assert "already installed" in third.stdout  # the same store, chosen by the variable
    ours = f"{shlex.quote(str(SCRIPT))} --db {shlex.quote(str(tmp_path / 'b.db'))} hook claude-code"
    assert hook_commands(settings) == {"./notify.sh", ours, detached(ours)}


async def test_a_command_that_does_not_run_here_is_refused_and_nothing_is_written(
    tmp_path: Path, home: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    done = await run(
        "hook", "install", "cursor", "--project-dir", str(project), "--command", "mcp-server-escalaton",
        home=home,
    )  # fmt: skip

    assert done.returncode == 1
    assert "mcp-server-escalaton" in flat(done.stderr)
    assert "nothing was changed" in flat(done.stderr)
    assert not (project / ".cursor").exists()
