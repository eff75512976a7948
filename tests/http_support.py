"""A real streamable HTTP server for tests: the installed script on a free port (its stderr kept
in a file), or the server a command builds, run in a thread of the test process."""

from __future__ import annotations

import hashlib
import logging
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import pytest
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from conftest import Agent
from mcp_server_escalation.cli.parsers import build_parser
from mcp_server_escalation.cli.serve import http_server, serve_settings

SCRIPT = str(Path(sys.executable).parent / "mcp-server-escalation")
AGENT_TOKEN = "agent-" + "a" * 40
OPERATOR_TOKEN = "operator-" + "o" * 40
TEST_TOKENS = {"ESCALATION_AGENT_TOKEN": AGENT_TOKEN, "ESCALATION_OPERATOR_TOKEN": OPERATOR_TOKEN}


def token_digest(token: str) -> str:
    """What a tokens file entry's ``sha256`` holds for ``token``."""
    return hashlib.sha256(token.encode()).hexdigest()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve_http_command(tmp_path: Path, port: int, options: tuple[str, ...]) -> list[str]:
    """The command line (after the script) of a test's HTTP server: its store in ``tmp_path``,
    ``options`` after it (a later ``--db`` wins)."""
    return ["serve", "--transport", "http", "--port", str(port), "--db", str(tmp_path / "esc.db"), *options]


def start_http(
    tmp_path: Path, *options: str, env: dict[str, str] | None = None, wait_seconds: float = 20
) -> tuple[subprocess.Popen[bytes], int, Path]:
    """A real HTTP server on a free port, its stderr kept in a file; once it listens (within
    ``wait_seconds``)."""
    port = free_port()
    env = env or {**os.environ, **TEST_TOKENS}
    log = tmp_path / f"serve-{port}.log"
    with log.open("wb") as stderr:
        process = subprocess.Popen(
            [SCRIPT, *serve_http_command(tmp_path, port, options)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    if not wait_until_listening(port, process, wait_seconds):
        process.kill()
        pytest.fail(f"HTTP server did not start: {log.read_text()}")
    return process, port, log


def wait_until_listening(port: int, process: subprocess.Popen[bytes], seconds: float = 20) -> bool:
    """Has ``process`` begun listening on ``port`` within ``seconds`` (and not exited)?"""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return True
        except OSError:
            if process.poll() is not None:
                return False
            time.sleep(0.05)  # bounded wait for the listener to come up
    return False


class _Tracebacks(logging.Handler):
    """Every record with an exception logged in one thread (a server's), for a test to say
    none was. Held on the root and the ``uvicorn`` loggers (which does not pass its records
    on) while the server runs."""

    def __init__(self, thread: int) -> None:
        super().__init__()
        self.thread = thread
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info and record.thread == self.thread:
            self.records.append(record)


# Every server running in a thread now. Building a uvicorn server configures uvicorn's logging
# afresh, which takes the handlers off its loggers: each build puts all of these back.
_RUNNING: list[_Tracebacks] = []
_WATCHED = ("", "uvicorn")


def _watch_every_running_server() -> None:
    for name in _WATCHED:
        for tracebacks in _RUNNING:
            logging.getLogger(name).addHandler(tracebacks)  # once: a logger holds a handler once


@contextmanager
def http_in_thread(tmp_path: Path, *options: str, env: dict[str, str] | None = None) -> Iterator[int]:
    """The server ``serve --transport http`` runs, as ``start_http`` starts it (``--db`` in
    ``tmp_path``, ``options`` after it, the test tokens or ``env``'s ``ESCALATION_`` variables
    in its environment), on a free port in a thread of this process: its port, once it
    listens. On leaving, the server stops and no request may have logged a traceback.

    For the tests of what is served over HTTP: the same application as the installed script
    serves, without a process start (~1 s of CPU) per test."""
    port = free_port()
    args = build_parser().parse_args(serve_http_command(tmp_path, port, options))
    with uvicorn_in_thread(lambda: http_server(args, serve_settings(args)), env, port):
        yield port


@contextmanager
def uvicorn_in_thread(
    build: Callable[[], uvicorn.Server], env: dict[str, str] | None, port: int
) -> Iterator[None]:
    """The server ``build`` makes (with the test tokens, or ``env``'s ``ESCALATION_``
    variables, in the environment while it is built), running in a thread until the block
    ends; then it stops and no request may have logged a traceback."""
    given = env if env is not None else {**os.environ, **TEST_TOKENS}
    collected: list[_Tracebacks] = []
    built: list[uvicorn.Server] = []
    failed: list[BaseException] = []

    def build_and_serve() -> None:
        # Built in the thread too: a command may run an event loop while building, and the
        # test's own loop may be running in the caller's thread.
        try:
            with pytest.MonkeyPatch.context() as environment:
                for name in [name for name in os.environ if name.startswith("ESCALATION_")]:
                    environment.delenv(name)
                for name, value in given.items():
                    if name.startswith("ESCALATION_"):
                        environment.setenv(name, value)
                server = build()
        except BaseException as exc:  # noqa: BLE001 (raised in the test's thread)
            failed.append(exc)
            return
        collected.append(_Tracebacks(threading.get_ident()))
        _RUNNING.append(collected[0])
        _watch_every_running_server()
        built.append(server)
        server.run()

    thread = threading.Thread(target=build_and_serve, name=f"http-{port}", daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while not (built and built[0].started):
            if failed:
                raise failed[0]
            if not thread.is_alive() or time.monotonic() > deadline:
                pytest.fail(f"the server on port {port} did not start")
            time.sleep(0.01)  # bounded wait for the listener to come up
        yield
    finally:
        if built:
            built[0].should_exit = True
        thread.join(timeout=10)
        for tracebacks in collected:
            _RUNNING.remove(tracebacks)
            for name in _WATCHED:
                logging.getLogger(name).removeHandler(tracebacks)
    assert not thread.is_alive(), "the server did not stop"
    logged = [f"{r.name}: {r.getMessage()}" for r in collected[0].records] if collected else []
    assert not logged, f"the server logged tracebacks: {logged}"


def stop_http(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    process.wait(timeout=10)


@asynccontextmanager
async def http_client(url: str, token: str | None, mode: str = "auto") -> AsyncIterator[Agent]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    # The HTTP client the SDK makes when given none (30 s, 5 min for a stream's reads), not
    # httpx's own 5 s: a call that waits longer (a lock held by another process) is no error.
    async with (
        create_mcp_http_client(headers=headers) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        yield Agent(client)
