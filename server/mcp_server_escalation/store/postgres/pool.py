"""Connections to PostgreSQL that come back by themselves, and waits that end.

Design:
- psycopg's own pool (``psycopg_pool.ConnectionPool``) holds a process's connections: one
  pool for writes, one for reads. Each connection is checked before use (an empty query), so
  one that a restart, a failover or ``pg_terminate_backend`` broke is dropped and replaced
  instead of failing a call; the first broken one found drops every idle one (``drain``),
  as they all went down with the server. No connection is made at start-up: the pools grow
  as calls need them.
- Reconnection follows the calls: the pool gives up a failed attempt after
  ``RECONNECT_SECONDS`` (psycopg's default keeps retrying for 5 minutes with a growing
  pause, so a server that was down 20 s came back up to 15 s late; with 1 s, calls still
  waited up to 0.8 s after the server was back), and the next call that
  finds no connection starts a new attempt at once.
- Every wait ends. libpq's ``connect_timeout`` bounds a new connection; the database's
  ``statement_timeout`` and ``lock_timeout`` bound a statement and a lock wait; and a
  ``Watchdog`` cuts the connection of an operation still unanswered at its deadline (a
  stalled server cancels nothing: its statement timeout does not run either).
- ``Health`` says whether the store answers: it logs one line when it stops answering and
  one when it is back, however many calls failed between, and keeps the database's words
  for the message of each failed call.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg_pool import ConnectionPool, PoolTimeout

from ...errors import OUTAGE_LOG, StoreUnavailable
from ...models.store_config import StoreConfig
from .connection import PgConn

log = logging.getLogger(OUTAGE_LOG)
T = TypeVar("T")
# The pool logs every failed attempt to connect (several a second while the database is
# down); ``Health`` logs the outage once instead.
logging.getLogger("psycopg.pool").setLevel(logging.ERROR)

# A failed connection attempt is tried again once, this long after; then the next call
# that needs a connection starts the next attempt.
RECONNECT_SECONDS = 0.25
# How often a caller waiting for a connection looks whether an attempt has failed
# meanwhile: it then fails at once instead of waiting out its whole bound.
_WAIT_SLICE_SECONDS = 0.2
# How often the watchdog looks at operations in flight (only while there are some).
_WATCH_SECONDS = 0.1
APPLICATION_NAME = "mcp-server-escalation"


def conninfo(url: str, config: StoreConfig) -> str:
    """``url`` with the store's bounds: libpq's connect timeout, and the statement and lock
    timeouts as server options added to any the URL gives (``?options=-csearch_path...``)."""
    params = conninfo_to_dict(url)
    ours = (
        f"-c statement_timeout={round(config.statement_timeout_seconds * 1000)}"
        f" -c lock_timeout={round(config.lock_timeout_seconds * 1000)}"
    )
    given = params.get("options")
    params["options"] = f"{given} {ours}" if given else ours
    params.setdefault("connect_timeout", config.connect_timeout_seconds)
    params.setdefault("application_name", APPLICATION_NAME)
    return make_conninfo("", **params)


class Health:
    """Whether the store answers; one log line when it stops, one when it is back."""

    def __init__(self, location: str) -> None:
        self.location = location
        self.down_since: float | None = None
        self.reason = ""
        # When a connection attempt last failed, and when the latest operation that
        # succeeded began (monotonic); 0 for never.
        self.failed_at = 0.0
        self.answered_at = 0.0
        self._lock = threading.Lock()

    def failed(self, reason: str, began: float) -> None:
        """An attempt or operation that ``began`` then failed; it opens an outage unless the
        store has answered since it began (a straggler of the outage that just ended)."""
        with self._lock:
            self.reason = reason
            self.failed_at = time.monotonic()
            first = self.down_since is None and began >= self.answered_at
            if first:
                self.down_since = self.failed_at
        if first:
            log.warning(
                "store %s is unavailable (%s): calls fail with a message until it answers again",
                self.location,
                reason,
            )

    def answered(self, began: float) -> None:
        """An operation that ``began`` then succeeded; it ends the outage if it began after
        the outage did (one begun before may still have found its connection alive)."""
        self.answered_at = max(self.answered_at, began)
        if self.down_since is None:  # the common case: no lock taken
            return
        with self._lock:
            since = self.down_since
            if since is None or began < since:
                return
            self.down_since = None
        log.warning("store %s answers again, after %.1f s", self.location, time.monotonic() - since)


# One ``Health`` per store location and process: a process may open one store several times
# (the HTTP server's MCP side, its console and its hook routes), and an outage is still one.
_HEALTHS: dict[str, Health] = {}
_HEALTHS_LOCK = threading.Lock()


def health_of(location: str) -> Health:
    """The process's ``Health`` of the store at ``location``."""
    with _HEALTHS_LOCK:
        return _HEALTHS.setdefault(location, Health(location))


def _reason(exc: BaseException) -> str:
    """The database's (or libpq's) words for what went wrong, on one line."""
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


def connection_class(health: Health) -> type[psycopg.Connection[Any]]:
    """psycopg's connection, telling ``health`` why an attempt to connect failed.

    The pool keeps the error of its attempts to itself (it retries in its own threads), and a
    caller waiting for a connection is told only that none came: this is how the caller's
    message gets the database's reason (connection refused, the database is starting up)."""

    class StoreConnection(psycopg.Connection[Any]):
        @classmethod
        def connect(cls, *args: Any, **kwargs: Any) -> Any:
            began = time.monotonic()
            try:
                return super().connect(*args, **kwargs)
            except psycopg.Error as exc:
                health.failed(_reason(exc), began)
                raise

    return StoreConnection


class Watch:
    """One operation's connection under watch: cut at ``deadline``, and whether it was."""

    __slots__ = ("conn", "cut", "deadline")

    def __init__(self, conn: psycopg.Connection[Any], deadline: float) -> None:
        self.conn = conn
        self.deadline = deadline
        self.cut = False


class Watchdog:
    """Cuts the connection of an operation that outlived its deadline.

    A stalled server (stopped, or a network that drops packets without a word) answers
    nothing, cancels nothing and lets no statement time out; the operation's thread would wait
    in ``recv`` for ever. Shutting the socket down wakes it with "server closed the
    connection": the connection is broken and the pool replaces it; the operation fails.
    One thread per store, asleep while no operation is in flight.
    """

    def __init__(self) -> None:
        self._due: dict[int, Watch] = {}
        self._wake = threading.Event()
        self._closed = False
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()

    @contextlib.contextmanager
    def watching(self, conn: psycopg.Connection[Any], deadline: float) -> Iterator[Watch]:
        """While inside, ``conn`` is cut at ``deadline``; the ``Watch`` says whether it was."""
        watch = Watch(conn, deadline)
        key = id(watch)
        self._due[key] = watch
        self._ensure_thread()
        self._wake.set()
        try:
            yield watch
        finally:
            self._due.pop(key, None)

    def _ensure_thread(self) -> None:
        if self._thread is not None:
            return
        with self._start_lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._watch, name="store-watchdog", daemon=True)
                self._thread.start()

    def _watch(self) -> None:
        while not self._closed:
            if not self._due:
                self._wake.wait()
                self._wake.clear()
                continue
            now = time.monotonic()
            for key, watch in list(self._due.items()):
                if now >= watch.deadline and self._due.pop(key, None) is not None:
                    watch.cut = True
                    _shut_down(watch.conn)
            time.sleep(_WATCH_SECONDS)

    def close(self) -> None:
        self._closed = True
        self._wake.set()


def _shut_down(conn: psycopg.Connection[Any]) -> None:
    """Both directions of the connection's socket shut: whoever waits on it wakes to an end."""
    with contextlib.suppress(Exception):  # already closed: nothing waits on it
        duplicate = socket.socket(fileno=os.dup(conn.pgconn.socket))
        with duplicate:
            duplicate.shutdown(socket.SHUT_RDWR)


class StorePool:
    """One pool of connections (writes or reads) and how long a caller may wait for one."""

    def __init__(
        self, name: str, info: str, size: int, health: Health, watchdog: Watchdog, location: str
    ) -> None:
        self.health = health
        self._watchdog = watchdog
        self._location = location
        self._pool: ConnectionPool[Any] = ConnectionPool(
            info,
            min_size=0,
            max_size=size,
            open=False,
            name=name,
            kwargs={"autocommit": True},
            connection_class=connection_class(health),
            check=self._check,
            reconnect_timeout=RECONNECT_SECONDS,
            num_workers=1,
        )
        # The deadline of the operation whose connection this thread is checking.
        self._waiting = threading.local()

    def open(self) -> None:
        self._pool.open(wait=False)

    def close(self) -> None:
        self._pool.close(timeout=1.0)

    def _check(self, conn: psycopg.Connection[Any]) -> None:
        """The pool's check before it hands a connection out, cut off as the operation is."""
        deadline = getattr(self._waiting, "deadline", time.monotonic() + _WAIT_SLICE_SECONDS)
        with self._watchdog.watching(conn, deadline) as watch:
            try:
                ConnectionPool.check_connection(conn)
            except psycopg.Error:
                self._waiting.stalled = watch.cut
                # It went down with the server, and so did the idle ones beside it.
                self._pool.drain()
                raise

    def run(self, fn: Callable[[PgConn], T], deadline: float) -> T:
        """``fn`` on a checked connection, in this (worker) thread, cut off at ``deadline``."""
        began = time.monotonic()
        conn = self._connection(deadline)
        try:
            with self._watchdog.watching(conn, deadline) as watch:
                try:
                    result = fn(PgConn(conn, self._location))
                except Exception as exc:
                    if not isinstance(exc, CommitUnknown) and not lost(conn, exc):
                        raise
                    # Closed, so that the pool replaces it: a session the server ended may
                    # still look open (psycopg marks it broken only once it reads the end).
                    with contextlib.suppress(Exception):
                        conn.close()
                    # It went down with the server, and so did the idle ones beside it.
                    self._pool.drain()
                    if isinstance(exc, CommitUnknown):
                        raise
                    if watch.cut:
                        raise Stalled(_reason(exc)) from exc
                    raise Broken(_reason(exc)) from exc
        finally:
            self._pool.putconn(conn)
        self.health.answered(began)
        return result

    def _connection(self, deadline: float) -> psycopg.Connection[Any]:
        """A working connection, or ``StoreUnavailable`` once an attempt failed or time ran out."""
        started = time.monotonic()
        # The pool checks the connection in this thread, cut off at this operation's deadline.
        self._waiting.deadline = deadline
        self._waiting.stalled = False
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._unavailable(self._why_none(deadline - started, started), started)
            try:
                conn: psycopg.Connection[Any] = self._pool.getconn(
                    timeout=min(_WAIT_SLICE_SECONDS, remaining)
                )
            except PoolTimeout:
                if self.health.failed_at > started:
                    raise self._unavailable(self.health.reason, started) from None
            else:
                return conn

    def _why_none(self, waited: float, started: float) -> str:
        if self._waiting.stalled:
            return f"the database did not answer within {waited:.1f} s"
        if self.health.failed_at > started:
            return self.health.reason
        return f"no connection was free within {waited:.1f} s"

    def _unavailable(self, reason: str, began: float) -> StoreUnavailable:
        self.health.failed(reason, began)
        return StoreUnavailable(self._location, reason)


# SQLSTATE classes and codes that end the session: the connection is gone, not the statement
# wrong (08: connection exception; 57P01-57P03: the server terminated the session, is
# shutting down or starting).
_SESSION_ENDED = ("08", "57P01", "57P02", "57P03")


def lost(conn: psycopg.Connection[Any], exc: BaseException) -> bool:
    """Did ``exc`` end ``conn``'s session (rather than refuse one statement)?"""
    if conn.broken or conn.closed:
        return True
    if not isinstance(exc, psycopg.Error):
        return False
    state = exc.sqlstate
    if state is None:
        return isinstance(exc, psycopg.OperationalError)
    return state.startswith(_SESSION_ENDED)


class Stalled(Exception):
    """The database did not answer an operation within its bound; its connection was cut."""


class Broken(Exception):
    """The connection ended before the operation's COMMIT was sent: nothing of it was kept."""


class CommitUnknown(Exception):
    """The connection ended while COMMIT was on its way: the write may or may not be kept.

    ``xid`` is the transaction's id (None when it wrote nothing): the database keeps whether
    that transaction committed, which a new session can ask (``pg_xact_status``)."""

    def __init__(self, reason: str, xid: str | None) -> None:
        super().__init__(reason)
        self.xid = xid
