"""The relay daemon: with no MCP server, the first hook run starts one and the next runs reach it.

Real processes throughout: the installed console script as the hook (``ESCALATION_HOOK_RELAY=on``,
since the test environment starts no daemon otherwise), the daemon it detaches, and the
store's lock file, which tells whether a daemon runs exactly as the hooks ask it. Every
daemon a test starts is stopped after it (``stop_daemons``), and the session stops any left.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from bounds import HUNG_AFTER
from hooks_support import (
    PYTEST_FAIL,
    SCRIPT,
    bash_failure,
    daemon_pid,
    daemon_running,
    daemons_of,
    environment,
    escalation_loop,
    every_repeat,
    hook,
    post_bash,
    run_script,
    snapshot,
    stop_daemons,
    wait_for,
)
from mcp_server_escalation.hooks import relay_server
from mcp_server_escalation.hooks.relay import socket_path
from mcp_server_escalation.hooks.relay_spawn import (
    DEFAULT_IDLE_MINUTES,
    idle_minutes,
    lock_path,
    log_path,
)
from mcp_server_escalation.models.hook_config import HooksConfig
from test_hooks_relay import REQUIRE, serving

ON = {"ESCALATION_HOOK_RELAY": "on"}


@pytest.fixture(autouse=True)
def no_daemon_left(private_relay_sockets: Path) -> Iterator[None]:
    yield
    stop_daemons(private_relay_sockets)


def _files(db: str, tmp: Path) -> tuple[Path, Path]:
    """The store's socket and lock file."""
    path = socket_path(db, environment(tmp), str(Path.cwd()))
    assert path is not None
    return Path(path), Path(lock_path(path))


def _failure(n: int) -> dict[str, object]:
    return bash_failure("python -m pytest -q", PYTEST_FAIL, f"toolu_d{n}")


async def _started_daemon(db: str, tmp: Path, **env: str) -> tuple[Path, Path]:
    """A first hook run on ``db`` and the daemon it started (and waited for), listening."""
    sock, lock = _files(db, tmp)
    env = {"ESCALATION_CONFIG": every_repeat(tmp), **env}  # a pause from the first calls
    first = await hook("claude-code", _failure(0), db=db, tmp=tmp, **ON, **env)
    assert (first.returncode, first.stdout, first.stderr) == (0, "", "")
    assert daemon_running(lock)
    assert relay_server._is_live(str(sock))  # the first run waited for it to listen
    return sock, lock


async def test_a_hook_run_with_no_server_starts_a_daemon_that_answers_the_next_run(tmp_path: Path) -> None:
    db = str(tmp_path / "daemon.db")
    _sock, lock = await _started_daemon(db, tmp_path)
    assert len(snapshot(db)["occurrences"]) == 1  # the first run's event, recorded once
    graceless = {"ESCALATION_CONFIG": every_repeat(tmp_path)}  # the daemon's config
    second = await hook("claude-code", _failure(1), db=db, tmp=tmp_path, **REQUIRE, **graceless)
    assert (second.returncode, second.stderr) == (0, "")  # answered by the daemon:
    assert "Warning: the same error 2 times" in second.json()["hookSpecificOutput"]["additionalContext"]
    assert len(snapshot(db)["occurrences"]) == 2
    assert daemons_of(db) == [daemon_pid(lock)]
    third = await hook("claude-code", _failure(2), db=db, tmp=tmp_path, **ON, **graceless)
    assert "escalation 1 (repeated error)" in third.json()["hookSpecificOutput"]["additionalContext"]
    assert daemons_of(db) == [daemon_pid(lock)]  # a run the daemon answered starts no other


async def test_runs_through_a_daemon_answer_and_record_exactly_like_the_hook_alone(tmp_path: Path) -> None:
    alone_db, daemon_db = str(tmp_path / "alone.db"), str(tmp_path / "daemon.db")
    build = post_bash("npm run build", "built\n", "toolu_start")
    started_alone = await hook("claude-code", build, db=alone_db, tmp=tmp_path, ESCALATION_HOOK_RELAY="off")
    alone = [started_alone, *await escalation_loop(alone_db, tmp_path, ESCALATION_HOOK_RELAY="off")]
    sock, _lock = _files(daemon_db, tmp_path)
    # The daemon takes the config of the run that starts it: the loop's (escalation_loop).
    started = await hook(
        "claude-code", build, db=daemon_db, tmp=tmp_path, ESCALATION_CONFIG=every_repeat(tmp_path), **ON
    )
    assert relay_server._is_live(str(sock))
    through_daemon = [started, *await escalation_loop(daemon_db, tmp_path, **REQUIRE)]
    assert [(r.returncode, r.stdout, r.stderr) for r in through_daemon] == [
        (r.returncode, r.stdout, r.stderr) for r in alone
    ]
    assert "Fix the carry." in through_daemon[5].deny_reason
    assert snapshot(daemon_db) == snapshot(alone_db)


async def test_the_daemon_gets_the_hooks_options_as_given_even_a_store_named_like_an_option(
    tmp_path: Path,
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    with anyio.fail_after(HUNG_AFTER):
        done = await anyio.run_process(
            [str(SCRIPT), "--db=-odd.db", "hook", "claude-code"],
            input=json.dumps(_failure(0)).encode(),
            cwd=work,
            env=environment(tmp_path, **ON),
            check=False,
        )
    assert (done.returncode, done.stderr) == (0, b"")
    path = socket_path("-odd.db", environment(tmp_path), str(work))
    assert path is not None
    assert relay_server._is_live(path)  # the daemon of work/-odd.db, relative to the hook's folder
    assert len(snapshot(str(work / "-odd.db"))["occurrences"]) == 1


async def test_the_daemon_exits_after_its_idle_minutes_and_removes_its_socket(tmp_path: Path) -> None:
    config = tmp_path / "idle.toml"
    config.write_text("[hooks]\nrelay_idle_minutes = 0.01\n", encoding="utf-8")  # 0.6 s
    db = str(tmp_path / "idle.db")
    sock, lock = await _started_daemon(db, tmp_path, ESCALATION_CONFIG=str(config))
    await wait_for(lambda: not daemon_running(lock))
    assert not sock.exists()
    assert "ends: no hook run for 0.01 minutes" in Path(log_path(str(sock))).read_text(encoding="utf-8")


async def test_with_the_default_config_the_daemon_is_gone_a_minute_after_the_last_hook_run(
    tmp_path: Path,
) -> None:
    # It stayed 10 minutes after its host had exited; a minute is what the docs name.
    db = str(tmp_path / "default-idle.db")
    sock, lock = await _started_daemon(db, tmp_path)
    last_run = time.monotonic()
    await wait_for(lambda: not daemon_running(lock), seconds=60 + 15)
    assert time.monotonic() - last_run >= 60 - 1  # idle for its minute, not less
    assert not sock.exists()
    assert "ends: no hook run for 1 minutes" in Path(log_path(str(sock))).read_text(encoding="utf-8")


async def test_two_hook_runs_at_once_leave_exactly_one_daemon(tmp_path: Path) -> None:
    db = str(tmp_path / "race.db")
    sock, lock = _files(db, tmp_path)
    async with anyio.create_task_group() as tg:
        for n in range(4):
            tg.start_soon(functools.partial(hook, "claude-code", _failure(n), db=db, tmp=tmp_path, **ON))
    assert relay_server._is_live(str(sock))  # every run waited for the one daemon
    await wait_for(lambda: daemons_of(db) == [daemon_pid(lock)])
    # One daemon was ever started: no other came up, found the lock taken and left.
    log = Path(log_path(str(sock))).read_text(encoding="utf-8")
    assert (log.count("hook daemon (pid"), log.count(" ends: ")) == (1, 0), log
    assert len(snapshot(db)["occurrences"]) == 4


async def test_a_second_daemon_of_the_store_leaves_at_once(tmp_path: Path) -> None:
    db = str(tmp_path / "second.db")
    _sock, lock = await _started_daemon(db, tmp_path)
    second = await run_script("--db", db, "hook", "daemon", tmp=tmp_path)
    assert second.returncode == 0
    assert "ends: another daemon serves this store" in second.stderr
    assert daemons_of(db) == [daemon_pid(lock)]


@pytest.mark.parametrize(
    ("env", "config"),
    [
        ({"ESCALATION_HOOK_RELAY": "off"}, None),
        ({"ESCALATION_HOOK_RELAY": "no-daemon"}, None),
        (ON, "[hooks]\nrelay_idle_minutes = 0\n"),
        (ON, "[hooks]\nrelay = false\n"),
    ],
    ids=["relay off", "no-daemon", "idle minutes 0", "relay = false"],
)
async def test_no_daemon_starts_when_the_relay_or_the_daemon_is_switched_off(
    tmp_path: Path, env: dict[str, str], config: str | None
) -> None:
    if config is not None:
        (tmp_path / "off.toml").write_text(config, encoding="utf-8")
        env = {**env, "ESCALATION_CONFIG": str(tmp_path / "off.toml")}
    db = str(tmp_path / "off.db")
    sock, lock = _files(db, tmp_path)
    run = await hook("claude-code", _failure(0), db=db, tmp=tmp_path, **env)
    assert (run.returncode, run.stderr) == (0, "")
    assert len(snapshot(db)["occurrences"]) == 1  # done by the hook itself
    # A hook that starts a daemon opens its log before it exits; none was started.
    assert not Path(log_path(str(sock))).exists()
    assert (daemon_running(lock), sock.exists(), daemons_of(db)) == (False, False, [])


async def test_a_daemon_that_cannot_start_leaves_the_run_to_the_hook(tmp_path: Path) -> None:
    config = tmp_path / "typo.toml"
    config.write_text("[hooks]\nrelay_idel_minutes = 5\n", encoding="utf-8")  # plain TOML, bad key
    db = str(tmp_path / "typo.db")
    sock, lock = _files(db, tmp_path)
    run = await hook("claude-code", _failure(0), db=db, tmp=tmp_path, ESCALATION_CONFIG=str(config), **ON)
    assert run.returncode == 0
    assert "relay_idel_minutes" in run.stderr  # the hook's own run reports the config, as always
    assert not daemon_running(lock)
    assert "relay_idel_minutes" in Path(log_path(str(sock))).read_text(encoding="utf-8")


async def test_the_daemon_exits_when_its_store_file_is_deleted(tmp_path: Path) -> None:
    db = str(tmp_path / "gone.db")
    sock, lock = await _started_daemon(db, tmp_path)
    for suffix in ("", "-wal", "-shm"):
        Path(db + suffix).unlink(missing_ok=True)
    # A run now is turned away (or finds the socket gone) and goes to the new store file.
    after = await hook("claude-code", _failure(1), db=db, tmp=tmp_path, ESCALATION_HOOK_RELAY="no-daemon")
    assert (after.returncode, after.stderr) == (0, "")
    assert len(snapshot(db)["occurrences"]) == 1
    await wait_for(lambda: not daemon_running(lock))
    assert not sock.exists()
    assert "ends: its store file was deleted or replaced" in Path(log_path(str(sock))).read_text(
        encoding="utf-8"
    )


async def test_the_daemon_stops_on_sigterm_and_removes_its_socket(tmp_path: Path) -> None:
    db = str(tmp_path / "term.db")
    sock, lock = await _started_daemon(db, tmp_path)
    os.kill(daemon_pid(lock), signal.SIGTERM)
    await wait_for(lambda: not daemon_running(lock))
    assert not sock.exists()
    assert "ends: SIGTERM received" in Path(log_path(str(sock))).read_text(encoding="utf-8")


async def test_a_killed_daemon_is_replaced_by_the_next_hook_run(tmp_path: Path) -> None:
    db = str(tmp_path / "killed.db")
    sock, lock = await _started_daemon(db, tmp_path)
    killed = daemon_pid(lock)
    os.kill(killed, signal.SIGKILL)  # no clean-up: its socket stays behind, nothing accepts on it
    await wait_for(lambda: not daemon_running(lock))
    assert sock.exists()
    run = await hook("claude-code", _failure(1), db=db, tmp=tmp_path, **ON)
    assert (run.returncode, run.stderr) == (0, "")
    assert relay_server._is_live(str(sock))
    assert daemons_of(db) == [daemon_pid(lock)] != [killed]
    assert len(snapshot(db)["occurrences"]) == 2


async def test_with_an_mcp_server_running_no_daemon_starts_and_a_started_one_leaves(tmp_path: Path) -> None:
    db = str(tmp_path / "served.db")
    _sock, lock = _files(db, tmp_path)
    with serving(db, tmp_path):
        relayed = await hook("claude-code", _failure(0), db=db, tmp=tmp_path, **ON)
        assert (relayed.returncode, relayed.stderr) == (0, "")
        assert not daemon_running(lock)
        # A daemon started by hand finds the server on the socket and leaves it to it.
        daemon = await run_script("--db", db, "hook", "daemon", tmp=tmp_path)
        assert daemon.returncode == 0
        assert "ends: another process serves this store's socket" in daemon.stderr
        again = await hook("claude-code", _failure(1), db=db, tmp=tmp_path, **REQUIRE)
        assert (again.returncode, again.stderr) == (0, "")
    assert len(snapshot(db)["occurrences"]) == 2


async def test_a_lock_file_not_of_the_store_is_refused(tmp_path: Path) -> None:
    # A daemon is a process of its own: never run one inside the test process.
    refused = await run_script(
        "--db", str(tmp_path / "x.db"), "hook", "daemon", "--lock-fd", "0", tmp=tmp_path
    )
    assert refused.returncode == 1
    assert "--lock-fd 0: not this store's lock file" in refused.stderr


def test_the_hooks_default_idle_time_is_the_configs() -> None:
    assert HooksConfig.model_construct().relay_idle_minutes == DEFAULT_IDLE_MINUTES
    assert HooksConfig.model_validate({}).relay_idle_minutes == DEFAULT_IDLE_MINUTES


@pytest.mark.parametrize(
    ("text", "minutes"),
    [
        (None, DEFAULT_IDLE_MINUTES),
        ("", DEFAULT_IDLE_MINUTES),
        ("[hooks]\nrelay_idle_minutes = 2.5\n", 2.5),
        ("[hooks]\nrelay_idle_minutes = 0\n", 0.0),
        ("[hooks]\nrelay = false\nrelay_idle_minutes = 5\n", 0.0),
        ("[hooks]\nrelay_idle_minutes = 'ten'\n", 0.0),
        ("[hooks]\nrelay_idle_minutes = true\n", 0.0),
        ("not toml [", 0.0),
        ("x = '" + "a" * 1024 * 1024 + "'\n", 0.0),  # beyond what a hook reads of a config
    ],
)
def test_a_hook_reads_the_daemons_idle_time_from_its_config(
    tmp_path: Path, text: str | None, minutes: float
) -> None:
    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    if text is None:
        assert idle_minutes({}, env, str(tmp_path)) == minutes  # no config file at all
        return
    (tmp_path / "c.toml").write_text(text, encoding="utf-8")
    assert idle_minutes({"--config": "c.toml"}, env, str(tmp_path)) == minutes
    assert idle_minutes({}, {**env, "ESCALATION_CONFIG": str(tmp_path / "c.toml")}, "/") == minutes
    assert idle_minutes({"--config": "missing.toml"}, env, str(tmp_path)) == 0.0
