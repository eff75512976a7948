"""One ``sqlite3`` connection and the aiosqlite thread that alone uses it.

aiosqlite gives each connection a thread of its own and runs every call on it there, in
the order they came. Its public methods hand that thread one statement at a time, and each
statement then costs a trip to the thread and back (three for an execute and a fetch). The
store hands it whole transactions instead: one synchronous function of the connection, one
trip per transaction, whatever the number of statements.

aiosqlite does not publish a way to run a function of our own in its thread, so this module
is the one place that relies on what it keeps private:
- ``Connection(connector, iter_chunk_size)`` opens the connection in the thread with our
  own connector (the store's checks, PRAGMAs and SQL functions, in the same trip);
- ``Connection._execute(fn, *args)`` queues ``fn(*args)`` on the thread and awaits it.
The version range in pyproject.toml admits only releases checked to keep both, and
``tests/test_store_threads.py`` fails first when a release changes them.

A function handed to the thread waits there for the ones before it. Within a call's deadline
(``deadlines.py``) it waits for its turn only until then: a turn that has not come is given
up, and the function is never run (``NotBegun``); one that has begun is waited for whole.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import sqlite3
import threading
from collections.abc import Callable
from typing import Any, TypeVar, cast

import aiosqlite
import anyio

from .. import deadlines

T = TypeVar("T")

# Rows aiosqlite's cursors fetch at a time; the store never uses its cursors.
_CHUNK = 64


class Worker:
    """A connection whose every use runs in its own thread, one function at a time."""

    def __init__(self, proxy: aiosqlite.Connection, conn: sqlite3.Connection) -> None:
        self._proxy = proxy
        self._conn = conn
        self.closed = False
        # Functions handed to the thread and not yet finished (or given up).
        self._handed = 0

    @classmethod
    async def open(cls, connect: Callable[[], sqlite3.Connection]) -> Worker:
        """Start the thread and run ``connect`` in it; its connection is the worker's."""
        opened: list[sqlite3.Connection] = []
        failed: list[BaseException] = []

        def connector() -> sqlite3.Connection | None:
            try:
                opened.append(connect())
            except BaseException as exc:  # noqa: BLE001 (raised below, once the thread has ended)
                failed.append(exc)
                return None
            return opened[0]

        proxy = aiosqlite.Connection(connector, _CHUNK)  # type: ignore[arg-type]
        # Shielded here and below: a caller cancelled mid-way must not leave a thread that
        # nobody stops, nor go on while its transaction still runs.
        with anyio.CancelScope(shield=True):
            await proxy
            if failed:
                # Stopped and waited for here: aiosqlite would stop the thread of a failed
                # connect without waiting, and the thread then calls back a loop that may
                # have closed by then (a one-shot command that exits on the error).
                stopped = proxy.stop()
                if stopped is not None:
                    await stopped
                raise failed[0]
        return cls(proxy, opened[0])

    async def run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """``fn(connection)`` in the thread, after everything handed to it before."""
        if self.closed:
            raise closed_error()
        # In the caller's context, as anyio.to_thread runs PostgreSQL's: what a transaction
        # renders reads the call's context variables (prompts.ASKED_WAIT).
        in_context = contextvars.copy_context().run
        # Only a function queued behind others can wait for its turn: with none handed over
        # before it (the common case), it begins at once and bounds its own waits.
        left = deadlines.seconds_left() if self._handed else None
        self._handed += 1
        try:
            if left is not None:
                return await self._run_by(left, in_context, fn)
            with anyio.CancelScope(shield=True):
                result: Any = await self._proxy._execute(in_context, fn, self._conn)  # type: ignore[no-untyped-call]
            return cast(T, result)
        finally:
            self._handed -= 1

    async def _run_by(
        self, left: float, in_context: Callable[..., Any], fn: Callable[[sqlite3.Connection], T]
    ) -> T:
        """``fn`` in the thread, unless its turn has not come within ``left`` seconds."""
        turn = _Turn()
        job = functools.partial(turn.run, in_context, fn, self._conn)
        request = asyncio.ensure_future(self._proxy._execute(job))  # type: ignore[no-untyped-call]
        try:
            with anyio.move_on_after(max(left, 0.0)):
                # Shielded from the deadline's cancel: the request goes on in the thread.
                return cast(T, await asyncio.shield(request))
        except BaseException:
            await _settled(turn, request)  # cancelled by its caller: nothing left running
            raise
        if not request.done() and turn.give_up():
            request.add_done_callback(_dropped)
            raise NotBegun
        with anyio.CancelScope(shield=True):
            result = await request  # begun: it finishes whole
        return cast(T, result)

    async def close(self) -> None:
        """Close the connection once the work handed to the thread is done; the thread ends."""
        self.closed = True
        with anyio.CancelScope(shield=True):
            await self._proxy.close()


def closed_error() -> sqlite3.ProgrammingError:
    """What a use of a closed connection raises (as ``sqlite3`` itself says it)."""
    return sqlite3.ProgrammingError("Cannot operate on a closed database.")


class NotBegun(Exception):
    """A function's turn in the thread did not come before its call's deadline: not run."""


class _Turn:
    """One function's place in the thread's queue: begun there, or given up by its caller first."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._begun = False
        self._given_up = False

    def run(
        self, in_context: Callable[..., Any], fn: Callable[[sqlite3.Connection], T], conn: sqlite3.Connection
    ) -> Any:
        with self._lock:
            if self._given_up:
                return None  # its caller has gone, told that nothing of it began
            self._begun = True
        return in_context(fn, conn)

    def give_up(self) -> bool:
        """Give the turn up if it has not begun; has it not?"""
        with self._lock:
            if not self._begun:
                self._given_up = True
            return self._given_up


async def _settled(turn: _Turn, request: asyncio.Future[Any]) -> None:
    """After its caller was cancelled: the turn given up, or the function waited for whole."""
    if request.done() or turn.give_up():
        request.add_done_callback(_dropped)
        return
    with anyio.CancelScope(shield=True):
        await asyncio.wait([request])


def _dropped(request: asyncio.Future[Any]) -> None:
    """What a given-up request came to is nobody's: read, so that asyncio does not report it."""
    if not request.cancelled():
        request.exception()
