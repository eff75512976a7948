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

What the hook says is in the words of ``prompts/hooks.toml`` (``outcome.kept_words``): what became of
the event, that there is no decision, and, for an outage, where its details are; never where
the store is or what its database said, which the hook's host may show the model.

The folder is the process's own (``spool_folder`` of its own environment; the relay's is
computed at its start, never from a request), and it is used only as the relay's socket
folder is: a folder, not a link, of this user's, open to nobody else (mode 0700). One that
is not is never read, written or emptied: a report that would be kept there is dropped, and
the hook says why. Every file in it is opened without following a link and without waiting
on a FIFO, and read only when it is a regular file, so nothing placed there can freeze the
process or have it remove a file elsewhere.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import logging
import os
import stat
import time
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

import anyio

from ..deadlines import Deadline, call_deadline
from ..errors import StoreUnavailable
from ..locations import FOLDER
from ..rules.wording.hook_input import hook_input_words
from . import hosts
from .dispatch import HookInputError, answer, prepare, prepare_remote
from .relay import MAX_STDIN, SERVED_HOOK_SECONDS
from .triage import Triaged

# The store's waits end by the deadline and say why themselves; past it by this much, whatever
# else still holds the answer is cut short.
DEADLINE_GRACE_SECONDS = 0.5

if TYPE_CHECKING:
    from ..services.runtime import Runtime
    from ..settings import Settings

log = logging.getLogger(__name__)

# The events that report what happened (see the module docstring).
SPOOLED_KINDS = frozenset({"post_tool", "post_tool_failure", "stop_failure"})
# How long one hook run spends recording spooled events before its own: well within a
# host's patience (15 s in all), beside the store's own bounds.
REPLAY_SECONDS = 3.0
MAX_SPOOLED = 10_000
# A spooled event is its stdin (at most what the relay takes) JSON-escaped, six bytes a
# character at worst, and a few variables: a larger file is none of ours.
SPOOLED_FILE_BYTES = 6 * MAX_STDIN + 64 * 1024
# Opening a file of the spool: never through a link, never waiting on a FIFO's writer.
NO_LINK_NO_WAIT = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
# The variables a spooled event is triaged with again (hooks/triage.py reads these): the
# task named, and the project variables of every host.
TASK_VARIABLE = "ESCALATION_TASK"


@functools.cache
def kept_variables() -> tuple[str, ...]:
    """The task's variable and every registered host's project variables, once each."""
    named = (name for host in hosts.every() for name in host.project_variables)
    return tuple(dict.fromkeys((TASK_VARIABLE, *named)))


def spool_folder(db_path: str, env: Mapping[str, str]) -> Path:
    """``${XDG_STATE_HOME:-~/.local/state}/mcp-server-escalation/spool/<store's digest>``."""
    given = env.get("XDG_STATE_HOME")
    base = Path(given) if given else Path(env.get("HOME") or Path.home()) / ".local" / "state"
    digest = hashlib.sha256(db_path.encode("utf-8")).hexdigest()[:16]
    return base / FOLDER / "spool" / digest


def own_spool(db_path: str) -> Spool:
    """The spool of the store at ``db_path`` in the folder this process's own environment
    names: the relay's, computed at its start, so a request's environment never chooses
    where the relay writes or what it removes."""
    return Spool(spool_folder(db_path, os.environ))


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
    return {name: env[name] for name in kept_variables() if name in env}


class UnsafeSpool(Exception):
    """The spool folder is not this user's private folder (a link, another's, open to others)."""


class Spool:
    """The spool folder of one store on this machine."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._made = 0

    def private(self, *, make: bool = False) -> bool:
        """Is the folder a folder (not a link) of this user's alone (``make``: made when missing)?
        Checked as the relay's socket folder is (``hooks/relay.py``)."""
        try:
            if make:
                self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            found = os.lstat(self.folder)
        except OSError:
            return False
        private = stat.S_ISDIR(found.st_mode) and found.st_uid == os.getuid() and not found.st_mode & 0o077
        if not private:
            log.warning("hook spool: %s is not a private folder of this user's; not used", self.folder)
        return private

    def waiting(self) -> list[Path]:
        """The spooled events, oldest first (none in a folder that is not private)."""
        if not self.folder.exists() or not self.private():
            return []
        try:
            return sorted(self.folder.glob("*.json"))
        except OSError:
            return []

    def keep(self, event: Spooled) -> int | None:
        """Write ``event`` behind the others; how many now wait (None: the spool is full).
        Raises ``UnsafeSpool`` when the folder is not private."""
        if not self.private(make=True):
            raise UnsafeSpool(str(self.folder))
        waiting = len(self.waiting())
        if waiting >= MAX_SPOOLED:
            return None
        self._made += 1
        name = f"{time.time_ns():020d}-{os.getpid():08d}-{self._made:04d}"
        partial = self.folder / f"{name}.part"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | NO_LINK_NO_WAIT
        with os.fdopen(os.open(partial, flags, 0o600), "w", encoding="utf-8") as out:
            out.write(json.dumps(asdict(event), ensure_ascii=False))
        partial.rename(self.folder / f"{name}.json")  # whole, or not there
        return waiting + 1

    @contextlib.contextmanager
    def turn(self) -> Iterator[bool]:
        """This process's turn to replay: True when no other process holds it."""
        handle = self._lock() if self.private(make=True) else None
        if handle is None:
            yield False
            return
        try:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                yield False
                return
            try:
                yield True
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
        finally:
            os.close(handle)

    def _lock(self) -> int | None:
        """The lock file, opened (None: it cannot be). Anything else in its place (a FIFO, a
        link) is removed once and a regular file made: the folder is private."""
        lock = self.folder / ".lock"
        for flags in (os.O_CREAT, os.O_CREAT | os.O_EXCL):
            try:
                handle: int | None = os.open(lock, os.O_RDONLY | flags | NO_LINK_NO_WAIT, 0o600)
            except OSError:
                handle = None
            if handle is not None and stat.S_ISREG(os.fstat(handle).st_mode):
                return handle
            if handle is not None:
                os.close(handle)
            log.warning("hook spool: %s is not a regular file; replaced", lock)
            with contextlib.suppress(OSError):
                lock.unlink()
        return None


def _load(path: Path) -> Spooled | None:
    """The event in ``path``; None (and the entry removed: a link itself, never its target)
    when it is no event of ours."""
    try:
        return Spooled(**json.loads(_read_regular(path)))
    except (OSError, ValueError, TypeError) as exc:
        log.warning("hook spool: %s is unreadable (%s); removed", path.name, exc)
        with contextlib.suppress(OSError):
            path.unlink()
        return None


def _read_regular(path: Path) -> str:
    """The text of ``path`` when it is a regular file of a spooled event's size; else OSError
    (a link, a FIFO, a device, a folder, a file too large)."""
    handle = os.open(path, os.O_RDONLY | NO_LINK_NO_WAIT)
    with os.fdopen(handle, "rb") as opened:
        found = os.fstat(handle)
        if not stat.S_ISREG(found.st_mode):
            raise OSError(f"{path.name} is not a regular file")
        if found.st_size > SPOOLED_FILE_BYTES:
            raise OSError(f"{path.name} is larger than a spooled event ({SPOOLED_FILE_BYTES} bytes)")
        return opened.read(SPOOLED_FILE_BYTES + 1).decode("utf-8")


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
    recorded). Each door words it for its reader (``outcome.py``)."""

    folder: Path
    waiting: int | None
    outage: StoreUnavailable | None
    unsafe: bool = False  # the folder was not private: dropped, not kept
    limit: ClassVar[int] = MAX_SPOOLED


async def answer_or_keep(
    rt: Runtime,
    settings: Settings,
    triaged: Triaged,
    event: Spooled,
    spool: Spool,
    seconds: float = SERVED_HOOK_SECONDS,
) -> tuple[str, Kept | None]:
    """The host's answer to ``event`` (stdout; "" for none), after the spooled events are
    recorded; a report the store cannot take now is spooled (no decision, and what became of
    it). The hook process, the relay and the HTTP route all answer through here.

    Within ``seconds`` (or the hook run's own deadline, when that is earlier), whatever the
    store does: its waits share that deadline, and an answer still not given by then is given
    as the store's silence (a report kept, a check with no decision). A report kept after a
    write of it committed is recorded once all the same: its delivery claim keeps it once."""
    with call_deadline(seconds) as deadline:
        try:
            return await _answer_in_time(rt, settings, triaged, event, spool, deadline)
        except StoreUnavailable as exc:
            return "", kept_or_raise(exc, triaged, event, spool)


async def _answer_in_time(
    rt: Runtime, settings: Settings, triaged: Triaged, event: Spooled, spool: Spool, deadline: Deadline
) -> tuple[str, Kept | None]:
    """The answer in order, or ``StoreUnavailable`` once ``deadline`` is past (and what its
    writes so far make of the event)."""
    with anyio.move_on_after(deadline.left() + DEADLINE_GRACE_SECONDS):
        return await _answer_in_order(rt, settings, triaged, event, spool)
    raise StoreUnavailable(
        rt.db.path,
        f"the hook event was not answered within {deadline.seconds:g} s",
        recorded=None if deadline.writes else False,
    )


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
    try:
        return Kept(spool.folder, spool.keep(event), outage)
    except UnsafeSpool:
        return Kept(spool.folder, None, outage, unsafe=True)
