"""The store on PostgreSQL: the same ``write(fn)`` / ``read(fn)`` as on SQLite.

Design:
- A transaction is one synchronous function of a connection (``fn(conn)``), run whole in a
  thread that alone uses that connection at the time: BEGIN, ``fn``, COMMIT or ROLLBACK, one
  trip from the event loop and back, as on SQLite. psycopg's synchronous connection keeps
  every repository one function for both backends.
- Writes run at READ COMMITTED on the process's writer connection, one after another.
  What SQLite gets from its single writer, PostgreSQL gets from row locks: a write reads the
  task or escalation it will change ``FOR UPDATE`` (``store.sql.for_update``), so two
  servers that count on one task wait for each other instead of losing an update, and never
  both open an escalation for it. A transaction PostgreSQL aborts as a deadlock or a
  serialization failure is run again, whole.
- Reads run on reader connections (up to ``READERS`` at once) in REPEATABLE READ, READ ONLY
  transactions: one consistent snapshot, like a SQLite read.
- Migrations are PostgreSQL's own (``postgres/migrations.py``), applied under a
  transaction-scoped advisory lock, so servers starting together migrate once.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any, TypeVar, cast
from urllib.parse import urlsplit, urlunsplit

import anyio
import anyio.to_thread
import psycopg
from psycopg import errors

from ...errors import StoreError
from ..migrations import Migration
from .connection import PgConn
from .migrations import CHANGE_CHANNEL, MIGRATIONS

log = logging.getLogger(__name__)
T = TypeVar("T")

READERS = 4
# A transaction PostgreSQL aborted to resolve a conflict is run again up to this many times.
_RETRIES = 5
_RETRIED = (errors.SerializationFailure, errors.DeadlockDetected)
_BEGIN_READ = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
_BEGIN_WRITE = "BEGIN ISOLATION LEVEL READ COMMITTED"
# How long a listener whose connection was lost waits before it connects again.
_LISTEN_RETRY_SECONDS = 5.0
# Any fixed number: the lock servers take while one of them migrates.
_MIGRATION_LOCK = 0x65736361


def shown(url: str) -> str:
    """The URL as messages and logs show it: without its password."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def _connect(url: str) -> PgConn:
    try:
        raw = psycopg.connect(url, autocommit=True, application_name="mcp-server-escalation")
    except psycopg.Error as exc:
        raise StoreError(f"store {shown(url)}: {exc}".strip()) from exc
    return PgConn(raw, shown(url))


class PgWorker:
    """One connection whose every use runs in a worker thread, one function at a time."""

    def __init__(self, conn: PgConn) -> None:
        self._conn = conn
        self._turn = anyio.CapacityLimiter(1)
        self.closed = False

    @classmethod
    async def open(cls, connect: Callable[[], PgConn]) -> PgWorker:
        with anyio.CancelScope(shield=True):
            conn = await anyio.to_thread.run_sync(connect)
        return cls(conn)

    async def run(self, fn: Callable[[PgConn], T]) -> T:
        if self.closed:
            raise StoreError("the store is closed")
        # Shielded: a caller cancelled mid-way must not go on while its transaction runs.
        with anyio.CancelScope(shield=True):
            result: Any = await anyio.to_thread.run_sync(fn, self._conn, limiter=self._turn)
        return cast(T, result)

    async def close(self) -> None:
        self.closed = True
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(self._conn.close, limiter=self._turn)


def transact(conn: PgConn, fn: Callable[[PgConn], T], *, write: bool) -> T:
    """One whole transaction, run again when PostgreSQL aborted it to resolve a conflict."""
    for attempt in range(_RETRIES):
        try:
            return _run(conn, fn, write=write)
        except _RETRIED as exc:
            if attempt == _RETRIES - 1:
                raise
            log.info("store %s: transaction retried after %s", conn.location, type(exc).__name__)
    raise AssertionError("unreachable")  # pragma: no cover


def _run(conn: PgConn, fn: Callable[[PgConn], T], *, write: bool) -> T:
    raw = conn.raw
    raw.execute(_BEGIN_WRITE if write else _BEGIN_READ)
    conn.locks_rows = write
    try:
        result = fn(conn)
        raw.execute("COMMIT" if write else "ROLLBACK")
    except BaseException:
        if raw.info.transaction_status != psycopg.pq.TransactionStatus.IDLE and not raw.closed:
            raw.execute("ROLLBACK")
        raise
    finally:
        conn.locks_rows = False
    return result


class PgDatabase:
    """The process's store in a PostgreSQL database: one writer, readers as reads need them."""

    def __init__(self, writer: PgWorker, url: str) -> None:
        from ..db import Readers  # noqa: PLC0415 (db imports this module lazily, by URL)

        self._writer = writer
        self._readers = Readers(READERS, lambda: PgWorker.open(functools.partial(_connect, url)))
        self.path = shown(url)
        self._url = url

    @classmethod
    async def open(cls, url: str, *, create: bool = True) -> PgDatabase:
        """Connect and migrate; ``create`` false refuses a database no server has set up."""
        writer = await PgWorker.open(functools.partial(_connect, url))
        db = cls(writer, url)
        try:
            await db._migrate_or_refuse(create=create)
        except psycopg.Error as exc:
            await db.close()
            raise StoreError(f"store {db.path}: {exc}") from exc
        except BaseException:
            await db.close()
            raise
        return db

    async def _migrate_or_refuse(self, *, create: bool) -> None:
        if not create and await self.schema_version() == 0:
            raise StoreError(f"store {self.path} holds no escalation store yet: run a server on it first")
        await self.migrate()

    async def listen_for_changes(self, heard: Callable[[], None]) -> None:
        """Call ``heard`` at every escalation change any server commits, until cancelled.

        On its own connection, in the event loop (psycopg's asynchronous one: a listener
        waits, it runs no transaction). A lost connection is opened again after a pause;
        meanwhile the callers' polling carries on, so nothing is missed, only later.
        """
        while True:
            try:
                await self._listen_once(heard)
            except psycopg.Error as exc:
                log.warning(
                    "store %s: listening for changes failed (%s); polling until it is back", self.path, exc
                )
                await anyio.sleep(_LISTEN_RETRY_SECONDS)

    async def _listen_once(self, heard: Callable[[], None]) -> None:
        conn = await psycopg.AsyncConnection.connect(self._url, autocommit=True)
        try:
            await conn.execute(f"LISTEN {CHANGE_CHANNEL}")
            heard()  # anything committed before the LISTEN is read now
            async for _ in conn.notifies():
                heard()
        finally:
            # Shielded: the listener ends by being cancelled, and its connection must close.
            with anyio.CancelScope(shield=True):
                await conn.close()

    async def close(self) -> None:
        await self._readers.close()
        await self._writer.close()

    async def write(self, fn: Callable[[Any], T]) -> T:
        """Run ``fn`` in a write transaction; commit, or roll back on error."""
        return await self._writer.run(functools.partial(transact, fn=fn, write=True))

    async def read(self, fn: Callable[[Any], T]) -> T:
        """Run ``fn`` on one consistent snapshot; nothing it does is kept."""
        return await self._readers.run(functools.partial(transact, fn=fn, write=False))

    async def schema_version(self) -> int:
        return await self._writer.run(functools.partial(transact, fn=_current_version, write=False))

    async def migrate(self) -> list[int]:
        """Apply every pending migration, all in one transaction under the migration lock."""
        current = await self.schema_version()
        if current > MIGRATIONS[-1].version:
            raise StoreError(newer_schema(self.path, current))
        if current == MIGRATIONS[-1].version:
            return []
        return await self.write(_migrate)


def _migrate(conn: PgConn) -> list[int]:
    conn.execute("SELECT pg_advisory_xact_lock(?)", (_MIGRATION_LOCK,))
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        " version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
    )
    applied = []
    for migration in MIGRATIONS:
        if migration.version > _current_version(conn):
            _apply(conn, migration)
            applied.append(migration.version)
            log.info("applied PostgreSQL migration %03d %s", migration.version, migration.name)
    return applied


def _apply(conn: PgConn, migration: Migration) -> None:
    for statement in migration.statements:
        conn.raw.execute(statement)  # DDL as written: no placeholders to rewrite
    conn.execute(
        "INSERT INTO schema_migrations (version, name, applied_at)"
        " VALUES (?, ?, to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'))",
        (migration.version, migration.name),
    )


def _current_version(conn: PgConn) -> int:
    if conn.execute("SELECT to_regclass('schema_migrations')").fetchone()[0] is None:
        return 0
    row = conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").fetchone()
    return int(row[0])


def newer_schema(location: str, version: int) -> str:
    """Why a store of a schema newer than this version's is refused."""
    return (
        f"store {location} has PostgreSQL schema version {version}, written by a newer version of"
        f" mcp-server-escalation; this version knows schema version {MIGRATIONS[-1].version}."
        " Upgrade mcp-server-escalation (or give another store); the store was left unchanged"
    )
