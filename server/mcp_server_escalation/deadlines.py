"""One deadline per call: set once where a call comes in, shared by every wait inside it.

A tool call, a relayed hook run, a hook event posted over HTTP and a hook process each set
the deadline they must answer by, once (``call_deadline``). Every wait of the store inside
the call reads what is left of it (``seconds_left``): SQLite's wait for another process's
lock, PostgreSQL's wait for a connection and for its answer, a write queued behind another.
So the sum of the waits cannot pass the deadline, however many operations the call makes
or however long the ones before it in the queue took.

The deadline also counts the call's writes that committed (``wrote``), so that a call cut
short after one of its writes was kept is never told that nothing of it was recorded.

A context variable carries it: the store's threads run in the caller's context (aiosqlite's
through ``store/worker.py``, PostgreSQL's through anyio's worker threads), so they read the
same deadline and count on the same record. Standard library only: the hook process imports
it before anything else.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass
class Deadline:
    """When the call must have answered (``time.monotonic()``), the bound it was set with,
    and how many of its writes committed so far."""

    at: float
    seconds: float
    writes: int = 0

    def left(self) -> float:
        return self.at - time.monotonic()


_CURRENT: ContextVar[Deadline | None] = ContextVar("escalation_call_deadline", default=None)


@contextmanager
def call_deadline(seconds: float) -> Iterator[Deadline]:
    """Inside, every wait of the store ends ``seconds`` from now at the latest. Nested, the
    earlier deadline holds: a call never gets more time than the one it is part of."""
    outer = _CURRENT.get()
    at = time.monotonic() + seconds
    if outer is not None and outer.at <= at:
        yield outer
        return
    deadline = Deadline(at, seconds)
    token = _CURRENT.set(deadline)
    try:
        yield deadline
    finally:
        _CURRENT.reset(token)
        if outer is not None:
            outer.writes += deadline.writes


def current() -> Deadline | None:
    """The deadline of the call being served (None: no call set one, as in the CLI)."""
    return _CURRENT.get()


def seconds_left() -> float | None:
    """What is left of the current call's deadline (None: no deadline; 0 or less: past)."""
    deadline = _CURRENT.get()
    return None if deadline is None else deadline.left()


def wrote() -> None:
    """Count a write of the current call that committed (nothing without a deadline)."""
    deadline = _CURRENT.get()
    if deadline is not None:
        deadline.writes += 1


def has_written() -> bool:
    """Did a write of the current call commit? Then a failure after it may not say that
    nothing of the call was recorded."""
    deadline = _CURRENT.get()
    return deadline is not None and deadline.writes > 0
