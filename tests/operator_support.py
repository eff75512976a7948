"""Helpers for the operator-side tests: a loopback webhook receiver, bounded polling, the CLI.

The receiver is a real HTTP server on 127.0.0.1 (port chosen by the OS) in a thread; each
test says how it answers: a list of status codes to answer first (then 200), or "hang" to
accept a request and never answer it (released when the receiver closes).
"""

from __future__ import annotations

import inspect
import json
import os
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
from mcp import types

from bounds import HUNG_AFTER
from in_process import run_main
from mcp_server_escalation.models.reports import Delivery
from mcp_server_escalation.services.runtime import open_runtime
from mcp_server_escalation.settings import Settings
from mcp_server_escalation.store import outbox as outbox_store

SCRIPT = Path(sys.executable).parent / "mcp-server-escalation"
STORE_ENV = ("ESCALATION_DB", "ESCALATION_CONFIG", "ESCALATION_PROMPTS", "XDG_DATA_HOME")


@dataclass
class Request:
    """One POST the receiver got."""

    at: float  # time.time() on arrival
    body: dict[str, Any]
    status: int | None  # what it answered (None: it never answered)


@dataclass
class Receiver:
    """A webhook endpoint on the loopback interface."""

    statuses: list[int] = field(default_factory=list)
    hang_first: int = 0
    hold: bool = False  # while True, every request hangs
    requests: list[Request] = field(default_factory=list)
    _release: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    url: str = ""

    def delivered(self) -> list[Request]:
        """Requests answered with a 2xx status."""
        with self._lock:
            return [r for r in self.requests if r.status is not None and 200 <= r.status < 300]

    def for_escalation(self, escalation_id: int) -> list[Request]:
        """Every request about one escalation."""
        with self._lock:
            return [r for r in self.requests if r.body.get("escalation_id") == escalation_id]


@contextmanager
def receiver(
    statuses: list[int] | None = None, *, hang_first: int = 0, hold: bool = False
) -> Iterator[Receiver]:
    """A running Receiver; closed (and hanging requests released) on exit."""
    state = Receiver(statuses=list(statuses or []), hang_first=hang_first, hold=hold)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            request = Request(at=time.time(), body=body, status=None)
            with state._lock:
                state.requests.append(request)
                hang = state.hold or len(state.requests) <= state.hang_first
                status = state.statuses.pop(0) if state.statuses and not hang else 200
            if hang:
                state._release.wait(30)
                return
            request.status = status
            self.send_response(status)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the tests read ``requests``."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state._release.set()
        server.shutdown()
        server.server_close()


async def eventually(check: Callable[[], Awaitable[object] | object], seconds: float, what: str) -> float:
    """Poll ``check`` every 20 ms until it is truthy; seconds it took. Fails after ``seconds``."""
    started = time.monotonic()
    try:
        with anyio.fail_after(seconds):
            while True:
                result = check()
                if inspect.isawaitable(result):
                    result = await result
                if result:
                    return time.monotonic() - started
                await anyio.sleep(0.02)
    except TimeoutError as exc:
        raise AssertionError(f"not within {seconds} s: {what}") from exc


async def deliveries(db_path: str, escalation_id: int) -> list[Delivery]:
    """The delivery records of an escalation, read through the store module."""
    async with delivery_reads(db_path) as read:
        return await read(escalation_id)


DeliveryReads = Callable[[int], Awaitable[list[Delivery]]]


@asynccontextmanager
async def delivery_reads(db_path: str) -> AsyncIterator[DeliveryReads]:
    """Reads of an escalation's delivery records through one open store: what a test that
    polls them every 20 ms takes, instead of opening the store (on PostgreSQL, connections)
    at every poll."""
    async with open_runtime(Settings(db_path=db_path)) as rt:

        async def read(escalation_id: int) -> list[Delivery]:
            return await rt.db.read(lambda conn: outbox_store.deliveries(conn, escalation_id))

        yield read


def cli_env(home: Path, **extra: str) -> dict[str, str]:
    """An environment where the store comes only from flags and ``extra``."""
    environment = {k: v for k, v in os.environ.items() if k not in STORE_ENV}
    environment["XDG_DATA_HOME"] = str(home)
    environment.update(extra)
    return environment


def flat(text: str) -> str:
    """Wrapped output as one line: what it says, whatever the width it was wrapped to."""
    return " ".join(text.split())


async def run_cli(*args: str, home: Path, **env: str) -> tuple[int, str, str]:
    """The console script's ``main`` run to completion in this process (``in_process.py``):
    (exit code, stdout, stderr), as the process would give them."""
    code, out, err = await run_main(list(args), env=cli_env(home, **env))
    return code, out.decode(), err.decode()


async def run_script(*args: str, home: Path, **env: str) -> tuple[int, str, str]:
    """The installed console script run to completion as a process: (exit code, stdout, stderr)."""
    with anyio.fail_after(HUNG_AFTER):
        done = await anyio.run_process([str(SCRIPT), *args], check=False, env=cli_env(home, **env))
    return done.returncode, done.stdout.decode(), done.stderr.decode()


def write_config(path: Path, **notify: object) -> Path:
    """A config file with a ``[notify]`` table."""
    lines = ["[notify]"]
    for key, value in notify.items():
        lines.append(f"{key} = {json.dumps(value)}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


class Heard:
    """What one client's message handler received, in order."""

    def __init__(self) -> None:
        self.updated: list[str] = []
        self.logs: list[types.LoggingMessageNotificationParams] = []

    async def __call__(self, message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            self.updated.append(message.params.uri)
        elif isinstance(message, types.LoggingMessageNotification):
            self.logs.append(message.params)

    def about(self, escalation_id: int) -> list[str]:
        """The log messages about one escalation."""
        return [str(p.data) for p in self.logs if f"Escalation {escalation_id} " in str(p.data)]

    def said(self, text: str) -> bool:
        """Did any log message hold ``text``?"""
        return any(text in str(p.data) for p in self.logs)
