"""Starting the relay daemon: a hook run no relay answered starts one for the next runs.

Hooks-only set-ups (no MCP server for the host's session) would pay the full ~300 ms of
a hook loading everything on every tool call. So a hook run that found nobody listening on
its store's socket starts ``hook daemon`` for the store, detached, and waits for it to
listen (``relay.py``); that run and the later ones are answered by the daemon
(``relay_daemon.py``), which exits by itself after ``[hooks] relay_idle_minutes`` without a
hook run. The pattern of long-lived helper daemons (dmypy, eslint_d).

One daemon per store: a lock file beside the socket. The hook takes it before it starts a
daemon and hands the locked file to the daemon, which holds it for its whole life; a hook
that finds the lock taken starts nothing (a daemon is starting or serving). So two hooks
starting at once never start two daemons, and the kernel releases the lock however the
daemon ends.

The daemons' log, beside the socket, is also where a hook run's unexpected failure (a bug)
leaves its details (``note_failure``), and a store's outage its own words (``note_outage``:
where the store is and what its database said), whether the hook met it or the relay that
answered it: the hook's stderr is its host's, one line a person reads, and says where they
are. It is the one log a hook run has (the spool keeps events, not a log), and the one a
person already looks at for a hook's trouble.

Imported by a hook run only when no relay answered, and it uses the standard library only
(``relay.py`` explains why).
"""

from __future__ import annotations

import fcntl
import os
import sys
import time
import tomllib
from collections.abc import Mapping

from ..locations import chosen_store, default_config
from .relay import socket_path

# Keep equal to the default of ``HooksConfig.relay_idle_minutes`` (a test holds them equal).
# A minute: an agent's turns rarely leave a minute without a tool call, and nothing of ours
# should run much longer than that once its host has exited.
DEFAULT_IDLE_MINUTES = 1.0
# A config file is a few hundred bytes; a bigger one is left to the full path to judge.
MAX_CONFIG_BYTES = 1024 * 1024
# A daemon logs a few lines per life: this holds thousands of lives, and stays bounded.
MAX_LOG_BYTES = 1024 * 1024
# One failure's details (a traceback of a deep recursion runs long): clipped to this.
MAX_FAILURE_BYTES = 64 * 1024
# The daemon's command, after the hook's own options (relay.OPTIONS) as it was given them.
DAEMON_ACTION = ("hook", "daemon")


def lock_path(socket_file: str) -> str:
    """The lock file that the one daemon of the socket's store holds."""
    return socket_file.removesuffix(".sock") + ".lock"


def log_path(socket_file: str) -> str:
    """Where the daemons of the socket's store write their stderr, one after the other."""
    return socket_file.removesuffix(".sock") + ".log"


def open_log(socket_file: str) -> int:
    """The daemons' log, for appending; emptied first once it has grown past ``MAX_LOG_BYTES``.

    A daemon may be writing to it meanwhile: its appends land at the new end (``O_APPEND``),
    so emptying loses older lines only."""
    fd = os.open(
        log_path(socket_file), os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
    )
    if os.fstat(fd).st_size > MAX_LOG_BYTES:
        os.ftruncate(fd, 0)
    return fd


def note_failure(db_flag: str | None, env: Mapping[str, str], cwd: str, failure: BaseException) -> str | None:
    """Append a hook run's unexpected failure (when, which process, the exception and its
    traceback) to the log of its store's daemons; that log's path, or None when there is none
    (no private socket folder, a store in memory) or it cannot be written.

    ``db_flag``, ``env`` and ``cwd`` name the store's socket as ``relay.try_relay`` finds it
    (the hook's own) and as a relay binds it (the relay's own): the hook and a relay that
    answered it name the same file."""
    import traceback  # noqa: PLC0415 (only on a failure: a hook run's imports stay few)

    head = f"{_now()} ERROR hook run (process {os.getpid()}) failed unexpectedly; no decision:\n"
    details = "".join(traceback.format_exception(failure)).encode("utf-8", "backslashreplace")
    if len(details) > MAX_FAILURE_BYTES:
        details = details[: MAX_FAILURE_BYTES // 2] + b"\n[...]\n" + details[-MAX_FAILURE_BYTES // 2 :]
    return _append(_store_socket(db_flag, env, cwd), head.encode("utf-8", "backslashreplace") + details)


def note_outage(db_flag: str | None, env: Mapping[str, str], cwd: str, outage: BaseException) -> str | None:
    """Append to the log of its store's daemons, as ``note_failure`` does, that a hook run met
    the store down, or could not open it at all: the error's own words (where the store is,
    its password hidden, and what its database said), which the hook's stderr never carries.
    That log's path, or None."""
    line = f"{_now()} WARNING hook run (process {os.getpid()}) made no decision: {outage}\n"
    return _append(_store_socket(db_flag, env, cwd), line.encode("utf-8", "backslashreplace"))


def _store_socket(db_flag: str | None, env: Mapping[str, str], cwd: str) -> str | None:
    return socket_path(chosen_store(db_flag, env), env, cwd)


def _now() -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S")


def _append(socket_file: str | None, data: bytes) -> str | None:
    """``data`` appended to the log of the socket's daemons; its path, or None when the store
    has no socket (no private socket folder, a store in memory) or it cannot be written."""
    if socket_file is None:
        return None
    try:
        fd = open_log(socket_file)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
    except OSError:
        return None
    return log_path(socket_file)


def open_lock(socket_file: str) -> int:
    """The store's lock file, opened (created 0600 if missing; never through a symlink)."""
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    return os.open(lock_path(socket_file), flags, 0o600)


def take_lock(fd: int) -> bool:
    """Hold the lock on ``fd`` (already held through this open file: True); False if taken."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


def idle_minutes(options: Mapping[str, str], env: Mapping[str, str], cwd: str) -> float:
    """``[hooks] relay_idle_minutes`` of the hook's config; 0 when no daemon may start.

    Read here with the standard library because the full settings cost what the daemon is
    meant to save. Anything this cannot read plainly (a missing explicit file, bad TOML, a
    wrong type) gives 0: the hook's own run then reports the problem as it always did.
    """
    chosen = options.get("--config") or env.get("ESCALATION_CONFIG")
    if chosen:
        path = os.path.join(cwd, os.path.expanduser(chosen))
    else:
        path = default_config(env)
        if not os.path.exists(path):
            return DEFAULT_IDLE_MINUTES
    try:
        with open(path, "rb") as file:
            raw = file.read(MAX_CONFIG_BYTES + 1)
        if len(raw) > MAX_CONFIG_BYTES:
            return 0.0

        hooks = tomllib.loads(raw.decode("utf-8")).get("hooks", {})
    except (OSError, UnicodeDecodeError, ValueError):
        return 0.0
    if not isinstance(hooks, dict) or hooks.get("relay", True) is not True:
        return 0.0  # `relay = false`: nothing may listen, a daemon included
    value = hooks.get("relay_idle_minutes", DEFAULT_IDLE_MINUTES)
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        return 0.0
    return float(value)


def daemon_alive(socket_file: str) -> bool:
    """Does a daemon of the socket's store hold its lock (starting, serving or leaving)?"""
    try:
        fd = os.open(lock_path(socket_file), os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        return not take_lock(fd)
    finally:
        os.close(fd)  # and with it a lock this probe took


def daemon_coming(socket_file: str, options: Mapping[str, str], env: Mapping[str, str], cwd: str) -> bool:
    """Start the store's daemon unless one is already there; True when one is (about to be) there.

    False when the config starts none, or it could not be started.
    """
    if idle_minutes(options, env, cwd) <= 0:
        return False
    try:
        lock = open_lock(socket_file)
    except OSError:
        return False
    try:
        if not take_lock(lock):
            return True  # another hook started it: it is starting, serving or leaving
        log = open_log(socket_file)
        try:
            # One word each: a value starting with "-" must not read as an option.
            words = [f"{name}={value}" for name, value in sorted(options.items())]
            # -P: the project's folder (the daemon's working directory) must not shadow a module.
            argv = [sys.executable, "-P", "-m", "mcp_server_escalation", *words, *DAEMON_ACTION]
            _detach([*argv, "--lock-fd", str(lock)], lock, log)
        finally:
            os.close(log)
    except OSError:
        return False
    finally:
        os.close(lock)  # the daemon holds its own copy of the locked file from here on
    return True


def _detach(argv: list[str], lock: int, log: int) -> None:
    """Run ``argv`` as a daemon: a new session, no terminal, stdio off the host's pipes.

    Forked twice so that the daemon is nobody's child (no zombie, the hook exits at once),
    with stdin and stdout on /dev/null (a host waits for the hook's stdout to close) and
    stderr in the log file; only the locked file is inherited.
    """
    first = os.fork()
    if first == 0:
        try:
            os.setsid()
            if os.fork() == 0:
                null = os.open(os.devnull, os.O_RDWR)
                os.dup2(null, 0)
                os.dup2(null, 1)
                os.dup2(log, 2)
                os.set_inheritable(lock, True)
                os.closerange(3, lock)
                os.closerange(lock + 1, max(lock + 1, os.sysconf("SC_OPEN_MAX")))
                os.execv(sys.executable, argv)  # noqa: S606 (our own interpreter, a fixed argv)
        finally:
            os._exit(0)  # never return into the hook's code from a forked copy of it
    os.waitpid(first, 0)
