"""The SQLite connection, its PRAGMAs, transactions and migrations.

Design:
- One ``sqlite3`` connection per process, in autocommit mode (``isolation_level=None``) so
  every transaction is explicit: ``BEGIN IMMEDIATE`` for read-modify-write (it takes the
  write lock up front, so two processes never both read a counter and both write it),
  ``BEGIN`` for multi-statement reads (one consistent snapshot).
- WAL, so readers never block the writer and the CLI can read while agents write;
  ``synchronous=NORMAL`` is durable against a killed process (what SPEC 7 asks).
- A transaction is one synchronous unit of work (``fn(conn)``). It runs on the event loop
  when the write lock is free at once, and in a worker thread, waiting up to the busy
  timeout, when another process holds it. Why not aiosqlite: it hands every statement to
  its thread and back (three hops for execute + fetch), and those hops, not SQLite, were
  two thirds of a tool call: 2.2-3.9x a no-op tool over stdio against SPEC 8's 1.5x
  (benchmarks/README.md). A whole transaction here costs 0.1-0.4 ms of SQLite work, so
  running it on the loop blocks nothing noticeably, and a contended lock never does.
- The connection is shared by every concurrent tool call of the process and SQLite has one
  transaction per connection, so an ``anyio.Lock`` serialises transactions in-process.
- A write the file or the disk refuses (a read-only store, a full disk) is rolled back
  whole and raised as ``StoreUnwritable``, which says what is wrong and who can fix it;
  the connection stays usable, so reads go on and writes work again once fixed.
- A store whose schema is newer than the latest migration here was written by a newer
  version: it is refused at open, before anything reads or writes it.
"""

from __future__ import annotations

import functools
import logging
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import anyio
import anyio.to_thread

from ..errors import StoreError, StoreUnwritable
from ..rules.fingerprint import message_key
from . import search_index
from .files import companion_of
from .migrations import MIGRATIONS, Migration

log = logging.getLogger(__name__)

# The handle repositories take; services pass it through without touching SQL.
Conn = sqlite3.Connection
T = TypeVar("T")

# The oldest SQLite the store runs on: every write answers with RETURNING (3.35.0). The
# suite runs on the SQLite of the machine it runs on (3.40.1 on Debian 12).
MINIMUM_SQLITE = (3, 35, 0)

BUSY_TIMEOUT_MS = 30_000
# How long a new store may take to switch to WAL while other processes create it too.
WAL_SWITCH_SECONDS = 30.0
# A transaction start that still finds the database busy after the busy timeout is retried
# this many times before the error reaches anyone (8 writers x 30 s is far beyond any run).
_BUSY_RETRIES = 5


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def _is_busy_error(exc: sqlite3.DatabaseError) -> bool:
    return isinstance(exc, sqlite3.OperationalError) and _is_busy(exc)


def _unwritable(exc: sqlite3.DatabaseError, path: str) -> StoreUnwritable | None:
    """The error that says what the operator must fix, when the file or disk refused a write."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is None:
        return None
    kept = "nothing of this call was recorded (reading still works): tell the operator"
    if code == sqlite3.SQLITE_READONLY_DBMOVED:
        return StoreUnwritable(f"the store file {path} was moved or deleted while in use; {kept}")
    if code & 0xFF == sqlite3.SQLITE_READONLY:
        return StoreUnwritable(
            f"the store {path} is read-only (its file, folder or file system refuses writes); {kept}"
        )
    if code & 0xFF == sqlite3.SQLITE_FULL:
        return StoreUnwritable(f"the disk is full: the store {path} cannot grow; {kept}")
    return None


def _connect(path: str, *, create: bool) -> sqlite3.Connection:
    if sqlite3.sqlite_version_info < MINIMUM_SQLITE:
        raise StoreError(
            f"store {path}: this Python's SQLite is {sqlite3.sqlite_version}; the store needs"
            f" {'.'.join(map(str, MINIMUM_SQLITE))} or newer"
        )
    owner = companion_of(path) if path != ":memory:" else None
    if owner is not None:
        # SQLite would take it for a store of its own and write pages into another store's
        # live file (an empty WAL looks like an empty database).
        store, what = owner
        raise StoreError(
            f"store {path}: {path} belongs to the store {store} (its {what}); give the store's own path"
        )
    try:
        if path == ":memory:":
            conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        elif create:
            Path(path).expanduser().parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        else:
            # mode=rw: SQLite itself refuses to create the file, whatever happened to it since
            # the caller looked.
            uri = f"{Path(path).expanduser().absolute().as_uri()}?mode=rw"
            conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
    except (sqlite3.Error, OSError) as exc:
        raise StoreError(f"store {path}: {exc}") from exc
    conn.row_factory = sqlite3.Row
    # Migration 6 fills the key of records written before it with the same function.
    conn.create_function("escalation_message_key", 1, message_key, deterministic=True)
    return conn


class Database:
    """The process's connection to one store file (or ``:memory:``)."""

    def __init__(self, conn: sqlite3.Connection, path: str) -> None:
        self._conn = conn
        # Held across a whole transaction. On the fast path the transaction runs on the
        # loop without awaiting, so the lock is free whenever a call arrives (unless one is
        # waiting for another process in a worker thread): taking it need not yield to the
        # loop, which cost each tool call a trip around the event loop.
        self._lock = anyio.Lock(fast_acquire=True)
        self.path = path

    @classmethod
    async def open(cls, path: str, *, create: bool = True) -> Database:
        """Open and migrate the store at ``path``; create it (and its folders) only if ``create``."""
        # Opening is quick local work done once before the first request, so it runs on the
        # loop; a thread hop here would only add start-up time (SPEC 8 cold start).
        conn = _connect(path, create=create)
        db = cls(conn, path)
        try:
            db._configure()
            await db.migrate()
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise StoreError(f"store {path}: {exc}") from exc
        except BaseException:
            conn.close()
            raise
        return db

    def _configure(self) -> None:
        self._conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        self._conn.execute("PRAGMA foreign_keys = ON")
        if self.path != ":memory:":
            self._enable_wal()
            self._conn.execute("PRAGMA synchronous = NORMAL")
        self._conn.execute("PRAGMA busy_timeout = 0")

    def _enable_wal(self) -> None:
        """Switch a new store to WAL, also when several processes create it at once.

        SQLite answers "database is locked" to this PRAGMA at once, without its busy
        timeout, while another connection writes a store that is not in WAL mode yet; so
        wait and retry (start-up only, before any request is served), and accept the store
        as soon as another process has switched it.
        """
        deadline = time.monotonic() + WAL_SWITCH_SECONDS
        delay = 0.01
        while True:
            try:
                mode = self._conn.execute("PRAGMA journal_mode = WAL").fetchone()
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc) or time.monotonic() > deadline:
                    raise
                log.warning("store busy while switching to WAL, retrying in %.2f s", delay)
                time.sleep(delay)
                delay = min(delay * 2, 0.5)
                continue
            if mode is not None and str(mode[0]).lower() == "wal":
                return
            raise sqlite3.OperationalError(f"journal_mode stayed {mode[0] if mode else None!r}")

    async def close(self) -> None:
        """Close the connection; WAL content is already durable."""
        async with self._lock:
            self._conn.close()

    def _run(self, begin: str, fn: Callable[[Conn], T], *, commit: bool) -> T:
        """BEGIN, ``fn(conn)``, then COMMIT (or ROLLBACK for reads and on any error)."""
        self._conn.execute(begin)
        try:
            result = fn(self._conn)
            self._conn.execute("COMMIT" if commit else "ROLLBACK")
        except BaseException:
            # A full disk may have rolled the transaction back already, and a COMMIT that
            # failed leaves it open: end it either way, or every later BEGIN of this
            # connection fails.
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            raise
        return result

    def _run_waiting(self, begin: str, fn: Callable[[Conn], T], *, commit: bool) -> T:
        """The same, in a worker thread, waiting for the lock up to the busy timeout."""
        self._conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        try:
            for attempt in range(_BUSY_RETRIES):
                try:
                    return self._run(begin, fn, commit=commit)
                except sqlite3.OperationalError as exc:
                    if not _is_busy(exc) or attempt == _BUSY_RETRIES - 1 or self._conn.in_transaction:
                        raise
                    log.warning("store busy after %d ms, retrying", BUSY_TIMEOUT_MS)
            raise AssertionError("unreachable")  # pragma: no cover
        finally:
            self._conn.execute("PRAGMA busy_timeout = 0")

    async def _transact(self, begin: str, fn: Callable[[Conn], T], *, commit: bool) -> T:
        try:
            return await self._transact_repairing(begin, fn, commit=commit)
        except sqlite3.DatabaseError as exc:
            refused = _unwritable(exc, self.path)
            if refused is None:
                raise
            log.warning("store %s refused a write: %s", self.path, exc)
            raise refused from exc

    async def _transact_repairing(self, begin: str, fn: Callable[[Conn], T], *, commit: bool) -> T:
        async with self._lock:
            try:
                return await self._attempt(begin, fn, commit=commit)
            except sqlite3.DatabaseError as exc:
                # A damaged index shows itself as "malformed", "vtable constructor failed", or
                # even a failed constraint of its own tables: any store error is checked for it.
                if (
                    _is_busy_error(exc)
                    or _unwritable(exc, self.path)
                    or not await self._repair_search_index(exc)
                ):
                    raise
            # The damage was the search index's, and it is rebuilt: the same work again.
            return await self._attempt(begin, fn, commit=commit)

    async def _attempt(self, begin: str, fn: Callable[[Conn], T], *, commit: bool) -> T:
        try:
            # Fast path: the lock is free (busy_timeout is 0 here), run on the loop.
            return self._run(begin, fn, commit=commit)
        except sqlite3.OperationalError as exc:
            if not _is_busy(exc) or self._conn.in_transaction:
                raise
        # Another process holds the lock: wait for it off the event loop.
        return await anyio.to_thread.run_sync(lambda: self._run_waiting(begin, fn, commit=commit))

    async def _repair_search_index(self, error: sqlite3.DatabaseError) -> bool:
        """Rebuild the search index if it is what SQLite found damaged; was it?

        The index is derived from the failure records, so a damaged one costs a rebuild (a
        second or two for 100,000 records, off the event loop), never a failed tool call.
        Damage anywhere else is not ours to repair: the caller raises it.
        """
        try:
            repair = await anyio.to_thread.run_sync(
                lambda: self._run_waiting("BEGIN IMMEDIATE", search_index.repair_if_damaged, commit=True)
            )
        except sqlite3.Error as check_error:
            # No index to check (a store still being migrated) or a store too damaged to
            # check: the original error is the one to report.
            log.debug("store %s: the search index could not be checked: %s", self.path, check_error)
            return False
        if repair.damage is None:
            if search_index.is_corruption(error):
                log.error("store %s is damaged outside the search index: %s", self.path, error)
            return False
        log.warning(
            "store %s: the search index was damaged (%s); rebuilt from the failure records in %.2f s",
            self.path,
            repair.damage,
            repair.seconds,
        )
        return True

    async def write(self, fn: Callable[[Conn], T]) -> T:
        """Run ``fn`` in a write transaction (``BEGIN IMMEDIATE``); commit, or roll back on error."""
        return await self._transact("BEGIN IMMEDIATE", fn, commit=True)

    async def read(self, fn: Callable[[Conn], T]) -> T:
        """Run ``fn`` on one consistent snapshot; nothing it does is kept."""
        return await self._transact("BEGIN", fn, commit=False)

    async def schema_version(self) -> int:
        """The highest migration applied to this store."""
        return await self.read(_current_version)

    async def migrate(self) -> list[int]:
        """Apply every pending migration, each in its own transaction with its record."""
        applied: list[int] = []
        current = await self.read(_current_version)
        if current > MIGRATIONS[-1].version:
            raise StoreError(newer_schema(self.path, current))
        if current == MIGRATIONS[-1].version:
            return applied  # the common case: one read, no write lock
        await self.write(_create_migrations_table)
        for migration in MIGRATIONS:
            if await self.write(functools.partial(_apply, migration)):
                applied.append(migration.version)
                log.info("applied migration %03d %s", migration.version, migration.name)
        return applied


def newer_schema(path: str, version: int) -> str:
    """Why a store of a schema newer than this version's is refused."""
    # Its tables may mean what this version does not know (a column it never fills, a
    # status it never sets): reading would mislead and writing would break it.
    return (
        f"store {path} has schema version {version}, written by a newer version of"
        f" mcp-server-escalation; this version knows schema version {MIGRATIONS[-1].version}."
        " Upgrade mcp-server-escalation (or give another store); the store was left unchanged"
    )


def _create_migrations_table(conn: Conn) -> None:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
    )


def _apply(migration: Migration, conn: Conn) -> bool:
    if migration.version <= _current_version(conn):
        return False  # another process applied it first
    # Statements run one by one: executescript() would COMMIT behind our back.
    for statement in migration.statements:
        conn.execute(statement)
    conn.execute(
        "INSERT INTO schema_migrations (version, name, applied_at) "
        "VALUES (?, ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
        (migration.version, migration.name),
    )
    return True


def _current_version(conn: Conn) -> int:
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
    ).fetchone()
    if not exists:
        return 0
    row = conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").fetchone()
    return int(row[0]) if row else 0
