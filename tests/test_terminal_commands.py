"""``serve`` and ``hook install`` as a person reads them: 80 columns in a pipe, the protocol untouched.

The installed script, its stdout and stderr pipes, ``COLUMNS=80`` (the width of a pipe
anyway). Logs and notes wrap like the operator commands' output; stdout of the stdio server
carries nothing but the protocol, and the settings file ``hook install --dry-run`` shows is
printed exactly as it would be written. A port that is taken is refused before anything
starts, which the command shows in this process as well as in its own.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

from http_support import AGENT_TOKEN, OPERATOR_TOKEN, SCRIPT, start_http, stop_http
from in_process import run_main
from operator_support import flat


@dataclass
class Said:
    """A command's exit code and what it wrote to stderr."""

    returncode: int
    stderr: str


def _fits(text: str) -> list[str]:
    """The lines wider than 80 columns that hold a space (a longer word alone may not be cut)."""
    return [line for line in text.splitlines() if len(line) > 80 and " " in line.strip()]


def test_the_stdio_server_s_log_fits_80_columns_and_its_stdout_stays_empty(tmp_path: Path) -> None:
    db = tmp_path / "a-store-folder-with-a-long-name-to-push-the-path-past-a-line" / "escalations.db"
    db.parent.mkdir()
    done = subprocess.run(
        [SCRIPT, "--db", str(db)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "COLUMNS": "80"},
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout == ""  # the protocol's: a server that got no request says nothing
    assert "applied migration 001" in flat(done.stderr)
    assert f"store {db} open (role agent)" in flat(done.stderr)
    assert _fits(done.stderr) == []


def test_the_http_server_s_log_fits_80_columns(tmp_path: Path) -> None:
    tokens = {"ESCALATION_AGENT_TOKEN": AGENT_TOKEN, "ESCALATION_OPERATOR_TOKEN": OPERATOR_TOKEN}
    process, _port, log = start_http(tmp_path, env={**os.environ, **tokens, "COLUMNS": "80"})
    stop_http(process)
    said = log.read_text()

    assert "HTTP requests are answered for Host" in flat(said)
    assert _fits(said) == []


def test_hook_install_wraps_its_notes_and_shows_the_settings_file_as_written(tmp_path: Path) -> None:
    project = tmp_path / "a-project-folder-with-a-long-name" / "and-a-subfolder-below-it"
    project.mkdir(parents=True)
    store = tmp_path / "a-store-nobody-has-created-yet.db"
    done = subprocess.run(
        [
            SCRIPT,
            "--db",
            str(store),
            "hook",
            "install",
            "claude-code",
            "--dry-run",
            "--project-dir",
            str(project),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "COLUMNS": "80"},
    )

    assert done.returncode == 0, done.stderr
    notes, settings = done.stdout.split("\n{", 1)
    assert flat(notes).startswith(f"note: no store at {store} yet; the first hook run or server start")
    assert _fits(notes) == []
    written = json.loads("{" + settings)  # the file, whole: lines of JSON are never wrapped
    assert "PreToolUse" in written["hooks"]
    assert not (project / ".claude").exists()


async def test_a_taken_port_is_refused_by_name_before_anything_starts(tmp_path: Path) -> None:
    tokens = {"ESCALATION_AGENT_TOKEN": AGENT_TOKEN, "ESCALATION_OPERATOR_TOKEN": OPERATOR_TOKEN}
    store = tmp_path / "esc.db"

    async def run(*command: str) -> Said:
        # In this process (in_process.py): the refusal is under test, not the process.
        code, _, err = await run_main(
            ["--db", str(store), *command], env={**os.environ, **tokens, "COLUMNS": "80"}
        )
        return Said(code, err.decode())

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        served = await run("serve", "--transport", "http", "--port", port)
        assert not store.exists()  # refused before the server opened (and created) its store
        assert (await run("db", "init")).returncode == 0  # the console opens only a store that exists
        console = await run("console", "--port", port)

    for done in (served, console):
        assert done.returncode == 1
        assert done.stderr.startswith(f"error: port {port} on 127.0.0.1 is taken"), done.stderr
        assert "choose another port with --port" in flat(done.stderr)
        assert "Errno" not in done.stderr
        assert _fits(done.stderr) == []
