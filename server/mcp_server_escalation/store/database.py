"""One transaction mechanism for both backends, over two kinds of connection.

Design:
- A transaction is one synchronous function of a connection (``fn(conn)``), run whole in a
  thread that alone uses that connection meanwhile: BEGIN, ``fn``, COMMIT or ROLLBACK are
  one trip from the event loop and back. The event loop never runs a statement, so a slow
  query, an index rebuild or a lock another process holds stalls no other client. The
  repositories are synchronous functions of the connection, written once for both backends.
- What differs is the kind of connection (``Connections``): where a transaction's thread and
  connection come from, and how long it may wait for them (SQLite: aiosqlite's thread per
  connection, one writer and readers as reads need them, ``db.py``; PostgreSQL: psycopg's
  pools in anyio's worker threads, ``postgres/database.py``), how BEGIN and COMMIT are said,
  and which aborted transactions may run again.
- Everything else is here, once: the transaction (``transact``: begin, run, end, roll back
  on any error, run again whole when the backend aborted it for a conflict), the schema
  version, the refusal of a store newer than this version, migrations (each applied in one
  transaction with its record, so a process killed midway leaves whole migrations only) and
  opening (a store that fails to open is closed before the error is raised).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Generic, Protocol, TypeVar

from .. import deadlines
from ..errors import StoreError
from .migrations import Migration

log = logging.getLogger(__name__)

T = TypeVar("T")
C = TypeVar("C")
# Migrating may rewrite a large table: its own bound, not a tool call's (where a backend
# bounds its operations at all).
MIGRATION_SECONDS = 600.0


class Connections(Protocol[C]):
    """A kind of connection: where a transaction runs, and the dialect of its few
    statements of its own. The synchronous methods run in the transaction's thread."""

    location: str  # the store, as messages show it
    schema_name: str  # what its migrations are called in messages
    migrations: tuple[Migration, ...]
    migrations_table: str  # the DDL of ``schema_migrations``
    retries: int  # how often a transaction runs at most
    call_seconds: float  # the longest a call waits for this store, in all (docs/architecture.md)
    empty_is_absent: bool  # does an unmigrated store mean "no store here"?
    open_errors: tuple[type[Exception], ...]  # what opening reports as a store error

    async def run(self, fn: Callable[[C], T], *, write: bool, reader: bool, seconds: float | None) -> T:
        """``transact(self, conn, fn, write=write)`` in a thread, on a reader's connection
        if ``reader`` else a writer's, within ``seconds`` (None: the backend's own bound)."""
        ...

    async def listen_for_changes(self, heard: Callable[[], None]) -> None: ...
    async def close(self) -> None: ...
    def begin(self, conn: C, *, write: bool) -> None: ...
    def end(self, conn: C, *, write: bool) -> None:
        """COMMIT a write, ROLLBACK a read."""
        ...

    def abandon(self, conn: C) -> None:
        """Roll back whatever the failed transaction left open."""
        ...

    def may_retry(self, conn: C, error: Exception) -> bool:
        """Did the backend abort the transaction whole, so that running it again is safe?"""
        ...

    def has_migrations_table(self, conn: C) -> bool: ...
    def before_migration(self, conn: C) -> None: ...
    def run_ddl(self, conn: C, statement: str) -> None: ...


def transact(kind: Connections[C], conn: C, fn: Callable[[C], T], *, write: bool) -> T:
    """One whole transaction: ``fn`` between BEGIN and COMMIT (ROLLBACK for a read and on any
    error), run again when the backend aborted it for a conflict (nothing of it was kept)."""
    for attempt in range(kind.retries):
        try:
            return _once(kind, conn, fn, write=write)
        except Exception as exc:
            if attempt == kind.retries - 1 or not kind.may_retry(conn, exc):
                raise
            log.info("store %s: transaction run again after %s", kind.location, type(exc).__name__)
    raise AssertionError("unreachable")  # pragma: no cover


def _once(kind: Connections[C], conn: C, fn: Callable[[C], T], *, write: bool) -> T:
    kind.begin(conn, write=write)
    try:
        result = fn(conn)
        kind.end(conn, write=write)
    except BaseException:
        # A COMMIT that failed (or a full disk) may leave the transaction open: end it, or
        # every later BEGIN of this connection fails.
        kind.abandon(conn)
        raise
    return result


class Database(Generic[C]):
    """The process's store on one kind of connection: ``write(fn)``, ``read(fn)``, versions
    and migrations."""

    def __init__(self, connections: Connections[C]) -> None:
        self.connections = connections
        self.path = connections.location
        self.call_seconds = connections.call_seconds

    async def opened(self, *, create: bool) -> None:
        """Migrate (refusing a store this version cannot read); on any failure, close first.

        ``create`` false refuses a store nobody has set up."""
        try:
            await self._migrate_or_refuse(create=create)
        except self.connections.open_errors as exc:
            await self.close()
            raise StoreError(f"store {self.path}: {exc}") from exc
        except BaseException:
            await self.close()
            raise

    async def _migrate_or_refuse(self, *, create: bool) -> None:
        if not create and self.connections.empty_is_absent and await self.schema_version(reader=False) == 0:
            raise StoreError(f"store {self.path} holds no escalation store yet: run a server on it first")
        await self.migrate()

    async def write(self, fn: Callable[[C], T]) -> T:
        """Run ``fn`` in a write transaction; commit, or roll back on error."""
        result = await self.connections.run(fn, write=True, reader=False, seconds=None)
        deadlines.wrote()  # the call is recorded, at least in part, whatever comes after
        return result

    async def read(self, fn: Callable[[C], T]) -> T:
        """Run ``fn`` on one consistent snapshot; nothing it does is kept."""
        return await self.connections.run(fn, write=False, reader=True, seconds=None)

    async def schema_version(self, *, reader: bool = True) -> int:
        """The highest migration applied to this store."""
        version = functools.partial(current_version, self.connections)
        return await self.connections.run(version, write=False, reader=reader, seconds=None)

    async def migrate(self) -> list[int]:
        """Apply every pending migration, each in its own transaction with its record."""
        kind = self.connections
        current = await self.schema_version(reader=False)  # opening a store opens no reader
        latest = kind.migrations[-1].version
        if current > latest:
            raise StoreError(newer_schema(self.path, kind.schema_name, current, latest))
        applied: list[int] = []
        for migration in kind.migrations:
            if migration.version <= current:
                continue  # the common case, every one of them: one read, no write lock
            apply = functools.partial(_apply, kind, migration)
            if await kind.run(apply, write=True, reader=False, seconds=MIGRATION_SECONDS):
                applied.append(migration.version)
                log.info("applied migration %03d %s (%s)", migration.version, migration.name, kind.location)
        return applied

    async def listen_for_changes(self, heard: Callable[[], None]) -> None:
        """Call ``heard`` at every change another process commits (where the backend says so)."""
        await self.connections.listen_for_changes(heard)

    async def close(self) -> None:
        """Close every connection once its work is done."""
        await self.connections.close()


def newer_schema(location: str, schema_name: str, version: int, latest: int) -> str:
    """Why a store of a schema newer than this version's is refused."""
    # Its tables may mean what this version does not know (a column it never fills, a
    # status it never sets): reading would mislead and writing would break it.
    return (
        f"store {location} has {schema_name} version {version}, written by a newer version of"
        f" mcp-server-escalation; this version knows schema version {latest}."
        " Upgrade mcp-server-escalation (or give another store); the store was left unchanged"
    )


def current_version(kind: Connections[Any], conn: Any) -> int:
    """The highest migration applied (0 for a store nothing has migrated)."""
    if not kind.has_migrations_table(conn):
        return 0
    row = conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").fetchone()
    return int(row[0]) if row else 0


def _apply(kind: Connections[Any], migration: Migration, conn: Any) -> bool:
    kind.before_migration(conn)
    conn.execute(kind.migrations_table)
    if migration.version <= current_version(kind, conn):
        return False  # another process applied it first
    # Statements one by one, as written: SQLite's executescript() would COMMIT behind our
    # back, and PostgreSQL's DDL has no placeholders to rewrite.
    for statement in migration.statements:
        kind.run_ddl(conn, statement)
    conn.execute(
        "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
        (migration.version, migration.name, _utc_now()),
    )
    return True


def _utc_now() -> str:
    now = datetime.now(UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"
