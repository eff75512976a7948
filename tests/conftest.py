"""Shared test helpers: a real SQLite file per test, the real SDK client in memory.

Clients are entered inside the test body (``async with connect(...)``), never yielded from
an async fixture: pytest-asyncio tears fixtures down in another task, which anyio's cancel
scopes refuse (the cancel scope must be exited in the task that entered it).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

import pg_local as pg
from hooks_support import stop_daemons
from mcp_server_escalation.adapters.composition.server import build_server
from mcp_server_escalation.models.limits import Role
from mcp_server_escalation.rules.reading.fingerprint import message_key
from mcp_server_escalation.settings import Settings
from mcp_server_escalation.store.backends import open_store
from mcp_server_escalation.store.migrations import MIGRATIONS
from pg_reuse import ReusedDatabase

PROJECT = "/work/project"

# Raw JSON-RPC for the tests that speak to the console script without the SDK client.
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw-test", "version": "0"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def start_task_request(request_id: int, task_id: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "start_task", "arguments": {"title": task_id, "task_id": task_id}},
    }


def migrate_by_hand(conn: sqlite3.Connection, upto: int | None = None) -> None:
    """Migrations 1..``upto`` (all by default) applied and recorded as a server of that
    version left its store: the upgrade tests start from such a store."""
    # Registered on every connection by store.db; migration 6 uses it.
    conn.create_function("escalation_message_key", 1, message_key, deterministic=True)
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY,"
        " name TEXT NOT NULL, applied_at TEXT NOT NULL)"
    )
    for migration in MIGRATIONS[:upto]:
        for statement in migration.statements:
            conn.execute(statement)
        conn.execute(
            "INSERT INTO schema_migrations VALUES (?, ?, '2026-11-01T00:00:00.000Z')",
            (migration.version, migration.name),
        )


class ToolCallError(Exception):
    """A tool call came back with isError; the text is the model-facing message."""


class Agent:
    """A thin wrapper over the SDK client: call a tool, get its structured result."""

    def __init__(self, client: Client) -> None:
        self.client = client

    async def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        """The structured result, or ToolCallError with the error text."""
        result = await self.client.call_tool(tool, arguments)
        if result.is_error:
            raise ToolCallError(result.content[0].text)  # type: ignore[union-attr]
        assert result.structured_content is not None
        return result.structured_content

    async def error(self, tool: str, **arguments: Any) -> str:
        """The error text of a call that must fail."""
        result = await self.client.call_tool(tool, arguments)
        assert result.is_error, f"{tool} unexpectedly succeeded: {result.structured_content}"
        return result.content[0].text  # type: ignore[union-attr]


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self, start: datetime | None = None) -> None:
        self.now = start or datetime(2026, 11, 21, 10, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


@pytest.fixture(autouse=True, scope="session")
def private_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A home and config folder of the session's own, for this process and its children.

    Every process reads a per-user config file by default (``~/.config/...``); servers that
    the SDK starts get ``HOME`` but not ``XDG_CONFIG_HOME``. No test may read the real one.
    """
    home = tmp_path_factory.mktemp("home")
    saved = {name: os.environ.get(name) for name in ("HOME", "XDG_CONFIG_HOME")}
    os.environ["HOME"] = str(home)
    os.environ["XDG_CONFIG_HOME"] = str(home / ".config")
    try:
        yield home
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@pytest.fixture(autouse=True, scope="session")
def private_relay_sockets() -> Iterator[Path]:
    """A runtime folder of the session's own for the hook relay's sockets and daemons.

    The session never touches another process's relay, and no relay daemon a test started
    outlives the session, even when the test failed before stopping it.
    """
    runtime = Path(tempfile.mkdtemp(prefix="esc-run-"))  # short: a socket path has ~100 bytes
    saved = os.environ.get("XDG_RUNTIME_DIR")
    os.environ["XDG_RUNTIME_DIR"] = str(runtime)
    try:
        yield runtime / "mcp-server-escalation"
    finally:
        stop_daemons(runtime / "mcp-server-escalation")
        if saved is None:
            os.environ.pop("XDG_RUNTIME_DIR", None)
        else:
            os.environ["XDG_RUNTIME_DIR"] = saved
        shutil.rmtree(runtime, ignore_errors=True)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: three workers for two cores. A worker often waits (on a server process it
    started, a PostgreSQL query, a webhook's timeout), and a third keeps both cores busy: on
    2 cores, 274 s for the suite against 291 s with four workers
    (``benchmarks/measure_suite.py`` says where the time goes)."""
    return max(1, (os.cpu_count() or 1) * 3 // 2)


BACKENDS = ("sqlite", "postgresql")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A module marked ``both_backends`` runs each test that takes ``db_path`` on a SQLite
    file and on a PostgreSQL database; ``sqlite_only`` keeps a test on SQLite (it reads
    the file itself, or measures what only SQLite does)."""
    if "db_path" not in metafunc.fixturenames:
        return
    if metafunc.definition.get_closest_marker("both_backends") is None:
        return
    if metafunc.definition.get_closest_marker("sqlite_only") is not None:
        return
    metafunc.parametrize("backend", BACKENDS, indirect=True)


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> str:
    """Which backend the test's store is on: SQLite unless parametrised."""
    return str(getattr(request, "param", "sqlite"))


@pytest.fixture
def db_path(tmp_path: Path, backend: str, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh, empty store for one test: a SQLite file (WAL) copied from one migrated once
    per worker, or the worker's PostgreSQL database emptied after each test. A test that
    builds a store of an older schema by hand takes ``empty_path`` instead."""
    if backend == "sqlite":
        path = tmp_path / "escalations.db"
        shutil.copyfile(request.getfixturevalue("sqlite_template"), path)
        yield str(path)
        return
    database: ReusedDatabase = request.getfixturevalue("reused_database")
    try:
        yield database.url
    finally:
        database.reset()


@pytest.fixture(scope="session")
def reused_database(pg_server: pg.PgServer, migrated_template: str) -> Iterator[ReusedDatabase]:
    """The worker's one migrated PostgreSQL database, for the tests that take ``db_path``."""
    database = ReusedDatabase(pg_server, migrated_template)
    yield database
    database.close()


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated, empty SQLite store, closed (its WAL checkpointed): what a copy starts from."""
    path = tmp_path_factory.mktemp("template") / "escalations.db"

    async def open_and_close() -> None:
        store = await open_store(str(path))
        await store.close()

    anyio.run(open_and_close)
    return path


@pytest.fixture
def empty_path(tmp_path: Path) -> str:
    """Where a test's SQLite store will be: nothing there yet."""
    return str(tmp_path / "escalations.db")


def migrate_store(url: str) -> None:
    """Make the store at ``url`` and migrate it (what a template database is prepared with)."""

    async def open_and_close() -> None:
        store = await open_store(url)
        await store.close()

    anyio.run(open_and_close)


@pytest.fixture(scope="session")
def migrated_template(pg_server: pg.PgServer) -> str:
    """The name of the worker's template database holding a migrated, empty store."""
    pg_server.make_template("store_template", migrate_store, default=False)
    return "store_template"


@pytest.fixture(scope="session")
def pg_server() -> Iterator[pg.PgServer]:
    """A real PostgreSQL server for this session (each xdist worker starts its own, the first
    time one of its tests asks), stopped at the session's end, also when tests failed.

    No PostgreSQL on the machine is a failure, never a skip: a skipped backend would read as
    a tested one.
    """
    with own_pg_server() as server:
        yield server


@contextmanager
def own_pg_server(settings: tuple[str, ...] = pg.SPEED_OVER_SAFETY) -> Iterator[pg.PgServer]:
    """A real PostgreSQL server started with ``settings`` and stopped on the way out (the
    session's, or a module's own that its tests stop, kill or fill); none on the machine
    fails the test."""
    bindir = pg.find_bindir()
    if bindir is None:
        pytest.fail(pg.missing_message(), pytrace=False)
    with pg.running(bindir, settings) as server:
        yield server


@contextmanager
def database_of(server: pg.PgServer) -> Iterator[str]:
    """The URL of a new database on a module's own ``server``, started again first if a failed
    test left it down, and dropped after."""
    if server.postmaster_pid() is None:
        pg.start_again(server)
    name = server.create_database()
    try:
        yield server.url(name)
    finally:
        server.drop_database(name)


@pytest.fixture
def pg_url(pg_server: pg.PgServer) -> Iterator[str]:
    """``postgresql://`` URL of a new database of one test's own (~50 ms), dropped after it."""
    name = pg_server.create_database()
    try:
        yield pg_server.url(name)
    finally:
        pg_server.drop_database(name)


def make_settings(db_path: str, role: Role = "agent", **extra: Any) -> Settings:
    """Settings for a test server on ``db_path`` with the project at PROJECT."""
    return Settings(db_path=db_path, role=role, project_root=PROJECT, **extra)


@asynccontextmanager
async def connect(
    db_path: str, role: Role = "agent", *, mode: str = "auto", clock: Any = None, **extra: Any
) -> AsyncIterator[Agent]:
    """An in-memory SDK client connected to a real server on ``db_path``."""
    settings = make_settings(db_path, role, **extra)
    server = build_server(settings, clock) if clock else build_server(settings)
    async with Client(server, mode=mode) as client:  # type: ignore[arg-type]
        yield Agent(client)


def evidence_of(escalation: dict[str, Any], trigger_type: str) -> dict[str, Any]:
    """The facts behind the escalation's (one) trigger of ``trigger_type``: they are held once,
    in ``context.evidence`` under the trigger's key."""
    [trigger] = [t for t in escalation["triggers"] if t["type"] == trigger_type]
    facts: dict[str, Any] = escalation["context"]["evidence"][trigger["key"]]
    return facts
