"""The operator console for tests: the installed script (or its server in a thread) on a free
port, and a logged-in client."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import anyio
import httpx2
import pytest

from bounds import HUNG_AFTER
from conftest import connect
from http_support import AGENT_TOKEN, OPERATOR_TOKEN, SCRIPT, free_port, uvicorn_in_thread
from mcp_server_escalation.cli.console import console_server
from mcp_server_escalation.cli.parsers import build_parser

T = TypeVar("T")


@dataclass(frozen=True)
class RunningConsole:
    """A console (a process of the installed script, or its server in a thread) and where
    it listens."""

    port: int
    db_path: str

    @property
    def url(self) -> str:
        """The console's base URL."""
        return f"http://127.0.0.1:{self.port}"


def run_async(work: Callable[[], Awaitable[T]]) -> T:
    """``anyio.run(work)`` on a thread of its own: Playwright's sync API holds this thread's loop."""
    done: list[T] = []
    failed: list[BaseException] = []

    def target() -> None:
        try:
            done.append(anyio.run(work))
        except BaseException as exc:  # noqa: BLE001 (raised again in the caller's thread)
            failed.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout=HUNG_AFTER)
    if failed:
        raise failed[0]
    assert done, f"the work did not finish within {HUNG_AFTER} s"
    return done[0]


def create_store(db_path: str) -> None:
    """A migrated store at ``db_path``, made by a real server (what an agent's host does)."""

    async def open_once() -> None:
        async with connect(db_path):
            pass

    run_async(open_once)


@contextmanager
def running_console(folder: Path, *options: str) -> Iterator[RunningConsole]:
    """``mcp-server-escalation console [options]`` on a fresh store; stopped on exit."""
    db_path = str(folder / "console.db")
    create_store(db_path)
    port = free_port()
    env = {**os.environ, "ESCALATION_AGENT_TOKEN": AGENT_TOKEN, "ESCALATION_OPERATOR_TOKEN": OPERATOR_TOKEN}
    log = folder / "console.log"
    with log.open("wb") as stderr:
        process = subprocess.Popen(
            [SCRIPT, "console", "--db", db_path, "--port", str(port), *options],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    deadline = time.monotonic() + 20
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                pytest.fail(f"console did not start: {log.read_text()}")
            time.sleep(0.05)  # bounded wait for the listener to come up
    try:
        yield RunningConsole(port, db_path)
    finally:
        process.terminate()
        process.wait(timeout=10)


@contextmanager
def console_in_thread(
    folder: Path, *options: str, env: dict[str, str] | None = None
) -> Iterator[RunningConsole]:
    """The server ``console [options]`` runs, on a fresh store, with the test tokens (or
    ``env``'s ``ESCALATION_`` variables), in a thread of this process
    (``http_support.uvicorn_in_thread``); stopped on exit. For the tests of the console's
    pages: ``running_console`` starts the installed script."""
    db_path = str(folder / "console.db")
    create_store(db_path)
    port = free_port()
    args = build_parser().parse_args(["console", "--db", db_path, "--port", str(port), *options])
    with uvicorn_in_thread(lambda: console_server(args), env, port):
        yield RunningConsole(port, db_path)


@contextmanager
def logged_in(console: RunningConsole) -> Iterator[httpx2.Client]:
    """An HTTP client holding the operator's session cookie (Origin set as a browser would)."""
    with httpx2.Client(base_url=console.url, headers={"Origin": console.url}) as client:
        answer = client.post("/login", data={"token": OPERATOR_TOKEN})
        assert answer.status_code == 303, answer.text
        yield client


def form_values(page: str) -> dict[str, str]:
    """The CSRF token and revision of a page's answer form."""
    found = dict(re.findall(r'name="(csrf|revision)" value="([^"]*)"', page))
    assert "csrf" in found, page
    return found
