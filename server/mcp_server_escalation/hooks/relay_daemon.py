"""The relay daemon: serves one store's hook socket while hook runs keep coming.

A hook run that found nothing listening starts it (``relay_spawn.py``) as ``hook daemon``.
It answers on the store's socket exactly as a server's relay does (``relay_server.py``:
the same code, the same checks of the hook's own settings), and ends by itself:

- after ``[hooks] relay_idle_minutes`` without a hook run (never while one is in flight);
- when its store file is deleted or replaced: its connection still writes to the old file,
  which nobody reads any more; a run arriving then is turned away unanswered, so the hook
  does it itself on the new file;
- on SIGTERM, SIGINT or SIGHUP;
- at once when another process already serves the socket (an MCP server of the store, a
  ``hook relay``): that one answers identically, so there is nothing to take over.

On every way out it removes its socket (when it is still its own), and the kernel releases
its lock. An MCP server that starts while a daemon serves waits its turn as it waits for
any relay (``relay_server.RETRY_SECONDS``) and takes the socket when the daemon has gone.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

import anyio
from anyio.abc import SocketStream

from ..errors import ConfigError
from ..locations import is_database_url
from ..services.runtime import Runtime, open_runtime
from ..settings import Settings
from .relay import socket_path
from .relay_server import (
    LIMITS,
    LOOKUP_THREADS,
    RelayLimits,
    accept,
    bind,
    release,
    serve_one,
    socket_inode,
)
from .relay_spawn import lock_path, open_lock, take_lock
from .spool import own_spool

log = logging.getLogger(__name__)

# How often the daemon looks at its store file and its idle time: a stat() costs nothing.
CHECK_SECONDS = 2.0
# Runs in flight when the daemon decides to leave may finish (a hook waits 10 s for them).
GRACE_SECONDS = 10.0


def store_identity(path: str) -> tuple[int, int] | None:
    """Which file ``path`` is now (device, inode); None when there is none. A database's
    URL names the same store as long as it is given (its server owns the files)."""
    if is_database_url(path):
        return (0, 0)
    try:
        st = Path(path).stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino


@dataclass
class Lifetime:
    """When the daemon ends, and why: hook runs in flight, the last one, its store file."""

    idle_seconds: float
    store: str
    store_id: tuple[int, int] | None
    last_run: float = field(default_factory=time.monotonic)
    in_flight: int = 0
    reason: str | None = None
    ended: anyio.Event = field(default_factory=anyio.Event)
    _drained: anyio.Event | None = None

    def end(self, reason: str) -> None:
        """Leave for ``reason`` (the first reason given stays)."""
        if self.reason is None:
            self.reason = reason
            self.ended.set()

    def store_replaced(self) -> bool:
        """Is the store path no longer the file this daemon has open?"""
        return self.store_id is None or store_identity(self.store) != self.store_id

    def run_started(self) -> None:
        """A hook run is being answered."""
        self.in_flight += 1

    def run_ended(self) -> None:
        """A hook run has been answered (or dropped): the idle time starts again."""
        self.in_flight -= 1
        self.last_run = time.monotonic()
        if self.in_flight == 0 and self._drained is not None:
            self._drained.set()

    async def drained(self) -> None:
        """Until no hook run is in flight."""
        while self.in_flight:
            self._drained = anyio.Event()
            await self._drained.wait()

    def idle_for(self) -> float:
        """Seconds since the last hook run ended (0 while one is in flight)."""
        return 0.0 if self.in_flight else time.monotonic() - self.last_run


async def _watch(life: Lifetime) -> None:
    """End the daemon when its store is gone or it has been idle long enough."""
    while life.reason is None:
        if life.store_replaced():
            life.end("its store file was deleted or replaced")
            return
        idle = life.idle_for()
        if idle >= life.idle_seconds:
            life.end(f"no hook run for {life.idle_seconds / 60:g} minutes")
            return
        await anyio.sleep(min(CHECK_SECONDS, life.idle_seconds - idle))


async def _signals(life: Lifetime) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as received:
        async for signum in received:
            life.end(f"{signal.Signals(signum).name} received")
            return


async def serve_until_done(rt: Runtime, path: str, idle_seconds: float, limits: RelayLimits = LIMITS) -> str:
    """Answer hook runs on ``path`` until the daemon's time is up; returns why it ended."""
    listener = await bind(path)
    if isinstance(listener, str):
        return listener
    bound = socket_inode(path)
    life = Lifetime(idle_seconds, rt.settings.db_path, store_identity(rt.settings.db_path))
    lookups = anyio.CapacityLimiter(LOOKUP_THREADS)
    spool = own_spool(rt.settings.db_path)

    async def handle(stream: SocketStream) -> None:
        if life.reason is None and life.store_replaced():
            life.end("its store file was deleted or replaced")
        if life.reason is not None:
            await stream.aclose()  # unanswered: the hook runs itself
            return
        life.run_started()
        try:
            await serve_one(rt, stream, limits, lookups, spool)
        finally:
            life.run_ended()

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(accept, listener, handle, limits)
            tg.start_soon(_watch, life)
            tg.start_soon(_signals, life)
            await life.ended.wait()
            with anyio.move_on_after(GRACE_SECONDS):
                await life.drained()
            tg.cancel_scope.cancel()
    finally:
        release(path, bound)
        with anyio.CancelScope(shield=True):
            await listener.aclose()
    return life.reason or "stopped"


def _hold_lock(socket_file: str, given: int | None) -> int | None:
    """The store's lock, held: the file handed over by the hook that started us, or our own.

    None when another daemon holds it. A handed-over file that is not this store's lock
    file is a ``ConfigError`` (the option is for ``relay_spawn`` alone).
    """
    if given is None:
        fd = open_lock(socket_file)
    else:
        try:
            same = os.path.samestat(os.fstat(given), Path(lock_path(socket_file)).stat())
        except OSError:
            same = False
        if not same:
            raise ConfigError(f"--lock-fd {given}: not this store's lock file {lock_path(socket_file)}")
        fd = given
    if not take_lock(fd):
        os.close(fd)
        return None
    os.set_inheritable(fd, False)  # a command the daemon runs must not hold the lock after it
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)  # who serves: for the operator (and tests)
    return fd


def _ends(reason: str) -> None:
    log.info("hook daemon (pid %d) ends: %s", os.getpid(), reason)


async def run_daemon(settings: Settings, lock_fd: int | None) -> None:
    """``hook daemon``: serve the store's socket until idle, replaced or stopped; logs why it ended."""
    idle_minutes = settings.hooks.relay_idle_minutes
    if not settings.hooks.relay or idle_minutes <= 0:
        _ends("the config starts no daemon ([hooks] relay = false or relay_idle_minutes = 0)")
        return
    path = socket_path(settings.db_path, os.environ, str(Path.cwd()))
    if path is None:
        raise ConfigError("no relay socket for this store (see docs/hooks.md)")
    lock = _hold_lock(path, lock_fd)
    if lock is None:
        _ends("another daemon serves this store")
        return
    try:
        async with open_runtime(settings) as rt:
            log.info(
                "hook daemon (pid %d) for %s on %s; ends after %g idle minutes",
                os.getpid(),
                settings.db_path,
                path,
                idle_minutes,
            )
            reason = await serve_until_done(rt, path, idle_minutes * 60)
        _ends(reason)  # before the lock goes: whoever finds it free finds the whole log
    finally:
        os.close(lock)
