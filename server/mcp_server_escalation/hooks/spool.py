"""Hook events the store could not take, kept on this machine until it can.

A hook reports what happened (a tool call that failed or passed, an API error that ended a
turn); when the store does not answer (its database down, stalled or out of connections),
that report would be lost: the host goes on, and never sends the event again. So the event,
as the host gave it, is written to a spool folder of this machine, one file per event, and
the host gets no decision at once (the store's bounds keep that well within its timeout).

The next hook run, relayed event or posted event that finds the store answering first
records every spooled event, oldest first, then its own: the order the host saw. Each is
recorded through the same path as a live event, so its delivery claim (``hook_events``)
keeps it once: an event recorded whose file was not yet removed (the process killed between
the two) is found claimed the next time and records nothing. One process replays at a time
(a lock file); one that finds the lock taken, or events still waiting when its time for
replaying is up, spools its own event behind them instead of overtaking them.

Only reports are spooled (after a tool call, a failure that ended a turn): a decision asked
for before a tool call is moot once the call has happened, and replaying it would gate
nothing. The folder holds at most ``MAX_SPOOLED`` events; past that an event is dropped and
the hook says so.

What the hook says is in the words of ``prompts/hooks.toml`` (``kept_words``): what became of
the event, that there is no decision, and, for an outage, where its details are; never where
the store is or what its database said, which the hook's host may show the model.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import time
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import StoreUnavailable
from ..locations import FOLDER
from ..rules.wording.hook_input import hook_input_words, hook_kept_words
from .dispatch import HookInputError, answer, prepare, prepare_remote
from .triage import Triaged

if TYPE_CHECKING:
    from ..prompts import PromptBook
    from ..services.runtime import Runtime
    from ..settings import Settings

log = logging.getLogger(__name__)

# The events that report what happened (see the module docstring).
SPOOLED_KINDS = frozenset({"post_tool", "post_tool_failure", "stop_failure"})
# How long one hook run spends recording spooled events before its own: well within a
# host's patience (15 s in all), beside the store's own bounds.
REPLAY_SECONDS = 3.0
MAX_SPOOLED = 10_000
# The variables a spooled event is triaged with again (hooks/triage.py reads these).
KEPT_VARIABLES = ("ESCALATION_TASK", "CLAUDE_PROJECT_DIR", "CURSOR_PROJECT_DIR")


def spool_folder(db_path: str, env: Mapping[str, str]) -> Path:
    """``${XDG_STATE_HOME:-~/.local/state}/mcp-server-escalation/spool/<store's digest>``."""
    given = env.get("XDG_STATE_HOME")
    base = Path(given) if given else Path(env.get("HOME") or Path.home()) / ".local" / "state"
    digest = hashlib.sha256(db_path.encode("utf-8")).hexdigest()[:16]
    return base / FOLDER / "spool" / digest


@dataclass(frozen=True)
class Spooled:
    """One event as the host gave it, and what it is triaged with: the hook's variables and
    working directory, or for an event posted over HTTP the task its header named."""

    entry: str
    stdin: str
    env: dict[str, str]
    cwd: str | None
    remote: bool = False
    task: str | None = None

    def triaged(self, settings: Settings) -> Triaged | None:
        raw = self.stdin.encode("utf-8", "surrogatepass")
        if self.remote:
            return prepare_remote(raw, settings, self.task, entry=self.entry)
        return prepare(raw, settings, self.env, self.cwd, entry=self.entry)


def kept_env(env: Mapping[str, str]) -> dict[str, str]:
    return {name: env[name] for name in KEPT_VARIABLES if name in env}


class Spool:
    """The spool folder of one store on this machine."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._made = 0

    def waiting(self) -> list[Path]:
        """The spooled events, oldest first."""
        try:
            return sorted(self.folder.glob("*.json"))
        except OSError:
            return []

    def keep(self, event: Spooled) -> int | None:
        """Write ``event`` behind the others; how many now wait (None: the spool is full)."""
        waiting = len(self.waiting())
        if waiting >= MAX_SPOOLED:
            return None
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._made += 1
        name = f"{time.time_ns():020d}-{os.getpid():08d}-{self._made:04d}"
        partial = self.folder / f"{name}.part"
        partial.write_text(json.dumps(asdict(event), ensure_ascii=False), encoding="utf-8")
        partial.rename(self.folder / f"{name}.json")  # whole, or not there
        return waiting + 1

    @contextlib.contextmanager
    def turn(self) -> Iterator[bool]:
        """This process's turn to replay: True when no other process holds it."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            handle = (self.folder / ".lock").open("a")
        except OSError:
            yield False
            return
        with handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                yield False
                return
            try:
                yield True
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)


def _load(path: Path) -> Spooled | None:
    try:
        return Spooled(**json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError) as exc:
        log.warning("hook spool: %s is unreadable (%s); removed", path.name, exc)
        with contextlib.suppress(OSError):
            path.unlink()
        return None


async def replay(rt: Runtime, settings: Settings, spool: Spool, seconds: float = REPLAY_SECONDS) -> bool:
    """Record the spooled events, oldest first; True once none waits.

    A store that stops answering meanwhile raises (``StoreUnavailable``), the event that met
    it left for next time. An event that can no longer be handled (the payload refused) is
    removed: it would stop every later one."""
    deadline = time.monotonic() + seconds
    for path in spool.waiting():
        if time.monotonic() >= deadline:
            return False
        event = _load(path)
        if event is None:
            continue
        try:
            triaged = event.triaged(settings)
        except HookInputError as exc:
            said = hook_input_words(rt.prompts, exc.problem)
            log.warning("hook spool: %s can no longer be handled (%s); removed", path.name, said)
            triaged = None
        if triaged is not None:
            await answer(rt, event.entry, triaged, settings)  # the answer is moot now
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    return True


def spoolable(triaged: Triaged) -> bool:
    return triaged.event.kind in SPOOLED_KINDS


@dataclass(frozen=True)
class Kept:
    """What became of a report the store did not take now: the spool ``folder`` it waits in,
    how many wait there with it (``waiting``; None: the spool was full and it was dropped),
    and the ``outage`` that met it (None: it waits behind earlier events still being
    recorded). Each door words it for its reader (``kept_words``)."""

    folder: Path
    waiting: int | None
    outage: StoreUnavailable | None


async def answer_or_keep(
    rt: Runtime, settings: Settings, triaged: Triaged, event: Spooled, spool: Spool
) -> tuple[str, Kept | None]:
    """The host's answer to ``event`` (stdout; "" for none), after the spooled events are
    recorded; a report the store cannot take now is spooled (no decision, and what became of
    it). The hook process, the relay and the HTTP route all answer through here."""
    try:
        return await _answer_in_order(rt, settings, triaged, event, spool)
    except StoreUnavailable as exc:
        return "", kept_or_raise(exc, triaged, event, spool)


def kept_or_raise(exc: StoreUnavailable, triaged: Triaged, event: Spooled, spool: Spool) -> Kept:
    """The event spooled when it is a report; else ``exc`` raised."""
    if not spoolable(triaged):
        raise exc
    return keep_unrecorded(spool, event, exc)


async def _answer_in_order(
    rt: Runtime, settings: Settings, triaged: Triaged, event: Spooled, spool: Spool
) -> tuple[str, Kept | None]:
    if spool.waiting() and spoolable(triaged):
        with spool.turn() as mine:
            emptied = mine and await replay(rt, settings, spool)
        if not emptied:
            return "", keep_unrecorded(spool, event, None)
    elif spool.waiting():
        with spool.turn() as mine:
            if mine:
                await replay(rt, settings, spool)
    return await answer(rt, event.entry, triaged, settings), None


def keep_unrecorded(spool: Spool, event: Spooled, outage: StoreUnavailable | None) -> Kept:
    """Spool ``event``, kept for ``outage`` (None: behind earlier events)."""
    return Kept(spool.folder, spool.keep(event), outage)


def kept_words(book: PromptBook, kept: Kept, log: str | None) -> str:
    """The hook's line on stderr for ``kept``; ``log``: where its outage's details were written."""
    return hook_kept_words(
        book, str(kept.folder), kept.waiting, MAX_SPOOLED, outage=kept.outage is not None, log=log
    )
