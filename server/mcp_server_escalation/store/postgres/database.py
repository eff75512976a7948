"""The store on PostgreSQL: its kind of connection for the one transaction mechanism.

Design (the mechanism itself, shared with SQLite, is ``store/database.py``):
- A transaction runs whole in one of anyio's worker threads on a pool's connection.
  psycopg's synchronous connection keeps every repository one function for both backends.
- Writes run at READ COMMITTED on the process's writer connections (one by default), in the
  order they came.
  What SQLite gets from its single writer, PostgreSQL gets from row locks: a write reads the
  task or escalation it will change ``FOR UPDATE`` (``store.sql.for_update``), so two
  servers that count on one task wait for each other instead of losing an update, and never
  both open an escalation for it. A transaction PostgreSQL aborts as a deadlock or a
  serialization failure is run again, whole.
- Reads run on reader connections (up to ``[store] readers`` at once) in REPEATABLE READ,
  READ ONLY transactions: one consistent snapshot, like a SQLite read.
- Connections come from psycopg's pool and come back after the database restarts or drops
  them; every operation ends within ``[store] operation_timeout_seconds`` (``pool.py``). A
  transaction whose connection broke before COMMIT is run again (nothing of it was kept).
  One whose session ended with COMMIT on its way (no answer, or "terminating connection"
  after the commit was applied) is asked after by its transaction id on a new session
  (``pg_xact_status``): committed, its outcome is the call's, never a second run; aborted,
  it is run again; when the database cannot say, the call says it may have been recorded.
- Migrations are PostgreSQL's own (``postgres/migrations.py``), each applied under a
  transaction-scoped advisory lock, so servers starting together migrate once.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import anyio
import anyio.to_thread
import psycopg
from psycopg import errors

from ... import deadlines
from ...errors import StoreError, StoreUnavailable
from ...models.store_config import StoreConfig
from .. import database
from ..database import MIGRATION_SECONDS, transact
from .connection import PgConn
from .migrations import CHANGE_CHANNEL, MIGRATIONS
from .pool import Broken, CommitUnknown, Stalled, StorePool, Watchdog, conninfo, health_of, lost

log = logging.getLogger(__name__)
T = TypeVar("T")

# A transaction PostgreSQL aborted to resolve a conflict is run again up to this many times.
_RETRIES = 5
_RETRIED = (errors.SerializationFailure, errors.DeadlockDetected)
# A transaction whose session ended before it committed (the database says so) is run again,
# up to this many runs in all, within the operation's bound.
_RUNS = 3
# What ``pg_xact_status`` says of a transaction that ended; and how often it is asked again
# while the transaction is still in progress on a session that lost its answer.
_COMMITTED = "committed"
_ABORTED = "aborted"
_STATUS_POLL_SECONDS = 0.05
_BEGIN_READ = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
_BEGIN_WRITE = "BEGIN ISOLATION LEVEL READ COMMITTED"
# How long a listener whose connection was lost waits before it connects again.
_LISTEN_RETRY_SECONDS = 1.0
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


def _end(raw: psycopg.Connection[Any], *, write: bool) -> None:
    if not write:
        raw.execute("ROLLBACK")
        return
    # Asked before COMMIT, on the same session: if the answer to COMMIT is lost, a new
    # session can still ask the database whether this transaction committed.
    row = raw.execute("SELECT pg_current_xact_id_if_assigned()::text").fetchone()
    xid = None if row is None else row[0]
    try:
        raw.execute("COMMIT")
    except psycopg.Error as exc:
        if lost(raw, exc):
            # The session ended with COMMIT on its way: the server may have applied it and
            # then lost its answer, or said "terminating connection" after applying it.
            # Only the transaction's status, asked anew, tells which.
            raise CommitUnknown(" ".join(str(exc).split()), xid) from exc
        raise


class PgConnections:
    """PostgreSQL's connections: a pool of writers and one of readers, used in anyio's worker
    threads, each operation within its bound."""

    schema_name = "PostgreSQL schema"
    migrations = MIGRATIONS
    migrations_table = (
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        " version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
    )
    retries = _RETRIES
    # A database is there before any server sets it up: only its schema says it is a store.
    empty_is_absent = True
    open_errors: tuple[type[Exception], ...] = (psycopg.Error,)

    def __init__(self, url: str, config: StoreConfig) -> None:
        self.location = shown(url)
        self._config = config
        self.call_seconds = config.operation_timeout_seconds
        self._info = conninfo(url, config)
        self._health = health_of(self.location)
        self._watchdog = Watchdog()
        self._writers = StorePool(
            "writers", self._info, config.writers, self._health, self._watchdog, self.location
        )
        self._readers = StorePool(
            "readers", self._info, config.readers, self._health, self._watchdog, self.location
        )
        # Callers take turns here, in the order they came, before a pool's connection, as
        # the single writer queued writes before; the wait counts in the operation's bound.
        self._write_turn = anyio.CapacityLimiter(config.writers)
        self._read_turn = anyio.CapacityLimiter(config.readers)
        self.closed = False
        # No connection is made by this: the pools connect as calls need them.
        self._writers.open()
        self._readers.open()

    async def listen_for_changes(self, heard: Callable[[], None]) -> None:
        """Call ``heard`` at every escalation change any server commits, until cancelled.

        On its own connection, in the event loop (psycopg's asynchronous one: a listener
        waits, it runs no transaction). A lost connection is opened again after a pause;
        meanwhile the callers' polling carries on, so nothing is missed, only later. One log
        line when it is lost, not one per attempt while the database is down.
        """
        lost = False
        while True:
            try:
                await self._listen_once(heard)
            except psycopg.Error as exc:
                if not lost:
                    # Info: the store logs an outage of the database itself once, as a warning.
                    log.info(
                        "store %s: listening for changes failed (%s); polling until it is back",
                        self.location,
                        exc,
                    )
                lost = True
                await anyio.sleep(_LISTEN_RETRY_SECONDS)
            else:
                lost = False

    async def _listen_once(self, heard: Callable[[], None]) -> None:
        conn = await psycopg.AsyncConnection.connect(self._info, autocommit=True)
        try:
            await conn.execute(f"LISTEN {CHANGE_CHANNEL}")
            heard()  # anything committed before the LISTEN is read now (also after a loss)
            async for _ in conn.notifies():
                heard()
        finally:
            # Shielded: the listener ends by being cancelled, and its connection must close.
            with anyio.CancelScope(shield=True):
                await conn.close()

    async def close(self) -> None:
        self.closed = True
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(self._close_pools)

    def _close_pools(self) -> None:
        self._readers.close()
        self._writers.close()
        self._watchdog.close()

    async def run(self, fn: Callable[[PgConn], T], *, write: bool, reader: bool, seconds: float | None) -> T:
        """``fn`` in a transaction on a connection of a pool, in a worker thread, within
        ``seconds`` (the operation timeout when None) from the call, its turn included."""
        if self.closed:
            raise StoreError("the store is closed")
        pool, turn = (self._readers, self._read_turn) if reader else (self._writers, self._write_turn)
        bound = self._config.operation_timeout_seconds if seconds is None else seconds
        left = deadlines.seconds_left()
        if seconds is None and left is not None and left < bound:
            # What is left of the call's deadline: the operations before this one (and the
            # turns they waited for) count in it.
            if left <= 0:
                raise StoreUnavailable(self.location, "the call's time ran out before the store answered")
            bound = left
        # The bound runs from the call, its wait for a turn included: behind a write that the
        # database stalls, a queued call would otherwise wait out that write's bound and then
        # its own.
        deadline = time.monotonic() + bound
        # Shielded: a caller cancelled mid-way must not go on while its transaction runs (it
        # ends by its deadline in any case).
        with anyio.CancelScope(shield=True):
            turn_came = False
            with anyio.move_on_after(bound):
                await turn.acquire()
                turn_came = True
            if not turn_came:
                # Nothing was sent: the database was not even asked.
                raise StoreUnavailable(self.location, f"no connection was free within {bound:g} s")
            try:
                job = functools.partial(self._attempts, pool, fn, write, deadline, bound)
                result = await anyio.to_thread.run_sync(job)
            finally:
                turn.release()
        return result

    def _attempts(
        self, pool: StorePool, fn: Callable[[Any], T], write: bool, deadline: float, bound: float
    ) -> T:
        """The transaction, run again only when the database says nothing of it was kept."""
        outcome: list[T] = []  # what the latest run of ``fn`` returned

        def kept(conn: Any) -> T:
            result = fn(conn)
            outcome[:] = [result]
            return result

        job = functools.partial(transact, self, fn=kept, write=write)
        began = deadline - bound
        unavailable = functools.partial(self._unavailable, began=began)
        for attempt in range(1, _RUNS + 1):
            last = attempt == _RUNS or time.monotonic() >= deadline
            try:
                return pool.run(job, deadline)
            except Broken as broken:
                # Safe to run again: the connection ended before COMMIT was sent, and
                # PostgreSQL keeps nothing of a transaction whose session ended uncommitted.
                if last:
                    raise unavailable(str(broken)) from broken
            except CommitUnknown as unknown:
                status = self._status_of(pool, unknown.xid, deadline)
                if status == _COMMITTED:
                    self._health.answered(began)
                    return outcome[0]  # applied once: its outcome, not a second run
                if status != _ABORTED or last:
                    # Aborted: nothing was kept. Not known: it may have been.
                    raise unavailable(str(unknown), recorded=False if status else None) from unknown
            except (Stalled, errors.QueryCanceled, errors.LockNotAvailable) as exc:
                raise unavailable(self._why(exc, bound)) from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def _why(self, exc: Exception, bound: float) -> str:
        """The reason an operation ended before COMMIT was sent (nothing of it was kept)."""
        if isinstance(exc, Stalled):  # cut before COMMIT (a COMMIT cut off is ``CommitUnknown``)
            return f"the database did not answer within {bound:g} s"
        if isinstance(exc, errors.QueryCanceled):
            return f"a statement ran longer than {self._config.statement_timeout_seconds:g} s"
        return f"a lock was held by another session longer than {self._config.lock_timeout_seconds:g} s"

    def _status_of(self, pool: StorePool, xid: str | None, deadline: float) -> str | None:
        """Whether transaction ``xid`` committed or aborted, asked on a new session before
        ``deadline``; None when the database could not say (down, or the transaction still
        in progress on the session that lost its answer)."""
        if xid is None:
            return _COMMITTED  # it wrote nothing: nothing to keep or to double

        def status(conn: PgConn) -> str | None:
            row = conn.raw.execute("SELECT pg_xact_status(%s::xid8)", (xid,)).fetchone()
            return None if row is None else row[0]

        while time.monotonic() < deadline:
            try:
                said = pool.run(status, deadline)
            except StoreUnavailable:
                return None  # no session to ask: the database is down
            except (Broken, Stalled, CommitUnknown, psycopg.Error):
                said = None  # this session ended too: ask on another one
            if said in (_COMMITTED, _ABORTED):
                return said
            time.sleep(_STATUS_POLL_SECONDS)
        return None

    def _unavailable(self, reason: str, *, began: float, recorded: bool | None = False) -> StoreUnavailable:
        self._health.failed(reason, began)
        return StoreUnavailable(self.location, reason, recorded=recorded)

    # The dialect. Writes run at READ COMMITTED and lock the rows they will change; reads
    # run on one snapshot.
    def begin(self, conn: PgConn, *, write: bool) -> None:
        conn.raw.execute(_BEGIN_WRITE if write else _BEGIN_READ)
        conn.locks_rows = write

    def end(self, conn: PgConn, *, write: bool) -> None:
        try:
            _end(conn.raw, write=write)
        finally:
            conn.locks_rows = False

    def abandon(self, conn: PgConn) -> None:
        conn.locks_rows = False
        raw = conn.raw
        if raw.broken or raw.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
            return
        try:
            raw.execute("ROLLBACK")
        except psycopg.Error:
            # A session that ended mid-statement (in a pipeline, psycopg may not know it yet)
            # takes no ROLLBACK: it is closed instead, which keeps nothing of the transaction,
            # and the error that ended it is the one reported.
            raw.close()

    def may_retry(self, conn: PgConn, error: Exception) -> bool:  # noqa: ARG002 (SQLite's reads it)
        # PostgreSQL rolled the transaction back whole: nothing of the first run is kept.
        return isinstance(error, _RETRIED)

    def has_migrations_table(self, conn: PgConn) -> bool:
        return conn.execute("SELECT to_regclass('schema_migrations')").fetchone()[0] is not None

    def before_migration(self, conn: PgConn) -> None:
        # Another server may be migrating (the lock), and a migration may rewrite a large table.
        conn.raw.execute("SET LOCAL statement_timeout = 0")
        conn.raw.execute(f"SET LOCAL lock_timeout = {round(MIGRATION_SECONDS * 1000)}")
        conn.execute("SELECT pg_advisory_xact_lock(?)", (_MIGRATION_LOCK,))

    def run_ddl(self, conn: PgConn, statement: str) -> None:
        conn.raw.execute(statement)  # DDL as written: no placeholders to rewrite


class PgDatabase(database.Database[PgConn]):
    """The process's store in a PostgreSQL database."""

    @classmethod
    async def open(cls, url: str, *, create: bool = True, config: StoreConfig | None = None) -> PgDatabase:
        """Migrate the store; ``create`` false refuses a database no server has set up.

        No connection is kept open by this: the pools connect as calls need them."""
        db = cls(PgConnections(url, config or StoreConfig.model_construct()))
        await db.opened(create=create)
        return db
