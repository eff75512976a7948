"""The SQLite connection, its PRAGMAs, transactions and migrations.

Design:
- One ``aiosqlite`` connection per process, in autocommit mode (``isolation_level=None``)
  so that every transaction is explicit: ``BEGIN IMMEDIATE`` for read-modify-write (it takes
  the write lock up front, so two processes never both read a counter and both write it),
  ``BEGIN`` for multi-statement reads (one consistent snapshot).
- WAL, so readers never block the writer and the CLI can read while agents write;
  ``synchronous=NORMAL`` is durable against a killed process (what SPEC 7 asks), the
  busy timeout makes writers queue instead of failing with "database is locked".
- The connection is shared by every concurrent tool call of the process, and SQLite has
  one transaction per connection, so an ``anyio.Lock`` serialises transactions in-process.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiosqlite
import anyio

from ..errors import StoreError
from .migrations import MIGRATIONS

log = logging.getLogger(__name__)

# The handle repositories take; services pass it through without touching SQL.
Conn = aiosqlite.Connection

BUSY_TIMEOUT_MS = 30_000
# A transaction start that still finds the database busy after the busy timeout is retried
# this many times before the error reaches anyone (8 writers x 30 s is far beyond any run).
_BUSY_RETRIES = 5


def _make_parent(path: str) -> None:
    Path(path).expanduser().parent.mkdir(parents=True, exist_ok=True)


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


class Database:
    """The process's connection to one store file (or ``:memory:``)."""

    def __init__(self, conn: aiosqlite.Connection, path: str) -> None:
        self._conn = conn
        self._lock = anyio.Lock()
        self.path = path

    @classmethod
    async def open(cls, path: str) -> Database:
        """Open (creating if needed) and migrate the store at ``path``."""
        if path != ":memory:":
            await anyio.to_thread.run_sync(_make_parent, path)
        try:
            conn = await aiosqlite.connect(path, isolation_level=None)
        except sqlite3.Error as exc:
            raise StoreError(f"store {path}: {exc}") from exc
        conn.row_factory = aiosqlite.Row
        db = cls(conn, path)
        try:
            await conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            await conn.execute("PRAGMA foreign_keys = ON")
            if path != ":memory:":
                await db._set_wal()
                await conn.execute("PRAGMA synchronous = NORMAL")
            await db.migrate()
        except sqlite3.DatabaseError as exc:
            await conn.close()
            raise StoreError(f"store {path}: {exc}") from exc
        except BaseException:
            await conn.close()
            raise
        return db

    async def _set_wal(self) -> None:
        for attempt in range(_BUSY_RETRIES):
            try:
                await self._conn.execute("PRAGMA journal_mode = WAL")
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc) or attempt == _BUSY_RETRIES - 1:
                    raise
                await anyio.sleep(0.05 * (attempt + 1))
            else:
                return

    async def close(self) -> None:
        """Close the connection; WAL content is already durable."""
        await self._conn.close()

    async def _begin(self, statement: str) -> None:
        for attempt in range(_BUSY_RETRIES):
            try:
                await self._conn.execute(statement)
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc) or attempt == _BUSY_RETRIES - 1:
                    raise
                log.warning("store busy, retrying %s (attempt %d)", statement, attempt + 1)
                await anyio.sleep(0.05 * (attempt + 1))
            else:
                return

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[aiosqlite.Connection]:
        """A write transaction (``BEGIN IMMEDIATE``): commits on success, rolls back on error."""
        async with self._lock:
            await self._begin("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                await self._conn.execute("ROLLBACK")
                raise
            await self._conn.execute("COMMIT")

    @asynccontextmanager
    async def read(self) -> AsyncIterator[aiosqlite.Connection]:
        """A read-only snapshot: every query inside sees the same committed state."""
        async with self._lock:
            await self._begin("BEGIN")
            try:
                yield self._conn
            finally:
                await self._conn.execute("ROLLBACK")

    async def schema_version(self) -> int:
        """The highest migration applied to this store."""
        async with self.read() as conn:
            return await _current_version(conn)

    async def migrate(self) -> list[int]:
        """Apply every pending migration, each in its own transaction with its record."""
        applied: list[int] = []
        async with self.transaction() as conn:
            await conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
            )
        for migration in MIGRATIONS:
            async with self.transaction() as conn:
                if migration.version <= await _current_version(conn):
                    continue
                # Statements run one by one: executescript() would COMMIT behind our back.
                for statement in migration.statements:
                    await conn.execute(statement)
                await conn.execute(
                    "INSERT INTO schema_migrations (version, name, applied_at) "
                    "VALUES (?, ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
                    (migration.version, migration.name),
                )
                applied.append(migration.version)
                log.info("applied migration %03d %s", migration.version, migration.name)
        return applied


async def _current_version(conn: aiosqlite.Connection) -> int:
    async with conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations") as cur:
        row = await cur.fetchone()
    return int(row[0]) if row else 0
