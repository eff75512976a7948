"""The hook relay: a running server of the store answers hook runs, exactly as the hook would.

The server is the real console script serving stdio (as a host runs it for the session);
the hooks are the real console script with recorded payloads. ``ESCALATION_HOOK_RELAY=require``
makes a hook that the server did not answer say so and give no decision, so a test that
passes with it really went through the relay.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import anyio
import pytest
from mcp import Client

from bounds import HUNG_AFTER
from conftest import make_settings
from hooks_support import (
    PYTEST_FAIL,
    SCRIPT,
    bash_failure,
    environment,
    escalation_loop,
    every_repeat,
    hook,
    snapshot,
)
from mcp_server_escalation.adapters.composition import server as composition_server
from mcp_server_escalation.adapters.composition.server import build_server
from mcp_server_escalation.hooks import relay_server
from mcp_server_escalation.hooks.relay import parse_argv, socket_dir, socket_path
from mcp_server_escalation.services.runtime import Runtime, open_runtime
from mcp_server_escalation.settings import Settings

REQUIRE = {"ESCALATION_HOOK_RELAY": "require"}
NOT_ANSWERED = "no relay answered"


@contextmanager
def serving(db: str, tmp: Path, command: tuple[str, ...] = ("serve",), **env: str) -> Iterator[list[str]]:
    """``mcp-server-escalation --db DB serve`` (or ``command``) while its relay socket is up.

    Yields a list that holds the process's stderr once it has exited.
    """
    full_env = environment(tmp, **env)
    path = socket_path(db, full_env, str(Path.cwd()))
    assert path is not None
    server = subprocess.Popen(
        [str(SCRIPT), "--db", db, *command],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=full_env,
        text=True,
    )
    stderr: list[str] = []
    try:
        for _ in range(400):
            if relay_server._is_live(path) or server.poll() is not None:
                break
            time.sleep(0.05)
        assert relay_server._is_live(path), "the server never opened its relay socket"
        yield stderr
    finally:
        assert server.stdin is not None
        server.stdin.close()  # the end of a stdio session; ``hook relay`` runs until stopped
        if command != ("serve",):
            server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        assert server.stderr is not None
        stderr.append(server.stderr.read())
        server.stderr.close()


async def test_a_relayed_loop_answers_and_records_exactly_like_the_hook_alone(tmp_path: Path) -> None:
    alone_db, relayed_db = str(tmp_path / "alone.db"), str(tmp_path / "relayed.db")
    alone = await escalation_loop(alone_db, tmp_path, ESCALATION_HOOK_RELAY="off")
    with serving(relayed_db, tmp_path, ESCALATION_CONFIG=every_repeat(tmp_path)):  # the loop's config
        relayed = await escalation_loop(relayed_db, tmp_path, **REQUIRE)
    assert [(r.returncode, r.stdout, r.stderr) for r in relayed] == [
        (r.returncode, r.stdout, r.stderr) for r in alone
    ]
    # The answers are the real ones: the escalation's context, the pause, the delivered answer.
    assert "escalation 1 (repeated error)" in relayed[2].json()["hookSpecificOutput"]["additionalContext"]
    assert "escalation 1 (repeated error)" in relayed[3].deny_reason
    assert "Fix the carry." in relayed[4].deny_reason
    assert relayed[5].stdout == ""  # allowed after the acknowledgement
    assert "malformed JSON" in relayed[7].stderr
    assert snapshot(relayed_db) == snapshot(alone_db)
    assert snapshot(relayed_db)["escalations"][0]["acknowledged"] == 1


async def test_without_a_server_the_hook_does_the_work_itself(tmp_path: Path) -> None:
    db = str(tmp_path / "none.db")
    failure = bash_failure("python -m pytest -q", PYTEST_FAIL, "toolu_x1")
    required = await hook("claude-code", failure, db=db, tmp=tmp_path, **REQUIRE)
    assert (required.returncode, required.stdout) == (0, "")
    assert NOT_ANSWERED in required.stderr
    assert not Path(db).exists()  # require: nothing done, nothing stored
    itself = await hook("claude-code", failure, db=db, tmp=tmp_path)
    assert (itself.returncode, itself.stdout, itself.stderr) == (0, "", "")
    assert len(snapshot(db)["failures"]) == 1


async def test_a_socket_left_by_a_killed_server_is_ignored_and_then_replaced(tmp_path: Path) -> None:
    db = str(tmp_path / "stale.db")
    path = socket_path(db, environment(tmp_path), str(Path.cwd()))
    assert path is not None
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(path)  # bound, never listening, then abandoned: what a killed process leaves
    stale.close()
    try:
        failure = bash_failure("python -m pytest -q", PYTEST_FAIL, "toolu_s1")
        itself = await hook("claude-code", failure, db=db, tmp=tmp_path)
        assert (itself.returncode, itself.stderr) == (0, "")
        assert len(snapshot(db)["occurrences"]) == 1
        with serving(db, tmp_path):  # a new server replaces the stale socket
            again = bash_failure("python -m pytest -q", PYTEST_FAIL, "toolu_s2")
            relayed = await hook("claude-code", again, db=db, tmp=tmp_path, **REQUIRE)
            assert (relayed.returncode, relayed.stderr) == (0, "")
        assert len(snapshot(db)["occurrences"]) == 2
    finally:
        Path(path).unlink(missing_ok=True)


async def test_a_hook_with_other_thresholds_is_not_answered_by_the_server(tmp_path: Path) -> None:
    db = str(tmp_path / "config.db")
    strict = tmp_path / "strict.toml"
    strict.write_text(
        "[thresholds]\nsame_error_repeated = 1\n[hooks]\nrepeat_grace_calls = 0\n", encoding="utf-8"
    )
    failure = bash_failure("python -m pytest -q", PYTEST_FAIL, "toolu_c1")
    with serving(db, tmp_path):  # the server runs with the default thresholds
        declined = await hook(
            "claude-code", failure, db=db, tmp=tmp_path, ESCALATION_CONFIG=str(strict), **REQUIRE
        )
        assert NOT_ANSWERED in declined.stderr
        itself = await hook("claude-code", failure, db=db, tmp=tmp_path, ESCALATION_CONFIG=str(strict))
    # Decided by the hook's own config: one failure is enough to escalate.
    assert "escalation 1 (repeated error)" in itself.json()["hookSpecificOutput"]["additionalContext"]


async def test_a_relative_store_path_is_the_hooks_not_the_servers(tmp_path: Path) -> None:
    db = tmp_path / "work" / "rel.db"
    db.parent.mkdir()
    with serving(str(db), tmp_path):
        done = await anyio.run_process(
            [str(SCRIPT), "--db", "rel.db", "hook", "claude-code"],
            input=json.dumps(bash_failure("python -m pytest -q", PYTEST_FAIL, "toolu_r1")).encode(),
            cwd=db.parent,
            env=environment(tmp_path, **REQUIRE),
            check=False,
        )
    assert (done.returncode, done.stderr) == (0, b"")
    assert len(snapshot(str(db))["failures"]) == 1


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["hook", "claude-code"], ("claude-code", {})),
        (["--db", "x.db", "hook", "cursor"], ("cursor", {"--db": "x.db"})),
        (
            ["hook", "claude-code", "--config=c.toml", "--prompts", "p"],
            ("claude-code", {"--config": "c.toml", "--prompts": "p"}),
        ),
        (["hook", "install", "claude-code"], None),
        (["hook", "relay"], None),
        (["hook", "claude-code", "--help"], None),
        (["hook", "claude-code", "--db"], None),
        (["serve"], None),
        (["hook", "claude-code", "extra"], None),
    ],
)
def test_only_a_plain_hook_run_is_forwarded(argv: list[str], expected: object) -> None:
    assert parse_argv(argv) == expected


def test_a_socket_folder_others_can_write_to_is_never_used(tmp_path: Path) -> None:
    runtime = tmp_path / "run"
    (runtime / "mcp-server-escalation").mkdir(parents=True)
    (runtime / "mcp-server-escalation").chmod(0o777)
    assert socket_dir({"XDG_RUNTIME_DIR": str(runtime)}) is None
    (runtime / "mcp-server-escalation").chmod(0o700)
    assert socket_dir({"XDG_RUNTIME_DIR": str(runtime)}) == str(runtime / "mcp-server-escalation")
    assert socket_path(":memory:", {"XDG_RUNTIME_DIR": str(runtime)}, "/") is None


async def test_a_second_server_takes_over_when_the_first_goes_away(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(relay_server, "RETRY_SECONDS", 0.05)
    runtime_dir = tempfile.mkdtemp(prefix="relay-")  # short: a socket path has ~100 bytes
    monkeypatch.setenv("XDG_RUNTIME_DIR", runtime_dir)
    settings = Settings(db_path=str(tmp_path / "two.db"))
    paths: list[str | None] = []

    async def hold(rt: Runtime, leave: anyio.Event, left: anyio.Event) -> None:
        async with relay_server.relay(rt) as path:
            paths.append(path)
            await leave.wait()
        left.set()

    async def live(path: str) -> None:
        with anyio.fail_after(HUNG_AFTER):
            while not relay_server._is_live(path):
                await anyio.sleep(0.02)

    async with open_runtime(settings) as first_rt, open_runtime(settings) as second_rt:
        leave_first, first_left, leave_second, second_left = (anyio.Event() for _ in range(4))
        async with anyio.create_task_group() as tg:
            tg.start_soon(hold, first_rt, leave_first, first_left)
            with anyio.fail_after(HUNG_AFTER):
                while not paths:
                    await anyio.sleep(0.02)
            path = paths[0]
            assert path is not None
            await live(path)
            tg.start_soon(hold, second_rt, leave_second, second_left)
            await anyio.sleep(0.2)  # the second retries while the first serves, never clobbers it
            assert relay_server._is_live(path)
            leave_first.set()
            await first_left.wait()  # its socket is closed and removed by now
            await live(path)  # so whoever serves it now is the second
            leave_second.set()
            await second_left.wait()
        assert not Path(path).exists()  # the last server out removes its socket
    shutil.rmtree(runtime_dir)


async def test_hook_relay_serves_a_store_without_an_mcp_server(tmp_path: Path) -> None:
    db = str(tmp_path / "hooks-only.db")
    with serving(db, tmp_path, command=("hook", "relay")) as stderr:
        failure = bash_failure("python -m pytest -q", PYTEST_FAIL, "toolu_h1")
        run = await hook("claude-code", failure, db=db, tmp=tmp_path, **REQUIRE)
        assert (run.returncode, run.stderr) == (0, "")
        assert len(snapshot(db)["failures"]) == 1
    assert f"hook relay for {db}" in stderr[0]
    socket_file = socket_path(db, environment(tmp_path), str(Path.cwd()))
    assert socket_file is not None
    assert not Path(socket_file).exists()  # stopped by SIGTERM, it removed its socket


def _send_raw(path: str, data: bytes, *, close_early: bool = False) -> bytes:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(10)
        conn.connect(path)
        conn.sendall(data)
        if close_early:
            return b""  # gone before the request ends: the server's read breaks
        conn.shutdown(socket.SHUT_WR)
        return b"".join(iter(lambda: conn.recv(65536), b""))


async def test_hostile_relay_clients_never_take_the_server_down(tmp_path: Path) -> None:
    db = str(tmp_path / "hostile.db")
    with serving(db, tmp_path):
        path = socket_path(db, environment(tmp_path), str(Path.cwd()))
        assert path is not None
        garbage = [
            b"",
            b"not json",
            b"[1, 2, 3]",
            b"[" * 100_000 + b"]" * 100_000,  # deeper than the JSON parser recurses
            json.dumps({"protocol": 1}).encode(),
            json.dumps({"protocol": 1, "host": "claude-code", "options": {"--evil": "x"}, "env": {},
                        "cwd": "/", "stdin": "{}"}).encode(),
            json.dumps({"protocol": 99, "host": "claude-code"}).encode(),
        ]  # fmt: skip
        for data in garbage:
            reply = await anyio.to_thread.run_sync(_send_raw, path, data)
            assert b"stdout" not in reply  # declined or dropped, never answered as a hook
        await anyio.to_thread.run_sync(lambda: _send_raw(path, b'{"protocol": 1, "ho', close_early=True))
        # Still serving: a real hook run is answered by the relay.
        failure = bash_failure("python -m pytest -q", PYTEST_FAIL, "toolu_after")
        run = await hook("claude-code", failure, db=db, tmp=tmp_path, **REQUIRE)
        assert (run.returncode, run.stderr) == (0, "")
        assert len(snapshot(db)["failures"]) == 1


async def test_a_failing_relay_never_ends_the_mcp_session(
    db_path: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    @asynccontextmanager
    async def broken(_rt: Runtime) -> AsyncIterator[str | None]:
        raise OSError("the socket folder vanished")
        yield None  # pragma: no cover

    monkeypatch.setattr(composition_server, "RELAY_START_SECONDS", 0.0)
    monkeypatch.setattr(relay_server, "relay", broken)
    server = build_server(make_settings(db_path), hook_relay=True)
    async with Client(server) as client:
        with anyio.fail_after(HUNG_AFTER):  # the relay starts next to the session, and fails
            while "hook relay stopped" not in caplog.text:
                await anyio.sleep(0.02)
        started = await client.call_tool("start_task", {"title": "still here", "task_id": "alive"})
    assert not started.is_error
    assert "hook relay stopped" in caplog.text
