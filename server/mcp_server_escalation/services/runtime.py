"""What every service needs, built once by the composition root."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio

from ..clock import Clock, iso, utc_now
from ..datafiles import data_dir, pattern_book
from ..models.escalations import Escalation
from ..prompts import PromptBook
from ..rules.reading.classify import PatternBook
from ..settings import Settings
from ..store.backends import Store, open_store

log = logging.getLogger(__name__)

EscalationListener = Callable[[Escalation, str], Awaitable[None]]


@dataclass
class Runtime:
    """The store, the wording, the patterns, the settings and the clock of one process."""

    db: Store
    prompts: PromptBook
    settings: Settings
    clock: Clock = utc_now
    listeners: list[EscalationListener] = field(default_factory=list)
    # Set and replaced on every escalation change in this process, so a waiting
    # get_escalation wakes at once for a local answer (other processes are polled).
    _changed: anyio.Event = field(default_factory=anyio.Event)

    @property
    def patterns(self) -> PatternBook:
        """The classification patterns, compiled at first use (not at start-up)."""
        return pattern_book()

    def now(self) -> str:
        """The current time as the store writes it."""
        return iso(self.clock())

    def changed(self) -> anyio.Event:
        """An event set at the next escalation change in this process, or in another one
        that the store announces (PostgreSQL's notifications)."""
        return self._changed

    def signal_change(self) -> None:
        """Another process committed an escalation change: wake whoever waits for one."""
        self._changed.set()
        self._changed = anyio.Event()

    async def publish(self, escalation: Escalation, event: str) -> None:
        """Tell listeners (client notifications, notifiers) after the change is committed."""
        self._changed.set()
        self._changed = anyio.Event()
        for listener in list(self.listeners):
            try:
                await listener(escalation, event)
            except Exception:  # a listener must never undo or fail a committed change
                log.exception("escalation listener failed for %s", escalation.escalation_id)


def prompt_book(settings: Settings) -> PromptBook:
    """The prompts ``settings`` name (the packaged ones unless a folder replaces them), loaded
    and checked; for words needed before a runtime is open, or without one."""
    return PromptBook.load(settings.prompts_dir or data_dir("prompts"), wait_seconds=settings.waiting.seconds)


@asynccontextmanager
async def open_runtime(
    settings: Settings,
    clock: Clock = utc_now,
    prompts: PromptBook | None = None,
    *,
    create: bool = True,
    bounded: bool = False,
) -> AsyncIterator[Runtime]:
    """Store, prompts and patterns for one process; closes the store on exit.

    ``create=False`` (the operator's commands) opens only a store that exists; ``bounded``
    (a hook run) bounds a SQLite store's waits for a lock as well (``open_store``).
    """
    prompts = prompts or prompt_book(settings)
    db = await open_store(settings.db_path, create=create, config=settings.store, bounded=bounded)
    try:
        yield Runtime(db=db, prompts=prompts, settings=settings, clock=clock)
    finally:
        await db.close()
