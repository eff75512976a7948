"""The relay under attack: any process of the user can reach its socket, and it shares the
MCP server's event loop, so no request may freeze it, exhaust it or end it.

The limits are set small by parameter (a cap of 3 connections proves what 1,100 sockets
would); the waits are bounded, never timed.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from mcp import Client

from conftest import make_settings
from hooks_support import PYTEST_FAIL, bash_failure, environment, hook, relaying, snapshot, socket_of
from mcp_server_escalation.adapters.composition import server as composition_server
from mcp_server_escalation.adapters.composition.server import build_server
from mcp_server_escalation.hooks import relay_server
from mcp_server_escalation.hooks.relay import PROTOCOL, socket_path
from mcp_server_escalation.hooks.relay_server import RelayLimits, respond
from mcp_server_escalation.hooks.spool import spool_folder
from mcp_server_escalation.services.runtime import open_runtime
from mcp_server_escalation.settings import Settings

REQUIRE = {"ESCALATION_HOOK_RELAY": "require"}


def _request(cwd: Path, tool_use_id: str, **options: str) -> dict[str, Any]:
    """A forwarded hook run (of the store ``cfg.db`` in ``cwd``) as ``hooks/relay.py`` sends it."""
    return {
        "protocol": PROTOCOL,
        "host": "claude-code",
        "options": {"--db": "cfg.db", **options},
        "env": dict(os.environ),
        "cwd": str(cwd),
        "stdin": json.dumps(bash_failure("python -m pytest -q", PYTEST_FAIL, tool_use_id)),
    }


@contextlib.contextmanager
def fifo_watch(fifo: Path) -> Iterator[list[str]]:
    """Notes (and releases) anyone who opens ``fifo`` to read it while the body runs.

    Opening a FIFO to read blocks until a writer comes; a writer that opens it without
    blocking succeeds only when a reader is waiting. So this thread can tell, without a
    clock, that the relay opened the file, and then release it so the test can fail.
    """
    os.mkfifo(fifo)
    opened: list[str] = []
    done = threading.Event()

    def watch() -> None:
        while not done.wait(0.005):
            try:
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                continue  # ENXIO: no reader
            opened.append("the relay opened the FIFO")
            os.write(fd, b"")
            os.close(fd)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield opened
    finally:
        done.set()
        watcher.join()


async def test_a_config_other_than_the_servers_is_never_opened_by_the_relay(tmp_path: Path) -> None:
    ours = tmp_path / "ours.toml"
    ours.write_text("[thresholds]\nsame_error_repeated = 4\n", encoding="utf-8")
    settings = Settings.from_sources(db=str(tmp_path / "cfg.db"), config=str(ours))
    async with open_runtime(settings) as rt:
        with fifo_watch(tmp_path / "config.fifo") as opened, anyio.fail_after(30):
            reply = await respond(
                rt, _request(tmp_path, "toolu_f1", **{"--config": str(tmp_path / "config.fifo")})
            )
            env_reply = await respond(
                rt,
                {**_request(tmp_path, "toolu_f2"), "env": {**os.environ, "ESCALATION_CONFIG": "config.fifo"}},
            )
        assert opened == []
        assert reply == env_reply == {"protocol": PROTOCOL, "fallback": "another store, prompts or config"}
        # The server's own config file, unchanged: answered here.
        answered = await respond(rt, _request(tmp_path, "toolu_f3", **{"--config": str(ours)}))
        assert set(answered) == {"protocol", "stdout", "stderr"}
        # A copy, or the same file edited since the server read it: the hook reads its own.
        copy = tmp_path / "copy.toml"
        copy.write_text(ours.read_text(encoding="utf-8"), encoding="utf-8")
        copied = await respond(rt, _request(tmp_path, "toolu_f4", **{"--config": str(copy)}))
        with ours.open("a", encoding="utf-8") as edited:
            edited.write("# edited\n")
        changed = await respond(rt, _request(tmp_path, "toolu_f5", **{"--config": str(ours)}))
        assert copied == changed == {"protocol": PROTOCOL, "fallback": "another store, prompts or config"}


def _idle(path: str) -> socket.socket:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(20)  # bounds a test that fails; a passing one never waits this long
    conn.connect(path)
    return conn


def _closed_by_server(conn: socket.socket) -> bool:
    """Does the server close ``conn`` (EOF) without an answer?"""
    try:
        return conn.recv(1) == b""
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True


async def test_idle_connections_beyond_the_cap_leave_the_relay_and_the_server_answering(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cap = 3
    monkeypatch.setattr(relay_server, "LIMITS", RelayLimits(connections=cap, request_seconds=1.0))
    monkeypatch.setattr(composition_server, "RELAY_START_SECONDS", 0.0)
    db = str(tmp_path / "cap.db")
    path = socket_path(db, os.environ, str(Path.cwd()))
    assert path is not None
    server = build_server(make_settings(db), hook_relay=True)
    async with Client(server) as client:
        with anyio.fail_after(60):
            while not relay_server._is_live(path):
                await anyio.sleep(0.02)
        idle = [await anyio.to_thread.run_sync(_idle, path) for _ in range(cap + 5)]
        try:
            # Beyond the cap: closed at once, so their hooks would run themselves at once.
            for conn in idle[cap:]:
                assert await anyio.to_thread.run_sync(_closed_by_server, conn)
            # Meanwhile a hook run is done (here by itself) and the MCP server answers.
            failure = bash_failure("python -m pytest -q", PYTEST_FAIL, "toolu_cap1")
            during = await hook("claude-code", failure, db=db, tmp=tmp_path)
            assert (during.returncode, during.stderr) == (0, "")
            started = await client.call_tool("start_task", {"title": "still here", "task_id": "alive"})
            assert not started.is_error
            # The idle ones within the cap are dropped once their time to send is up...
            for conn in idle[:cap]:
                assert await anyio.to_thread.run_sync(_closed_by_server, conn)
        finally:
            for conn in idle:
                conn.close()
        # ...and the relay answers again.
        again = bash_failure("python -m pytest -q", PYTEST_FAIL, "toolu_cap2")
        relayed = await hook("claude-code", again, db=db, tmp=tmp_path, **REQUIRE)
        assert (relayed.returncode, relayed.stderr) == (0, "")
    assert len(snapshot(db)["occurrences"]) == 2


async def test_a_request_over_the_size_limit_is_dropped_and_the_relay_serves_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(relay_server, "LIMITS", RelayLimits(request_bytes=4096))
    monkeypatch.setattr(composition_server, "RELAY_START_SECONDS", 0.0)
    db = str(tmp_path / "size.db")
    path = socket_path(db, os.environ, str(Path.cwd()))
    assert path is not None

    def send(data: bytes) -> bytes:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(20)
            conn.connect(path)
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                conn.sendall(data)
                conn.shutdown(socket.SHUT_WR)
            try:
                return b"".join(iter(lambda: conn.recv(65536), b""))
            except ConnectionResetError:
                return b""

    server = build_server(make_settings(db), hook_relay=True)
    async with Client(server):
        with anyio.fail_after(60):
            while not relay_server._is_live(path):
                await anyio.sleep(0.02)
        big = json.dumps({**_request(tmp_path, "toolu_s1"), "pad": "x" * 8192}).encode()
        assert await anyio.to_thread.run_sync(send, big) == b""
        relayed = await hook(
            "claude-code",
            bash_failure("python -m pytest -q", "E", "toolu_s2"),
            db=db,
            tmp=tmp_path,
            **REQUIRE,
        )
        assert (relayed.returncode, relayed.stderr) == (0, "")


async def test_a_relay_that_cannot_start_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    runtime = tmp_path / "run"
    (runtime / "mcp-server-escalation").mkdir(parents=True)
    (runtime / "mcp-server-escalation").chmod(0o777)  # others could plant a socket that lies
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    async with open_runtime(make_settings(str(tmp_path / "why.db"))) as rt, relay_server.relay(rt) as path:
        assert path is None
    assert "hook relay not started: no private folder for the socket" in caplog.text


async def _relayed_after_start(db: str, tmp_path: Path, path: str) -> None:
    """Start a server with its relay on ``db`` and have one hook run relayed by it."""
    server = build_server(make_settings(db), hook_relay=True)
    async with Client(server) as client:
        with anyio.fail_after(60):
            while not relay_server._is_live(path):
                await anyio.sleep(0.02)
        failure = bash_failure("python -m pytest -q", PYTEST_FAIL, "toolu_way")
        relayed = await hook("claude-code", failure, db=db, tmp=tmp_path, **REQUIRE)
        assert (relayed.returncode, relayed.stderr) == (0, "")
        assert not (await client.call_tool("start_task", {"title": "on", "task_id": "on"})).is_error


@pytest.mark.parametrize("in_the_way", ["dangling symlink", "symlink to a file", "empty folder", "file"])
async def test_what_nothing_serves_at_the_socket_path_is_cleared_and_said(
    in_the_way: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(composition_server, "RELAY_START_SECONDS", 0.0)
    db = str(tmp_path / "way.db")
    path = socket_path(db, os.environ, str(Path.cwd()))
    assert path is not None
    target = tmp_path / "target"
    if in_the_way == "dangling symlink":
        Path(path).symlink_to(tmp_path / "gone")
    elif in_the_way == "symlink to a file":
        target.write_text("mine")
        Path(path).symlink_to(target)
    elif in_the_way == "empty folder":
        Path(path).mkdir()
    else:
        Path(path).write_text("left here")
    await _relayed_after_start(db, tmp_path, path)
    said = {"dangling symlink": "symlink", "symlink to a file": "symlink"}.get(in_the_way, in_the_way)
    assert f"hook relay: removed the {said} that was in the way at {path}" in caplog.text
    assert not target.exists() or target.read_text() == "mine"  # a link's target is never touched


async def test_a_folder_with_contents_at_the_socket_path_is_left_and_said_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(composition_server, "RELAY_START_SECONDS", 0.0)
    monkeypatch.setattr(relay_server, "RETRY_SECONDS", 0.05)
    db = str(tmp_path / "folder.db")
    path = socket_path(db, os.environ, str(Path.cwd()))
    assert path is not None
    Path(path).mkdir()
    (Path(path) / "notes.txt").write_text("somebody's work")
    server = build_server(make_settings(db), hook_relay=True)
    async with Client(server) as client:
        with anyio.fail_after(30):
            while "not listening on" not in caplog.text:
                await anyio.sleep(0.02)
        await anyio.sleep(0.3)  # several retries: still one line
        assert not (await client.call_tool("start_task", {"title": "on", "task_id": "on"})).is_error
        said = [r.getMessage() for r in caplog.records if "not listening on" in r.getMessage()]
        assert len(said) == 1
        assert f"not listening on {path}: a folder is in the way" in said[0]
        assert "remove it" in said[0]
        assert (Path(path) / "notes.txt").read_text() == "somebody's work"
        # once it is gone, the relay takes the path
        (Path(path) / "notes.txt").unlink()
        Path(path).rmdir()
        with anyio.fail_after(30):
            while not relay_server._is_live(path):
                await anyio.sleep(0.02)


def _relayed(path: str, request: dict[str, Any]) -> dict[str, Any] | str:
    """The relay's reply to ``request`` on the socket ``path``, or why there was none within
    20 s (a frozen relay)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(20)  # bounds a test that fails; a passing one never waits this long
        conn.connect(path)
        conn.sendall(json.dumps(request).encode())
        conn.shutdown(socket.SHUT_WR)
        chunks = []
        try:
            while chunk := conn.recv(65536):
                chunks.append(chunk)
        except TimeoutError:
            return "no answer within 20 s"
    reply = json.loads(b"".join(chunks))
    assert isinstance(reply, dict)
    return reply


def _release(fifo: Path) -> None:
    """Let go of whoever waits on ``fifo`` to open it (a writer waits for a reader, and a
    reader for a writer), so that a test that fails still ends."""
    for flags in (os.O_RDONLY | os.O_NONBLOCK, os.O_WRONLY | os.O_NONBLOCK):
        with contextlib.suppress(OSError):
            os.close(os.open(fifo, flags))


async def test_a_relayed_request_never_chooses_the_spool_and_never_removes_a_projects_files(
    tmp_path: Path, sqlite_template: Path
) -> None:
    """A request's XDG_STATE_HOME whose spool folder is a link to a project: the relay keeps
    to its own spool, and the project keeps its files."""
    db = tmp_path / "cfg.db"
    shutil.copyfile(sqlite_template, db)
    project = tmp_path / "project"
    project.mkdir()
    (project / "package.json").write_text('{"name": "shop"}\n', encoding="utf-8")
    (project / "tsconfig.json").write_text('{"compilerOptions": {}}\n', encoding="utf-8")
    theirs = {"XDG_STATE_HOME": str(tmp_path / "their-state")}
    linked = spool_folder(str(db), theirs)
    linked.parent.mkdir(parents=True)
    linked.symlink_to(project, target_is_directory=True)
    own = {"XDG_STATE_HOME": str(tmp_path / "own-state")}
    with relaying(str(db), tmp_path, **own):
        request = {**_request(tmp_path, "toolu_link1"), "env": {**environment(tmp_path), **theirs}}
        reply = await anyio.to_thread.run_sync(_relayed, socket_of(str(db), tmp_path), request)

    assert isinstance(reply, dict), reply
    assert "fallback" not in reply
    assert sorted(p.name for p in project.iterdir()) == ["package.json", "tsconfig.json"]
    assert (project / "package.json").read_text(encoding="utf-8") == '{"name": "shop"}\n'
    assert len(snapshot(str(db))["occurrences"]) == 1  # the relay recorded the event


async def test_fifos_in_the_relays_spool_never_freeze_it(tmp_path: Path, sqlite_template: Path) -> None:
    """A FIFO placed as the spool's lock and another as a spooled event: the relay answers at
    once, removes both (its folder is private), and records the event it was sent."""
    db = tmp_path / "cfg.db"
    shutil.copyfile(sqlite_template, db)
    own = {"XDG_STATE_HOME": str(tmp_path / "own-state")}
    folder = spool_folder(str(db), own)
    folder.mkdir(parents=True, mode=0o700)
    lock, event = folder / ".lock", folder / f"{0:020d}-00000001-0001.json"
    os.mkfifo(lock)
    os.mkfifo(event)
    try:
        with relaying(str(db), tmp_path, **own):
            path = socket_of(str(db), tmp_path)
            env = {**environment(tmp_path), **own}  # the hook's own folder is the relay's here
            sent = [{**_request(tmp_path, f"toolu_fifo{n}"), "env": env} for n in (1, 2)]
            first = await anyio.to_thread.run_sync(_relayed, path, sent[0])
            second = await anyio.to_thread.run_sync(_relayed, path, sent[1])
    finally:
        _release(lock)
        _release(event)

    assert isinstance(first, dict), first
    assert isinstance(second, dict), second
    assert first["stderr"] == second["stderr"] == ""
    assert not event.exists()
    assert lock.is_file()  # a regular file in the FIFO's place
    assert len(snapshot(str(db))["occurrences"]) == 2
