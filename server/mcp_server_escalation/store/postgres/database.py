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
  transaction whose connection broke before COMMIT is run once more; one whose COMMIT got no
  answer is never run again (it may have been applied) and says so.
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

from ...errors import StoreError, StoreUnavailable
from ...models.store_config import StoreConfig
from .. import database
from ..database import MIGRATION_SECONDS, transact
from .connection import PgConn
from .migrations import CHANGE_CHANNEL, MIGRATIONS
from .pool import Broken, CommitUnknown, Stalled, StorePool, Watchdog, conninfo, health_of

log = logging.getLogger(__name__)
T = TypeVar("T")

# A transaction PostgreSQL aborted to resolve a conflict is run again up to this many times.
_RETRIES = 5
_RETRIED = (errors.SerializationFailure, errors.DeadlockDetected)
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
    try:
        raw.execute("COMMIT")
    except psycopg.Error as exc:
        if raw.broken and exc.sqlstate is None:
            # No answer came: the COMMIT may have reached the server and been applied before
            # the connection was lost, and running the transaction again could apply it
            # twice. (An answer with an error, such as the "terminating connection" of
            # pg_terminate_backend or a fast stop, says it was not: the server takes such an
            # interrupt before a commit or after it has answered, never in between.)
            raise CommitUnknown(" ".join(str(exc).split())) from exc
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
        self._info = conninfo(url, config)
        self._health = health_of(self.location)
        self._watchdog = Watchdog()
        self._writers = StorePool(
            "writers", self._info, config.writers, self._health, self._watchdog, self.location
        )
        self._readers = StorePool(
            "readers", self._info, config.readers, self._health, self._watchdog, self.location
        )
        # Callers take turns here, in the order they came, before a pool's connection: a
        # queue that waits without a bound of its own (the operation's deadline is set when
        # its turn comes), as the single writer queued writes before.
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
        ``seconds`` (the operation timeout when None) from when its turn comes."""
        if self.closed:
            raise StoreError("the store is closed")
        pool, turn = (self._readers, self._read_turn) if reader else (self._writers, self._write_turn)
        bound = self._config.operation_timeout_seconds if seconds is None else seconds
        # Shielded: a caller cancelled mid-way must not go on while its transaction runs (it
        # ends by its deadline in any case).
        with anyio.CancelScope(shield=True):
            async with turn:
                job = functools.partial(self._attempts, pool, fn, write, time.monotonic() + bound, bound)
                result = await anyio.to_thread.run_sync(job)
        return result

    def _attempts(
        self, pool: StorePool, fn: Callable[[Any], T], write: bool, deadline: float, bound: float
    ) -> T:
        """The transaction, run a second time only when that is known to be safe."""
        job = functools.partial(transact, self, fn=fn, write=write)
        began = deadline - bound
        unavailable = functools.partial(self._unavailable, began=began)
        for attempt in (1, 2):
            try:
                return pool.run(job, deadline)
            except Broken as broken:
                # Safe to run again: the connection ended before COMMIT was sent, and
                # PostgreSQL keeps nothing of a transaction whose session ended uncommitted.
                # Once: a server that drops the second connection as well is down.
                if attempt == 2 or time.monotonic() >= deadline:
                    raise unavailable(str(broken)) from broken
            except Stalled as stalled:
                # Cut before COMMIT was sent (a COMMIT cut off is ``CommitUnknown``): nothing kept.
                raise unavailable(f"the database did not answer within {bound:g} s") from stalled
            except CommitUnknown as unknown:
                raise unavailable(str(unknown), recorded=None) from unknown
            except errors.QueryCanceled as exc:
                raise unavailable(
                    f"a statement ran longer than {self._config.statement_timeout_seconds:g} s"
                ) from exc
            except errors.LockNotAvailable as exc:
                raise unavailable(
                    f"a lock was held by another session longer than {self._config.lock_timeout_seconds:g} s"
                ) from exc
        raise AssertionError("unreachable")  # pragma: no cover

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
        if not raw.broken and raw.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            raw.execute("ROLLBACK")

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
