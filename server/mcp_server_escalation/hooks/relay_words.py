"""What a relay notes for the hook runs it answers, which their stderr never carries.

The words are ``outcome.py``'s, as the hook process says them; where the store is, what
its database said and a bug's details go to the log beside the socket this process
serves (``RelayNotes``), once per outage for a store that stops answering.
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import ClassVar

from ..errors import StoreError, StoreUnavailable
from .relay import socket_path
from .relay_spawn import log_path, note_failure, note_outage

log = logging.getLogger(__name__)


def _is_stderr(path: str) -> bool:
    try:
        ours, theirs = os.fstat(2), Path(path).stat()
    except OSError:
        return False
    return (ours.st_dev, ours.st_ino) == (theirs.st_dev, theirs.st_ino)


class RelayNotes:
    """The relay's notes for the hook runs it answers: the log beside the socket it serves,
    which is the socket the hook found for its store (a file a request names is never opened
    here). Blocking: run in a worker thread. A relay answers many hook runs: where the store
    is and what its database said are worth one line per outage, as in the store's own log,
    not one per event for as long as it lasts, so each store's outage is noted once (the log
    it went to; None: none could be written) until the store answers a hook run again."""

    _noted: ClassVar[dict[str, str | None]] = {}
    _lock = threading.Lock()  # runs at once note one line

    def __init__(self, db_path: str) -> None:
        self.db_path = db_path

    def outage(self, error: StoreError) -> str | None:
        cwd = str(Path.cwd())
        if not isinstance(error, StoreUnavailable):  # a refused write: each time, as it is met
            return note_outage(self.db_path, os.environ, cwd, error)
        with self._lock:
            if self.db_path not in self._noted:
                # A daemon's stderr is that very log, where the store has said the outage
                # (a database's: nothing else stops a relay answering): nothing is written twice.
                socket_file = socket_path(self.db_path, os.environ, cwd)
                daemons = log_path(socket_file) if socket_file is not None else None
                logged = daemons is not None and _is_stderr(daemons)
                self._noted[self.db_path] = (
                    daemons if logged else note_outage(self.db_path, os.environ, cwd, error)
                )
            return self._noted[self.db_path]

    def over(self) -> None:
        """The store answered: its outage is over."""
        self._noted.pop(self.db_path, None)

    def failure(self, error: BaseException) -> str | None:
        where = note_failure(self.db_path, os.environ, str(Path.cwd()), error)
        if where is None:  # this process's log holds the details
            log.error("relayed hook event failed", exc_info=error)
        else:
            log.error("relayed hook event failed unexpectedly; its details are in %s", where)
        return where
