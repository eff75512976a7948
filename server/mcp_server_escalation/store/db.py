"""SQLite's connections, their PRAGMAs, and what SQLite alone adds to a transaction.

Design (the transaction mechanism itself is ``database.py``, shared with PostgreSQL):
- Each connection has a thread of its own (aiosqlite's; ``worker.py``) and a transaction is
  handed to it whole: BEGIN, ``fn``, COMMIT or ROLLBACK, the wait for another process's
  lock and the search-index repair are one trip to that thread and back.
- Connections are in autocommit mode (``isolation_level=None``) so every transaction is
  explicit: ``BEGIN IMMEDIATE`` for read-modify-write (it takes the write lock up front, so
  two processes never both read a counter and both write it), ``BEGIN`` for reads (one
  consistent snapshot).
- Writes go to the process's one writer connection, one after another in the order they
  came: SQLite lets one connection write at a time anyway. A write that finds the lock held
  by another process waits in the writer's thread, up to the busy timeout; only the writes
  after it wait with it.
- Reads go to reader connections, opened as concurrent reads need them (``READERS`` at
  most), so no read queues behind a waiting write or behind a slow read. WAL lets them read
  the last commit while another connection writes; a read that follows a write of this
  process sees it (the write has committed before it returns).
- WAL, so readers never block the writer and the CLI can read while agents write;
  ``synchronous=NORMAL`` is durable against a killed process.
- A write the file or the disk refuses (a read-only store, a full disk) is rolled back
  whole and raised as ``StoreUnwritable``, which says what is wrong and who can fix it;
  the connection stays usable, so reads go on and writes work again once fixed.
- A damaged full-text index is rebuilt from the records and the transaction run again.
"""

from __future__ import annotations

import functools
import logging
import sqlite3
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio

from .. import deadlines
from ..errors import StoreError, StoreUnavailable, StoreUnwritable
from ..rules.reading.fingerprint import message_key
from . import database, search_index
from .database import transact
from .files import companion_of
from .migrations import MIGRATIONS
from .worker import NotBegun, Worker, closed_error

log = logging.getLogger(__name__)

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
# Reads that run at once, each on a connection and thread of its own; one more waits for
# the first of them to end.
READERS = 4
# A call's deadline shortens a transaction's wait for the lock only when it leaves less than
# the connection's own wait by more than this: the common call, whose deadline is that wait
# itself, sets no PRAGMA twice per transaction, and overruns it by this much at most.
_DEADLINE_SLACK_SECONDS = 0.25


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
            conn = sqlite3.connect(path, isolation_level=None)
        elif create:
            Path(path).expanduser().parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(path, isolation_level=None)
        else:
            # mode=rw: SQLite itself refuses to create the file, whatever happened to it since
            # the caller looked.
            uri = f"{Path(path).expanduser().absolute().as_uri()}?mode=rw"
            conn = sqlite3.connect(uri, uri=True, isolation_level=None)
    except (sqlite3.Error, OSError) as exc:
        raise StoreError(f"store {path}: {exc}") from exc
    conn.row_factory = sqlite3.Row
    # Migration 6 fills the key of records written before it with the same function.
    conn.create_function("escalation_message_key", 1, message_key, deterministic=True)
    return conn


def _open(path: str, *, create: bool, busy_ms: int = BUSY_TIMEOUT_MS) -> sqlite3.Connection:
    """A configured connection to the store (run in the thread that will use it)."""
    conn = _connect(path, create=create)
    try:
        _configure(conn, path, busy_ms)
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise StoreError(f"store {path}: {exc}") from exc
    except BaseException:
        conn.close()
        raise
    return conn


def _configure(conn: sqlite3.Connection, path: str, busy_ms: int) -> None:
    # The store thread waits for another process's lock itself, up to the busy timeout.
    conn.execute(f"PRAGMA busy_timeout = {busy_ms}")
    conn.execute("PRAGMA foreign_keys = ON")
    if path != ":memory:":
        _enable_wal(conn)
        conn.execute("PRAGMA synchronous = NORMAL")


def _enable_wal(conn: sqlite3.Connection) -> None:
    """Switch a new store to WAL, also when several processes create it at once.

    SQLite answers "database is locked" to this PRAGMA at once, without its busy
    timeout, while another connection writes a store that is not in WAL mode yet; so
    wait and retry (at open, before any request is served), and accept the store as
    soon as another process has switched it.
    """
    deadline = time.monotonic() + WAL_SWITCH_SECONDS
    delay = 0.01
    while True:
        try:
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()
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


class SqliteConnections:
    """SQLite's connections: the process's one writer, readers as reads need them, each with
    its aiosqlite thread (``worker.py``).

    ``wait_seconds`` bounds how long a transaction waits for another process's lock, for a
    process whose caller has a timeout of its own (a hook run: the host's 15 s): past it the
    transaction fails as ``StoreUnavailable`` instead of being tried again. Without it a
    transaction waits up to the busy timeout, tried again ``_BUSY_RETRIES`` times.
    """

    schema_name = "schema"
    migrations = MIGRATIONS
    migrations_table = (
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
    )
    # SQLite's create=False opens only an existing file (mode=rw).
    empty_is_absent = False
    open_errors: tuple[type[Exception], ...] = (sqlite3.DatabaseError,)

    def __init__(self, writer: Worker, path: str, wait_seconds: float | None = None) -> None:
        self._writer = writer
        self._wait_seconds = wait_seconds
        self.call_seconds = BUSY_TIMEOUT_MS / 1000 if wait_seconds is None else wait_seconds
        self.retries = _BUSY_RETRIES if wait_seconds is None else 1
        # Two connections to ":memory:" would be two databases: there, reads take the writer.
        connect = functools.partial(_open, path, create=False, busy_ms=_busy_ms(wait_seconds))
        self._readers = None if path == ":memory:" else Readers(READERS, lambda: Worker.open(connect))
        self.location = path

    @classmethod
    async def open(cls, path: str, *, create: bool, wait_seconds: float | None) -> SqliteConnections:
        """The writer's connection opened (the file and its folders created only if ``create``)."""
        writer = await Worker.open(
            functools.partial(_open, path, create=create, busy_ms=_busy_ms(wait_seconds))
        )
        return cls(writer, path, wait_seconds)

    async def run(
        self,
        fn: Callable[[sqlite3.Connection], T],
        *,
        write: bool,
        reader: bool,
        seconds: float | None,  # noqa: ARG002 (SQLite bounds a wait by its busy timeout)
    ) -> T:
        job = functools.partial(self._guarded, fn, write)
        try:
            if reader and self._readers is not None:
                return await self._readers.run(job)
            return await self._writer.run(job)
        except NotBegun:
            # Queued behind other work past the call's deadline: nothing of it began.
            raise StoreUnavailable(
                self.location, "the call's time ran out before the store was free"
            ) from None

    def _guarded(self, fn: Callable[[sqlite3.Connection], T], write: bool, conn: sqlite3.Connection) -> T:
        """The transaction, the search index repaired if damaged; a write the file refused
        raised as ``StoreUnwritable``, a lock held past the wait (``wait_seconds``, or what is
        left of the call's deadline when that is less) as ``StoreUnavailable``."""
        wait = self._wait_seconds
        left = deadlines.seconds_left()
        shortened = left is not None and (wait is None or left < wait - _DEADLINE_SLACK_SECONDS)
        if shortened:
            assert left is not None
            if left <= 0:
                # Its turn came after the call's deadline (queued behind a write that waited
                # for the lock): nothing of it began.
                raise StoreUnavailable(self.location, "the call's time ran out before the store was free")
            wait = left
            conn.execute(f"PRAGMA busy_timeout = {_busy_ms(wait)}")
        try:
            return self._repairing(conn, fn, write=write)
        except sqlite3.DatabaseError as exc:
            refused = _unwritable(exc, self.location)
            if refused is not None:
                log.warning("store %s refused a write: %s", self.location, exc)
                raise refused from exc
            if wait is None or not _is_busy_error(exc):
                raise
            # Nothing of it was kept: the lock was never had, or the transaction rolled back.
            raise StoreUnavailable(
                self.location, f"another process held the store's lock longer than {wait:.3g} s"
            ) from exc
        finally:
            if shortened:
                conn.execute(f"PRAGMA busy_timeout = {_busy_ms(self._wait_seconds)}")

    def _repairing(
        self, conn: sqlite3.Connection, fn: Callable[[sqlite3.Connection], T], *, write: bool
    ) -> T:
        try:
            return transact(self, conn, fn, write=write)
        except sqlite3.DatabaseError as exc:
            # A damaged index shows itself as "malformed", "vtable constructor failed", or
            # even a failed constraint of its own tables: any store error is checked for it.
            if _is_busy_error(exc) or _unwritable(exc, self.location):
                raise
            if not self._repair_search_index(conn, exc):
                raise
        # The damage was the search index's, and it is rebuilt: the same work again.
        return transact(self, conn, fn, write=write)

    def _repair_search_index(self, conn: sqlite3.Connection, error: sqlite3.DatabaseError) -> bool:
        """Rebuild the search index if it is what SQLite found damaged; was it?

        The index is derived from the failure records, so a damaged one costs a rebuild (a
        second or two for 100,000 records, in the store thread), never a failed tool call.
        Damage anywhere else is not ours to repair: the caller raises it.
        """
        path = self.location
        try:
            repair = transact(self, conn, search_index.repair_if_damaged, write=True)
        except sqlite3.Error as check_error:
            # No index to check (a store still being migrated) or a store too damaged to
            # check: the original error is the one to report.
            log.debug("store %s: the search index could not be checked: %s", path, check_error)
            return False
        if repair.damage is None:
            if search_index.is_corruption(error):
                log.error("store %s is damaged outside the search index: %s", path, error)
            return False
        log.warning(
            "store %s: the search index was damaged (%s); rebuilt from the failure records in %.2f s",
            path,
            repair.damage,
            repair.seconds,
        )
        return True

    # The dialect: ``BEGIN IMMEDIATE`` takes the write lock up front, so two processes never
    # both read a counter and both write it; ``BEGIN`` reads one consistent snapshot.
    def begin(self, conn: sqlite3.Connection, *, write: bool) -> None:
        conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")

    def end(self, conn: sqlite3.Connection, *, write: bool) -> None:
        conn.execute("COMMIT" if write else "ROLLBACK")

    def abandon(self, conn: sqlite3.Connection) -> None:
        if conn.in_transaction:
            conn.execute("ROLLBACK")

    def may_retry(self, conn: sqlite3.Connection, error: Exception) -> bool:
        # The busy timeout ran out before the lock was free: nothing began, start again,
        # unless that would pass the call's deadline.
        left = deadlines.seconds_left()
        if left is not None and left <= _DEADLINE_SLACK_SECONDS:
            return False
        if isinstance(error, sqlite3.OperationalError) and _is_busy(error) and not conn.in_transaction:
            log.warning("store busy after %d ms, retrying", BUSY_TIMEOUT_MS)
            return True
        return False

    def has_migrations_table(self, conn: sqlite3.Connection) -> bool:
        found = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
        ).fetchone()
        return found is not None

    def before_migration(self, conn: sqlite3.Connection) -> None:
        """Nothing: the write transaction already holds the whole store."""

    def run_ddl(self, conn: sqlite3.Connection, statement: str) -> None:
        conn.execute(statement)

    async def listen_for_changes(self, heard: Callable[[], None]) -> None:
        """SQLite announces no changes: its readers poll (returns at once)."""

    async def close(self) -> None:
        """Close every connection once its work is done; WAL content is already durable."""
        if self._readers is not None:
            await self._readers.close()
        await self._writer.close()


class Database(database.Database[sqlite3.Connection]):
    """The process's store in a SQLite file (or ``:memory:``)."""

    @classmethod
    async def open(cls, path: str, *, create: bool = True, wait_seconds: float | None = None) -> Database:
        """Open and migrate the store at ``path``; create it (and its folders) only if ``create``."""
        db = cls(await SqliteConnections.open(path, create=create, wait_seconds=wait_seconds))
        await db.opened(create=create)
        return db


class Readers:
    """Connections for reads, opened as concurrent reads need them, at most ``count``."""

    def __init__(self, count: int, open_worker: Callable[[], Awaitable[Worker]]) -> None:
        self._open_worker = open_worker
        self._idle: list[Worker] = []
        self._opened: list[Worker] = []
        self._closed = False
        # Taking a free slot need not yield to the loop (a trip around it per read).
        self._slots = anyio.Semaphore(count, fast_acquire=True)

    async def run(self, job: Callable[[Any], T]) -> T:
        left = deadlines.seconds_left()
        if left is None:
            await self._slots.acquire()
            return await self._run_holding(job)
        # A free reader is waited for within the call's deadline, as a turn in a thread is.
        taken = False
        with anyio.move_on_after(max(left, 0.0)):
            await self._slots.acquire()
            taken = True
        if not taken:
            raise NotBegun
        return await self._run_holding(job)

    async def _run_holding(self, job: Callable[[Any], T]) -> T:
        """``job`` on an idle reader (or a new one), with a slot already taken; the slot freed after."""
        try:
            reader = self._idle.pop() if self._idle else await self._open()
            try:
                return await reader.run(job)
            finally:
                self._idle.append(reader)
        finally:
            self._slots.release()

    async def _open(self) -> Worker:
        if self._closed:
            raise closed_error()  # a thread opened now would outlive the store
        reader = await self._open_worker()
        if self._closed:  # closed while this one opened
            await reader.close()
            raise closed_error()
        self._opened.append(reader)
        return reader

    async def close(self) -> None:
        self._closed = True
        for reader in self._opened:
            await reader.close()


def _busy_ms(wait_seconds: float | None) -> int:
    return BUSY_TIMEOUT_MS if wait_seconds is None else max(1, round(wait_seconds * 1000))
