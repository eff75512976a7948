"""The hook relay's client: hand one hook run to a running server of the same store.

A hook runs as a new process on every tool call. Loading the services (pydantic above all)
costs a new process ~200 ms before it does anything, so when an MCP server of the same store
is running (the host starts it for the session) the hook forwards its whole run (argv
options, environment, working directory, stdin) over a Unix socket and prints what the
server answers. The server decides with the hook's own settings, so the answer is the one
the hook would have given itself (``relay_server.py``). When no server answers (none runs,
a stale socket, another store, a timeout) the hook does the work itself, as before. When
nothing listens at all, it starts the store's relay daemon (``relay_spawn.py``) and hands
its run to it once it listens; only a daemon that does not come up in time leaves the run
to the hook.

This module is imported by the console script before anything else and uses only the
standard library: importing it must cost next to nothing.

Where the socket lives: ``$XDG_RUNTIME_DIR/mcp-server-escalation/`` when the runtime
directory exists, else ``${TMPDIR:-/tmp}/mcp-server-escalation-<uid>/``; a directory only
its owner can enter (it is refused otherwise), one socket per store, named by checksums of
the store's resolved path.
"""

from __future__ import annotations

import io
import json
import os
import socket
import sys
import time
import zlib
from collections.abc import Mapping, Sequence

from ..locations import chosen_store, is_database_url
from .hosts import NAMES

PROTOCOL = 1
HOSTS = NAMES  # the registry's own names (hosts.py uses the standard library only, as this module)
OPTIONS = ("--db", "--config", "--prompts")
# Reaching a live server takes microseconds; a refused or missing socket fails at once.
CONNECT_TIMEOUT = 0.5
# The hosts give a hook 15 s (``hook install``); after 8 s without an answer the hook does
# the work itself, within what is left of ``HOOK_BUDGET_SECONDS``, and de-duplication by tool
# call keeps an event from counting twice.
ANSWER_TIMEOUT = 8.0
# A server that answers a hook event (relayed here, or posted to its HTTP hook route) answers
# within this, whatever its store does: well inside ``ANSWER_TIMEOUT``, so a relayed run is
# never left to wait the relay out and then do the work again itself.
SERVED_HOOK_SECONDS = 6.0
MAX_STDIN = 8 * 1024 * 1024  # bigger events (a Write of a huge file) are handled locally
# A first run waits this long for the daemon it started to listen (it takes ~0.3 s), then
# does the work itself: within the 15 s the hosts give a hook, with room for that.
DAEMON_WAIT_SECONDS = 5.0
DAEMON_POLL_SECONDS = 0.005
# A hook run answers within this, in all: the hosts' 15 s, less room for the process's
# start, its imports and its answer (3 s measured on a loaded machine). A run that does the
# work itself after waiting for a relay has what is left of it (``seconds_left``), not a
# fresh bound for the store on top.
HOOK_BUDGET_SECONDS = 10.0
SUN_PATH_MAX = 100  # sockaddr_un.sun_path is 104-108 bytes depending on the platform
# "off": never forward; "require": a run no server answers gives no decision (and says so
# on stderr) instead of doing the work itself, for tests and benchmarks that must know;
# "no-daemon": forward, but never start a daemon (``relay_spawn.py``) when nothing listens.
MODE_ENV = "ESCALATION_HOOK_RELAY"
NO_DAEMON = "no-daemon"


def socket_dir(env: Mapping[str, str]) -> str | None:
    """The private directory of this user's relay sockets, created if missing; None if unsafe."""
    if not hasattr(socket, "AF_UNIX") or not hasattr(os, "getuid"):
        return None
    runtime = env.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isdir(runtime):
        path = os.path.join(runtime, "mcp-server-escalation")
    else:
        tmp = env.get("TMPDIR") or env.get("TEMP") or env.get("TMP") or "/tmp"  # noqa: S108 (a private folder in it)
        path = os.path.join(tmp, f"mcp-server-escalation-{os.getuid()}")
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    # Another user's directory, or one others can write to, could hold a socket that lies.
    if st.st_uid != os.getuid() or st.st_mode & 0o077 or not os.path.isdir(path):
        return None
    return path


def socket_path(db_path: str, env: Mapping[str, str], cwd: str) -> str | None:
    """The relay socket of the store at ``db_path`` (relative to ``cwd``); None if there is none."""
    if db_path == ":memory:":
        return None
    folder = socket_dir(env)
    if folder is None:
        return None
    # A database's URL names it wherever the hook runs; a file's path is the hook's own.
    resolved = (
        db_path
        if is_database_url(db_path)
        else os.path.realpath(os.path.join(cwd, os.path.expanduser(db_path)))
    )
    # Two checksums, not a cryptographic hash: hashlib would cost every hook run ~3 ms, and
    # the server checks that a request is for its own store anyway.
    key = resolved.encode("utf-8", "surrogatepass")
    name = f"{zlib.crc32(key):08x}{zlib.adler32(key):08x}.sock"
    path = os.path.join(folder, name)
    return path if len(path.encode()) <= SUN_PATH_MAX else None


def parse_argv(argv: Sequence[str]) -> tuple[str, dict[str, str]] | None:
    """``(host, options)`` for a plain ``[opts] hook <host> [opts]``; None for anything else."""
    options: dict[str, str] = {}
    words: list[str] = []
    args = list(argv)
    i = 0
    while i < len(args):
        arg = args[i]
        name, eq, value = arg.partition("=")
        if name in OPTIONS:
            if not eq:
                if i + 1 >= len(args):
                    return None
                i += 1
                value = args[i]
            options[name] = value
        elif arg.startswith("-"):
            return None  # --help, a typo: the full command line parser answers those
        else:
            words.append(arg)
        i += 1
    if len(words) != 2 or words[0] != "hook" or words[1] not in HOSTS:
        return None
    return words[1], options


def connect(path: str) -> socket.socket | None:
    """A connection to the relay on ``path``; None when nothing listens there."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.settimeout(CONNECT_TIMEOUT)
        conn.connect(path)
    except OSError:
        conn.close()
        return None
    return conn


def forward(conn: socket.socket, request: Mapping[str, object]) -> dict[str, object] | None:
    """The relay's answer to ``request`` on ``conn``; None when the relay did not take it."""
    body = json.dumps(request, ensure_ascii=False).encode("utf-8", "surrogatepass")
    try:
        conn.settimeout(ANSWER_TIMEOUT)
        conn.sendall(body)
        conn.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := conn.recv(65536):
            chunks.append(chunk)
        reply = json.loads(b"".join(chunks).decode("utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(reply, dict) or reply.get("protocol") != PROTOCOL or "fallback" in reply:
        return None
    return reply


# When this process's latest hook run began (``try_relay``); None before any did.
_began: list[float] = []


def seconds_left() -> float | None:
    """What is left of ``HOOK_BUDGET_SECONDS`` for this process's hook run (None: no run
    began through ``try_relay``, as in a test that calls the command itself)."""
    if not _began:
        return None
    return HOOK_BUDGET_SECONDS - (time.monotonic() - _began[-1])


def try_relay(argv: Sequence[str]) -> int | None:
    """Run a hook command line through a live server; None when the hook must run itself.

    On None nothing has been read from stdin unless it was too big or not UTF-8, in which
    case it is put back for the full path (``sys.stdin`` is replaced by a buffer holding it).
    """
    _began[:] = [time.monotonic()]
    env = os.environ
    mode = env.get(MODE_ENV, "").lower()
    if mode in ("off", "0", "false", "no"):
        return None
    parsed = parse_argv(argv)
    if parsed is None:
        return None
    host, options = parsed
    try:
        cwd = os.getcwd()
    except OSError:
        return None
    path = socket_path(chosen_store(options.get("--db"), env), env, cwd)
    conn = connect(path) if path is not None else None
    if conn is None and path is not None and mode not in ("require", NO_DAEMON):
        from .relay_spawn import daemon_coming  # noqa: PLC0415 (only when nothing listens)

        if daemon_coming(path, options, env, cwd):
            conn = _await_daemon(path)
    if conn is None:
        return _unanswered(mode)
    with conn:
        return _relayed(conn, host, options, env, cwd, mode)


def _relayed(
    conn: socket.socket, host: str, options: Mapping[str, str], env: Mapping[str, str], cwd: str, mode: str
) -> int | None:
    """Forward the run on ``conn`` and print the answer; None (stdin put back) when not taken."""
    raw = sys.stdin.buffer.read(MAX_STDIN + 1)
    try:
        text = raw.decode("utf-8") if len(raw) <= MAX_STDIN else None
    except UnicodeDecodeError:
        text = None
    reply = None
    if text is not None:
        request = {
            "protocol": PROTOCOL,
            "host": host,
            "options": options,
            "env": dict(env),
            "cwd": cwd,
            "stdin": text,
        }
        reply = forward(conn, request)
    if reply is None:
        _put_back(raw)
        return _unanswered(mode)
    stdout, stderr = reply.get("stdout"), reply.get("stderr")
    if isinstance(stderr, str) and stderr:
        sys.stderr.write(stderr)
    if isinstance(stdout, str) and stdout:
        sys.stdout.write(stdout)
        sys.stdout.flush()
    return 0


def _await_daemon(path: str) -> socket.socket | None:
    """A connection to the daemon as soon as it listens; None once it has gone or is too slow.

    Waiting is cheaper than doing the run alongside the daemon's start: both load the same
    modules, and on a busy machine they compete for it (docs/hooks.md, "Speed: the hook relay").
    """

    from .relay_spawn import daemon_alive  # noqa: PLC0415

    deadline = time.monotonic() + DAEMON_WAIT_SECONDS
    while time.monotonic() < deadline and daemon_alive(path):
        conn = connect(path)
        if conn is not None:
            return conn
        time.sleep(DAEMON_POLL_SECONDS)
    return None


def _unanswered(mode: str) -> int | None:
    """None (the hook runs itself), or in ``require`` mode: no decision, said on stderr."""
    if mode != "require":
        return None
    sys.stderr.write(f"mcp-server-escalation hook: no relay answered ({MODE_ENV}=require); no decision\n")
    return 0


def _put_back(raw: bytes) -> None:
    """Let the full path read stdin as if nothing had touched it."""

    rest = sys.stdin.buffer.read()
    sys.stdin = io.TextIOWrapper(io.BytesIO(raw + rest), encoding="utf-8")
