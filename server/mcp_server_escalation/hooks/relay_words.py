"""What a relay says to a hook run of a store that does not answer, refused a write, or of a bug.

A store that stops answering is said to the hook in the prompts' words, as the hook process
says it: what became of the event, no decision, and where the details are. Where the store
is and what its database said go to the log beside the socket, once per outage
(``OutageNotes``), never into the hook's stderr, which its host may show the model; so do
a store's refusal of a write (``error_said``) and a bug's details (``failed_said``).
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from pathlib import Path

import anyio
import anyio.to_thread

from ..errors import EscalationError, StoreError, StoreUnavailable, StoreUnwritable
from ..rules.wording.hook_input import hook_failed_words, hook_store_error_words
from ..services.runtime import Runtime
from .dispatch import warning
from .relay import socket_path
from .relay_spawn import log_path, note_failure, note_outage
from .spool import Kept, kept_words

log = logging.getLogger(__name__)


class OutageNotes:
    """The log in which this process noted each store's outage for hook runs (None: none
    could be written), until the store answers a hook run again. A relay answers many hook
    runs: where the store is and what its database said are worth one line per outage, as in
    the store's own log, not one per event for as long as the outage lasts."""

    def __init__(self) -> None:
        self._noted: dict[str, str | None] = {}
        self._lock = threading.Lock()  # runs at once note one line

    def note(self, db_path: str, outage: StoreUnavailable) -> str | None:
        """The log with ``outage``'s words in it, written on the outage's first event.
        Blocking (a file is written): run in a worker thread."""
        with self._lock:
            if db_path not in self._noted:
                self._noted[db_path] = _note(db_path, outage)
            return self._noted[db_path]

    def over(self, db_path: str) -> None:
        self._noted.pop(db_path, None)


OUTAGES = OutageNotes()


def _note(db_path: str, outage: StoreUnavailable) -> str | None:
    """``note_outage`` for the store this process serves, in the log beside its socket (the
    socket the hook found for its store). A daemon's stderr is that very log, where the store
    has said the outage once already: nothing is written twice. (A relay opens its store
    without the hook's bound, so only a database's outage, which the store logs, stops it
    answering.)"""
    cwd = str(Path.cwd())
    socket_file = socket_path(db_path, os.environ, cwd)
    if socket_file is not None and _is_stderr(log_path(socket_file)):
        return log_path(socket_file)
    return note_outage(db_path, os.environ, cwd, outage)


def _is_stderr(path: str) -> bool:
    try:
        ours, theirs = os.fstat(2), Path(path).stat()
    except OSError:
        return False
    return (ours.st_dev, ours.st_ino) == (theirs.st_dev, theirs.st_ino)


async def outage_noted(rt: Runtime, outage: StoreUnavailable) -> str | None:
    job = functools.partial(OUTAGES.note, rt.settings.db_path, outage)
    return await anyio.to_thread.run_sync(job)


async def kept_said(rt: Runtime, kept: Kept) -> str:
    """The hook's line for a report kept in the spool (or dropped, the spool full)."""
    where = None if kept.outage is None else await outage_noted(rt, kept.outage)
    return kept_words(rt.prompts, kept, where)


async def error_said(rt: Runtime, error: EscalationError) -> str:
    """The hook's line for a problem a person can fix, as the hook process says it
    (``cli/hook.py``): a store that refused the write (this process has its store open) in
    the prompts' words, where the store is and what it said in the log beside the socket,
    as an outage's are; any other problem as it is."""
    if not isinstance(error, StoreError):
        return f"no decision: {error}"
    job = functools.partial(note_outage, rt.settings.db_path, os.environ, str(Path.cwd()), error)
    where = await anyio.to_thread.run_sync(job)
    return hook_store_error_words(rt.prompts, where, unwritable=isinstance(error, StoreUnwritable))


async def failed_said(rt: Runtime, failure: Exception) -> str:
    """The hook's lines for a bug met answering it. Its details go where the hook process
    would write them: the log beside the socket this process serves, which is the socket the
    hook found for its store (a file a request names is never opened here). This process's
    log says where, or holds them when that fails."""
    job = functools.partial(note_failure, rt.settings.db_path, os.environ, str(Path.cwd()), failure)
    where = await anyio.to_thread.run_sync(job)
    if where is None:
        log.error("relayed hook event failed", exc_info=failure)
    else:
        log.error("relayed hook event failed unexpectedly; its details are in %s", where)
    return "".join(warning(line) for line in hook_failed_words(rt.prompts, where, failure))
