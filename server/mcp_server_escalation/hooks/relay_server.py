"""The hook relay's server: a running process answers hook runs for the store it has open.

Started by ``serve`` (the MCP server a host runs for its session), by ``hook relay``
(run by hand for hosts that run only the hooks) and, through ``relay_daemon.py``, by
``hook daemon`` (which a hook run starts when nothing listens). It listens on the store's
socket (``relay.py``) and answers each forwarded hook run exactly as the hook process
would have: the hook's own options, environment and working directory decide its
settings, and ``dispatch.py`` turns its stdin into the host's JSON with the same code. It
declines (the hook then runs itself) when the hook's settings name another store, other
prompts or other thresholds than the ones this process has loaded, so a relayed answer
can never differ from a local one.

One socket per store: the first process to bind it serves; the others retry every
``RETRY_SECONDS`` and take over when it goes away. A socket left by a killed process is
detected (nothing accepts) and replaced.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import socket
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import SocketListener, SocketStream

from ..errors import ConfigError
from ..services.background import alongside
from ..services.runtime import Runtime
from ..settings import Settings
from .dispatch import HookInputError, answer, prepare, warning
from .relay import HOSTS, OPTIONS, PROTOCOL, socket_path

log = logging.getLogger(__name__)

RETRY_SECONDS = 30.0
MAX_REQUEST_BYTES = 64 * 1024 * 1024
REQUEST_SECONDS = 60.0  # a client that never finishes its request is dropped


def _same_setup(ours: Settings, theirs: Settings) -> bool:
    """Would the hook decide with what this process has loaded? (``hooks`` is passed per call.)"""

    def place(path: str | os.PathLike[str] | None) -> str | None:
        return os.path.realpath(path) if path is not None else None

    return (
        place(ours.db_path) == place(theirs.db_path)
        and place(ours.prompts_dir) == place(theirs.prompts_dir)
        and ours.thresholds == theirs.thresholds
        and ours.guidance == theirs.guidance
    )


async def respond(rt: Runtime, request: Mapping[str, Any]) -> dict[str, Any]:
    """The reply to one forwarded hook run: its stdout and stderr, or ``fallback``."""
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
    try:
        settings = Settings.from_sources(
            db=options.get("--db"),
            config=options.get("--config"),
            prompts=options.get("--prompts"),
            env=env_map,
            cwd=cwd,
        )
    except ConfigError:
        return {"protocol": PROTOCOL, "fallback": "config"}  # the hook reports its own error
    if not _same_setup(rt.settings, settings):
        return {"protocol": PROTOCOL, "fallback": "another store, prompts or thresholds"}
    stdout, stderr = "", ""
    try:
        event = prepare(stdin.encode("utf-8", "surrogatepass"), settings, env_map, cwd, entry=str(host))
        if event is not None:
            out = await answer(rt, str(host), event, settings, env_map, cwd)
            stdout = out + "\n" if out else ""
    except HookInputError as exc:
        stderr = warning(str(exc))
    except Exception as exc:  # as in the hook process: never break the host
        log.exception("relayed hook event failed")
        stderr = warning(f"no decision: {type(exc).__name__}: {exc}")
    return {"protocol": PROTOCOL, "stdout": stdout, "stderr": stderr}


async def serve_one(rt: Runtime, stream: SocketStream) -> None:
    """One connection; whatever it sends, the listener (and the MCP server) keeps running."""
    try:
        async with stream:
            with anyio.move_on_after(REQUEST_SECONDS):
                await _exchange(rt, stream)
    except Exception:  # a bad peer or a bug must never take the server down
        log.exception("hook relay: a connection failed")


async def _exchange(rt: Runtime, stream: SocketStream) -> None:
    chunks: list[bytes] = []
    size = 0
    try:
        while True:
            chunk = await stream.receive()
            size += len(chunk)
            if size > MAX_REQUEST_BYTES:
                return
            chunks.append(chunk)
    except anyio.EndOfStream:
        pass
    try:
        request = json.loads(b"".join(chunks).decode("utf-8", "surrogatepass"))
    except (ValueError, RecursionError):
        return
    if not isinstance(request, dict):
        return
    reply = await respond(rt, request)
    body = json.dumps(reply, ensure_ascii=False).encode("utf-8", "surrogatepass")
    with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        await stream.send(body)


def _is_live(path: str) -> bool:
    """Does a process accept on ``path``?"""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(0.5)
        try:
            probe.connect(path)
        except OSError:
            return False
    return True


def _free(path: str) -> bool:
    """Can ``path`` be bound? A socket nothing accepts on (a killed process's) is removed."""
    if Path(path).exists():
        if _is_live(path):
            return False
        Path(path).unlink(missing_ok=True)
    return True


def socket_inode(path: str) -> int:
    """The socket file's inode: tells our socket from a successor's at the same path."""
    return Path(path).stat().st_ino


def release(path: str, inode: int) -> None:
    """Remove the socket if it is still ours, not a successor's."""
    with suppress(OSError):
        if Path(path).stat().st_ino == inode:
            Path(path).unlink()


async def bind(path: str) -> SocketListener | None:
    """Listen on ``path``, replacing a stale socket; None while another process serves it."""
    if not _free(path):
        return None
    try:
        return await anyio.create_unix_listener(path, mode=0o600)
    except OSError:
        return None  # another process bound it first


async def _listen(rt: Runtime, path: str) -> None:
    """Serve the socket, or wait for it to be free and then serve it."""
    while True:
        listener = await bind(path)
        if listener is None:
            await anyio.sleep(RETRY_SECONDS)
            continue
        inode = socket_inode(path)
        log.info("hook relay listening on %s", path)
        try:

            async def handle(stream: SocketStream) -> None:
                await serve_one(rt, stream)

            await listener.serve(handle)
        finally:
            release(path, inode)
            with anyio.CancelScope(shield=True):
                await listener.aclose()


@asynccontextmanager
async def relay(rt: Runtime) -> AsyncIterator[str | None]:
    """Answer hook runs for ``rt``'s store until exit; yields the socket path (None: no relay)."""
    path = socket_path(rt.settings.db_path, os.environ, str(Path.cwd())) if rt.settings.hooks.relay else None
    if path is None:
        yield None
        return
    async with alongside(functools.partial(_listen, rt, path)):
        yield path
