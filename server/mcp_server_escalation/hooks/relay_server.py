"""The hook relay's server: a running process answers hook runs for the store it has open.

Started by ``serve`` (the MCP server a host runs for its session), by ``hook relay``
(run by hand for hosts that run only the hooks) and, through ``relay_daemon.py``, by
``hook daemon`` (which a hook run starts when nothing listens). It listens on the store's
socket (``relay.py``) and answers each forwarded hook run exactly as the hook process
would have: the hook's own options, environment and working directory decide its
settings, and ``dispatch.py`` turns its stdin into the host's JSON with the same code. It
declines (the hook then runs itself) when the hook's settings name another store, other
prompts or another config file than the ones this process has loaded, so a relayed answer
can never differ from a local one.

Whoever can reach the socket (any process of the user: the folder and the socket are
private to them) may send anything, so a request never makes this process read a file or
wait for anyone on its event loop, which also runs the MCP server's tool calls:

- The config file a hook names is never read here. A hook whose config is not the very
  file this process loaded, unchanged since (``FileStamp``), is declined; the hook then
  reads its own. Looking it up (``stat``, ``realpath``) runs in a worker thread.
- Reports wait in the relay's own spool (``own_spool``), never in one a request names.
- At most ``RelayLimits.connections`` connections at once (the rest are closed at once, and
  their hooks run themselves), each with a size limit and a time limit on its request and
  on the whole exchange. A failed ``accept`` (no file descriptor left) is logged and
  retried, never the end of the relay.

One socket per store: the first process to bind it serves; the others retry every
``RETRY_SECONDS`` and take over when it goes away. A socket left by a killed process is
detected (nothing accepts) and replaced; so is anything else at the socket's path (a
symlink, dangling or not; a file; an empty folder): the folder is this user's alone and
the name this store's, so nothing there is anyone else's. A folder with contents is left
alone (it may hold somebody's work): the relay says why it does not listen, once, and
tries again every ``RETRY_SECONDS``.

What became of each event is said to the hook as the hook process says it (``outcome.py``):
what became of the event, no decision, and where the details are; where the store is and
what its database said go to the log beside the socket, once per outage, never into the
hook's stderr, which its host may show the model; so do a store's refusal of a write and a
bug's details (``relay_words.py``). A relayed run is answered within ``SERVED_HOOK_SECONDS``,
whatever the store does: its waits share that deadline (``deadlines.py``).
"""

from __future__ import annotations

import errno
import functools
import json
import logging
import os
import socket
import stat
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from anyio.abc import SocketListener, SocketStream

from ..deadlines import call_deadline
from ..errors import ConfigError
from ..locations import is_database_url
from ..services.background import alongside
from ..services.runtime import Runtime
from ..settings import FileStamp, LoadedConfig, Settings, config_path
from .dispatch import prepare
from .outcome import CommandAnswer, Ending, Outcome, answered, failed, for_command
from .relay import HOSTS, MAX_STDIN, OPTIONS, PROTOCOL, SERVED_HOOK_SECONDS, socket_dir, socket_path
from .relay_words import RelayNotes
from .spool import Spool, Spooled, answer_or_keep, kept_env, own_spool

log = logging.getLogger(__name__)

RETRY_SECONDS = 30.0
# The store's waits end by a relayed run's deadline and say why themselves; past it by this
# much, whatever else still holds the answer is cut short.
CUT_SHORT_AFTER_SECONDS = 1.0
# A failed accept (most often: no file descriptor left) is tried again after this long.
ACCEPT_RETRY_SECONDS = 0.5


@dataclass(frozen=True)
class RelayLimits:
    """What one client may cost the process that serves the socket."""

    # Hook runs arrive one per tool call, a few at once with parallel tool calls and
    # subagents; beyond this many at once a connection is closed and its hook runs itself.
    connections: int = 32
    # A request is the hook's stdin (at most ``relay.MAX_STDIN``, which the hook checks) as
    # a JSON string, its environment and its options: twice the stdin leaves room for the
    # escaping of a JSON payload. Larger requests are dropped (the hook runs itself).
    request_bytes: int = 2 * MAX_STDIN
    # A hook sends its whole request as soon as it is connected (it has read its stdin).
    request_seconds: float = 5.0
    # The whole exchange; the hook itself gives up after ``relay.ANSWER_TIMEOUT`` (8 s) and
    # runs itself, and the claim of its event keeps the two from counting twice.
    exchange_seconds: float = 60.0


LIMITS = RelayLimits()
# Looking up the file names a hook gives (its config, store and prompts) runs in worker
# threads of the relay's own (``lookups``): a lookup that hangs (a dead network mount) can
# hold these, never the threads the store waits in.
LOOKUP_THREADS = 4


def _same_config(chosen: Path | None, ours: LoadedConfig | None) -> bool:
    """Is ``chosen`` (the hook's config file) the file this process read, unchanged since?"""
    if chosen is None or ours is None:
        return chosen is None and ours is None
    try:
        return FileStamp.of(chosen.stat()) == ours.stamp
    except OSError:
        return False


def _hook_settings(
    ours: Settings, options: Mapping[str, str], env: Mapping[str, str], cwd: str
) -> Settings | None:
    """The hook's settings when it would decide with what this process has loaded; else None.

    Blocking (``stat``, ``realpath``): run in a worker thread. Raises ``ConfigError`` when
    the hook's own run would (a config file that does not exist)."""
    chosen = config_path(options.get("--config"), env, cwd)
    if not _same_config(chosen, ours.loaded_config):
        return None  # the hook reads its own config: this process never opens it
    theirs = Settings.from_config(
        ours.loaded_config, chosen, db=options.get("--db"), prompts=options.get("--prompts"), env=env, cwd=cwd
    )

    def place(path: str | os.PathLike[str] | None) -> str | None:
        if path is None or is_database_url(str(path)):
            return None if path is None else str(path)
        return os.path.realpath(path)

    same = (
        place(ours.db_path) == place(theirs.db_path)
        and place(ours.prompts_dir) == place(theirs.prompts_dir)
        and ours.thresholds == theirs.thresholds  # equal unless set without a file (tests)
        and ours.guidance == theirs.guidance
    )
    return theirs if same else None


async def respond(
    rt: Runtime,
    request: Mapping[str, Any],
    lookups: anyio.CapacityLimiter | None = None,
    spool: Spool | None = None,
) -> dict[str, Any]:
    """The reply to one forwarded hook run: its stdout and stderr, or ``fallback``.

    ``lookups``: the threads that look up its file names; ``spool``: the relay's own."""
    host, options, env, cwd, stdin = (
        request.get("host"),
        request.get("options"),
        request.get("env"),
        request.get("cwd"),
        request.get("stdin"),
    )
    if (
        request.get("protocol") != PROTOCOL
        or host not in HOSTS
        or not isinstance(options, dict)
        or not set(options) <= set(OPTIONS)
        or not isinstance(env, dict)
        or not isinstance(cwd, str)
        or not isinstance(stdin, str)
    ):
        return {"protocol": PROTOCOL, "fallback": "malformed request"}
    env_map = {str(k): str(v) for k, v in env.items()}
    given = {str(k): str(v) for k, v in options.items()}
    lookup = functools.partial(_hook_settings, rt.settings, given, env_map, cwd)
    try:
        # Abandoned when the run's time is up: a look-up that hangs keeps its thread, not the run.
        settings = await anyio.to_thread.run_sync(lookup, limiter=lookups, abandon_on_cancel=True)
    except ConfigError:
        return {"protocol": PROTOCOL, "fallback": "config"}  # the hook reports its own error
    if settings is None:
        return {"protocol": PROTOCOL, "fallback": "another store, prompts or config"}
    try:
        ending = await _handled(rt, settings, str(host), env_map, cwd, stdin, spool)
    except Exception as exc:  # noqa: BLE001 (as in the hook process: a bug never breaks the host)
        ending = failed(exc)
    if ending.outcome is Outcome.ANSWERED:
        answer = CommandAnswer.giving(ending.output)
    else:  # its details are written to a log: in a worker thread
        job = functools.partial(for_command, ending, rt.prompts, RelayNotes(rt.settings.db_path))
        answer = await anyio.to_thread.run_sync(job)
    return {"protocol": PROTOCOL, "stdout": answer.stdout, "stderr": answer.stderr}


async def _handled(
    rt: Runtime, settings: Settings, host: str, env: dict[str, str], cwd: str, stdin: str, spool: Spool | None
) -> Ending:
    """What became of the forwarded event, answered with the hook's ``settings``."""
    triaged = prepare(stdin.encode("utf-8", "surrogatepass"), settings, env, cwd, entry=host)
    if triaged is None:
        return answered("", None)
    # The hook's machine is this one: its reports wait in the relay's spool.
    event = Spooled(host, stdin, kept_env(env), cwd)
    out, kept = await answer_or_keep(rt, settings, triaged, event, spool or own_spool(rt.settings.db_path))
    if kept is None:
        RelayNotes(rt.settings.db_path).over()
    return answered(out, kept)


async def serve_one(
    rt: Runtime,
    stream: SocketStream,
    limits: RelayLimits = LIMITS,
    lookups: anyio.CapacityLimiter | None = None,
    spool: Spool | None = None,
) -> None:
    """One connection; whatever it sends, the listener (and the MCP server) keeps running."""
    try:
        async with stream:
            with anyio.move_on_after(limits.exchange_seconds):
                await _exchange(rt, stream, limits, lookups, spool)
    except Exception:  # a bad peer or a bug must never take the server down
        log.exception("hook relay: a connection failed")


async def _receive(stream: SocketStream, limits: RelayLimits) -> bytes | None:
    """The whole request; None when it is too big or too slow (the hook then runs itself)."""
    chunks: list[bytes] = []
    size = 0
    with anyio.move_on_after(limits.request_seconds):
        try:
            while True:
                chunk = await stream.receive()
                size += len(chunk)
                if size > limits.request_bytes:
                    return None
                chunks.append(chunk)
        except anyio.EndOfStream:
            return b"".join(chunks)
    return None


async def _exchange(rt: Runtime, stream: SocketStream, limits: RelayLimits, *served: Any) -> None:
    body = await _receive(stream, limits)
    if body is None:
        return
    try:
        request = json.loads(body.decode("utf-8", "surrogatepass"))
    except (ValueError, RecursionError):
        return
    if not isinstance(request, dict):
        return
    reply = await _respond_in_time(rt, request, *served)
    encoded = json.dumps(reply, ensure_ascii=False).encode("utf-8", "surrogatepass")
    with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        await stream.send(encoded)


async def _respond_in_time(rt: Runtime, request: dict[str, Any], *served: Any) -> dict[str, Any]:
    """``respond`` (with the relay's look-up threads and spool) within ``SERVED_HOOK_SECONDS``
    of the request, whatever the store does: its waits share that deadline, so the hook has
    its answer well before it would give up on the relay. One still not given just after it
    (a look-up that hangs) is declined instead: the hook runs itself with what is left of its
    own budget."""
    with call_deadline(SERVED_HOOK_SECONDS):
        with anyio.move_on_after(SERVED_HOOK_SECONDS + CUT_SHORT_AFTER_SECONDS):
            return await respond(rt, request, *served)
    return {"protocol": PROTOCOL, "fallback": "not answered in time"}


Handler = Callable[[SocketStream], Awaitable[None]]


async def accept(listener: SocketListener, handle: Handler, limits: RelayLimits = LIMITS) -> None:
    """Hand each connection to ``handle``, at most ``limits.connections`` at once, until closed.

    A connection beyond that is closed at once: its hook runs itself instead of waiting
    ten seconds for an answer. A failed accept (no file descriptor left) is logged and
    retried: the relay serves again as soon as descriptors are free.
    """
    busy = 0

    async def handled(stream: SocketStream) -> None:
        nonlocal busy
        try:
            await handle(stream)
        finally:
            busy -= 1

    async with anyio.create_task_group() as tg:
        while True:
            try:
                stream = await listener.accept()
            except anyio.ClosedResourceError:
                return
            except anyio.BrokenResourceError as exc:
                log.warning(
                    "hook relay: cannot accept a connection (%s); retrying in %g s",
                    exc.__cause__ or exc,
                    ACCEPT_RETRY_SECONDS,
                )
                await anyio.sleep(ACCEPT_RETRY_SECONDS)
                continue
            if busy >= limits.connections:
                log.debug("hook relay: %d connections open; one turned away", busy)
                await stream.aclose()
                continue
            busy += 1
            tg.start_soon(handled, stream)


def _is_live(path: str) -> bool:
    """Does a process accept on ``path``?"""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(0.5)
        try:
            probe.connect(path)
        except OSError:
            return False
    return True


# Why ``bind`` did not listen when another process serves the socket (not a problem).
SERVED = "another process serves this store's socket (it answers identically)"


def _clear(path: str) -> str | None:
    """Make ``path`` free to bind: None when it is, else why it is not (``SERVED``, or what
    is in the way). What nothing serves is removed, unless it is a folder with contents."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot look at it: {exc.strerror}"
    if stat.S_ISSOCK(mode) and _is_live(path):
        return SERVED
    try:
        if stat.S_ISDIR(mode):
            Path(path).rmdir()
        else:
            Path(path).unlink()
    except OSError as exc:
        what = "a folder" if stat.S_ISDIR(mode) else "a file"
        return f"{what} is in the way and cannot be removed ({exc.strerror}); remove it"
    if not stat.S_ISSOCK(mode):  # a stale socket is routine; anything else is worth a word
        kind = "empty folder" if stat.S_ISDIR(mode) else "symlink" if stat.S_ISLNK(mode) else "file"
        log.warning("hook relay: removed the %s that was in the way at %s", kind, path)
    return None


def socket_inode(path: str) -> int:
    """The socket file's inode: tells our socket from a successor's at the same path."""
    return Path(path).stat().st_ino


def release(path: str, inode: int) -> None:
    """Remove the socket if it is still ours, not a successor's."""
    with suppress(OSError):
        if Path(path).stat().st_ino == inode:
            Path(path).unlink()


async def bind(path: str) -> SocketListener | str:
    """Listen on ``path``, clearing what nothing serves there; else why not (``SERVED``
    while another process serves it)."""
    blocked = _clear(path)
    if blocked is not None:
        return blocked
    try:
        return await anyio.create_unix_listener(path, mode=0o600)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:  # in use: another process bound it first
            return SERVED
        return str(exc)


async def _listen(rt: Runtime, path: str, limits: RelayLimits) -> None:
    """Serve the socket, or wait for it to be free and then serve it."""
    lookups = anyio.CapacityLimiter(LOOKUP_THREADS)
    spool = own_spool(rt.settings.db_path)
    said = SERVED  # what was last said about why it does not listen: said once, not every retry
    while True:
        listener = await bind(path)
        if isinstance(listener, str):
            if listener != said:
                again = f"trying again every {RETRY_SECONDS:g} s"
                log.warning("hook relay: not listening on %s: %s; %s", path, listener, again)
            said = listener
            log.debug("hook relay: %s is not free; trying again in %g s", path, RETRY_SECONDS)
            await anyio.sleep(RETRY_SECONDS)
            continue
        said = SERVED
        inode = socket_inode(path)
        log.info("hook relay listening on %s", path)
        try:

            async def handle(stream: SocketStream) -> None:
                await serve_one(rt, stream, limits, lookups, spool)

            await accept(listener, handle, limits)
        finally:
            release(path, inode)
            with anyio.CancelScope(shield=True):
                await listener.aclose()


def no_socket_reason(db_path: str, env: Mapping[str, str]) -> str:
    """Why the store at ``db_path`` has no relay socket (``relay.socket_path`` gave None)."""
    if db_path == ":memory:":
        return "the store is in memory"
    if socket_dir(env) is None:
        return (
            "no private folder for the socket ($XDG_RUNTIME_DIR/mcp-server-escalation or"
            " ${TMPDIR:-/tmp}/mcp-server-escalation-<uid> must be yours alone)"
        )
    return "the socket's path would be too long for a Unix socket"


@asynccontextmanager
async def relay(rt: Runtime, limits: RelayLimits | None = None) -> AsyncIterator[str | None]:
    """Answer hook runs for ``rt``'s store until exit; yields the socket path (None: no relay)."""
    if not rt.settings.hooks.relay:
        yield None
        return
    path = socket_path(rt.settings.db_path, os.environ, str(Path.cwd()))
    if path is None:
        log.warning("hook relay not started: %s", no_socket_reason(rt.settings.db_path, os.environ))
        yield None
        return
    async with alongside(functools.partial(_listen, rt, path, limits or LIMITS)):
        yield path
