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
"""

from __future__ import annotations

import contextvars
import sqlite3
from collections.abc import Callable
from typing import Any, TypeVar, cast

import aiosqlite
import anyio

T = TypeVar("T")

# Rows aiosqlite's cursors fetch at a time; the store never uses its cursors.
_CHUNK = 64


class Worker:
    """A connection whose every use runs in its own thread, one function at a time."""

    def __init__(self, proxy: aiosqlite.Connection, conn: sqlite3.Connection) -> None:
        self._proxy = proxy
        self._conn = conn
        self.closed = False

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
        with anyio.CancelScope(shield=True):
            result: Any = await self._proxy._execute(in_context, fn, self._conn)  # type: ignore[no-untyped-call]
        return cast(T, result)

    async def close(self) -> None:
        """Close the connection once the work handed to the thread is done; the thread ends."""
        self.closed = True
        with anyio.CancelScope(shield=True):
            await self._proxy.close()


def closed_error() -> sqlite3.ProgrammingError:
    """What a use of a closed connection raises (as ``sqlite3`` itself says it)."""
    return sqlite3.ProgrammingError("Cannot operate on a closed database.")
