"""Serving MCP over stdin/stdout on the event loop, without a thread hop per message.

The SDK's ``stdio_server()`` reads stdin and writes stdout through ``anyio.wrap_file``: each
request line is read by a worker thread, and each response takes two more worker-thread
trips (write, then flush) while the loop waits for them. On the 2-vCPU machine of
``benchmarks/README.md`` those hand-offs were ~0.5 ms of a no-op call's ~1.5 ms and more of
ours (~0.7 ms a call): more than everything our tools themselves do.

When stdin and stdout are pipes or sockets (how every MCP host launches a stdio server) we
give the SDK's own ``stdio_server()`` line streams served by asyncio's pipe transports
instead: the loop is told when a request arrives and writes a response straight into the
pipe, buffering only what the pipe cannot take at once. Framing, parsing and serialising
stay the SDK's. Everything else (a regular file or a terminal on stdin or stdout, Windows,
a non-asyncio loop, ``ESCALATION_STDIO=threads``) is served by the SDK's transport as is.

Like the SDK's transport, while serving, fd 0 reads the null device and fd 1 writes to
stderr, so a stray ``print()`` or a child process never writes into the protocol; both are
restored on exit. Beyond it:
- requests read before stdin ends are answered before serving stops (``answers.py``);
- a client that hangs up its end of stdout ends serving as the end of stdin does, and one
  that stops reading cannot keep the server from exiting (``pipes.py``);
- SIGTERM ends serving cleanly (store closed, pipes restored to their blocking mode).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import stat
import sys
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager, suppress
from io import TextIOWrapper
from typing import Any, BinaryIO, TextIO

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server

from ..sdk_private import lowlevel_server
from .answers import Unanswered
from .pipes import DRAIN_SECONDS, LineReader, LineWriter

log = logging.getLogger(__name__)

# Which transport serves stdio: "loop" where possible (the default), or the SDK's "threads".
TRANSPORT_ENV = "ESCALATION_STDIO"


def loop_transport_refusal(
    env: Mapping[str, str] | None = None, fds: tuple[int, int, int] = (0, 1, 2)
) -> str | None:
    """Why the loop transport cannot serve stdio (``fds``: stdin, stdout, stderr), or None."""
    return _choice_refusal(os.environ if env is None else env) or _streams_refusal(fds)


def _choice_refusal(env: Mapping[str, str]) -> str | None:
    """Why the environment or the platform rules the loop transport out, or None."""
    choice = env.get(TRANSPORT_ENV, "loop")
    if choice == "threads":
        return f"{TRANSPORT_ENV}=threads"
    if choice != "loop":
        return f"{TRANSPORT_ENV}={choice!r} is neither 'loop' nor 'threads'"
    if sys.platform == "win32":
        return "Windows"
    return None


def _streams_refusal(fds: tuple[int, int, int]) -> str | None:
    """Why the standard streams ``fds`` cannot be served on the loop, or None."""
    try:
        stdin, stdout, stderr = (os.fstat(fd) for fd in fds)
    except OSError as exc:
        return f"a standard stream is closed ({exc})"
    for name, status in (("stdin", stdin), ("stdout", stdout)):
        if not (stat.S_ISFIFO(status.st_mode) or stat.S_ISSOCK(status.st_mode)):
            return f"{name} is not a pipe or socket"
    identities = [(s.st_dev, s.st_ino) for s in (stdin, stdout, stderr)]
    # asyncio's write transport takes input on its pipe as the reader hanging up, and the
    # transports make their pipe non-blocking (a flag of the pipe, not of our descriptor:
    # stderr on the same pipe would start failing its writes when full). So each stream
    # must be a pipe of its own.
    if len(set(identities)) < 3:
        return "stdin, stdout and stderr are not three separate pipes"
    return None


@asynccontextmanager
async def _claimed_std_fds() -> AsyncIterator[tuple[int, int]]:
    """Private descriptors of the protocol's stdin and stdout, with fds 0 and 1 diverted."""
    import fcntl  # noqa: PLC0415 (POSIX only; the loop transport is never chosen on Windows)

    read_fd = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    write_fd = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    # The transports set O_NONBLOCK, a flag of the pipe that other processes may share.
    blocking = {read_fd: os.get_blocking(read_fd), write_fd: os.get_blocking(write_fd)}
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
        os.dup2(2, 1)
    finally:
        os.close(null)
    try:
        yield read_fd, write_fd
    finally:
        for fd, private in ((0, read_fd), (1, write_fd)):
            with suppress(OSError):
                os.set_blocking(private, blocking[private])
                os.dup2(private, fd)
            os.close(private)


def _flush_stray_stdout() -> None:
    """Flush what Python's ``sys.stdout`` still buffers while fd 1 leads to stderr: at
    exit it would be flushed into the protocol's pipe."""
    if sys.stdout is not None:
        with suppress(OSError, ValueError):
            sys.stdout.flush()


@asynccontextmanager
async def open_stdio() -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's ``stdio_server()`` streams, on the loop transport where it can serve."""
    refusal = loop_transport_refusal() or _not_on_asyncio()
    if refusal is not None:
        log.debug("stdio served by the SDK's threaded transport: %s", refusal)
        async with _threaded_stdio() as streams:
            yield streams
        return
    async with _claimed_std_fds() as (read_fd, write_fd):
        unanswered = Unanswered()
        stdin = await LineReader.connect(read_fd)

        def client_gone() -> None:
            # Nobody reads the answers any more: end as if stdin had ended, at once.
            unanswered.unanswerable()
            stdin.close()

        stdout = await LineWriter.connect(write_fd, on_lost=client_gone)
        try:
            # The SDK's transport with our line streams (typed as anyio files there).
            lines = unanswered.screening(stdin)
            async with stdio_server(stdin=lines, stdout=stdout) as (read_stream, write_stream):  # type: ignore[arg-type]
                try:
                    with _stopped_by_sigterm():
                        yield unanswered.reading(read_stream), unanswered.writing(write_stream)
                finally:
                    # Serving is over (also when cancelled, with stdin still open): read no
                    # more, and give the client DRAIN_SECONDS in all to read the rest.
                    stdin.close()
                    stdout.give_up_after(DRAIN_SECONDS)
        finally:
            stdin.close()
            with anyio.CancelScope(shield=True):
                await stdout.aclose()


@asynccontextmanager
async def _threaded_stdio() -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's threaded transport, its stdin's lines screened as the loop transport's are
    (``Unanswered.screening``): one screen for both, so a request the SDK would misread is
    answered on either."""
    unanswered = Unanswered()  # its loop, too, would drop what is running at EOF
    with _claimed_stdin() as stdin_buffer:
        # Decoded as the SDK decodes stdin; read in a worker thread, as the SDK reads it.
        text = TextIOWrapper(stdin_buffer, encoding="utf-8", errors="replace")
        lines = unanswered.screening(anyio.wrap_file(text))
        async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]
            yield unanswered.reading(read_stream), unanswered.writing(write_stream)


@contextmanager
def _claimed_stdin() -> Iterator[BinaryIO]:
    """stdin for the threaded transport, with fd 0 reading the null device while serving (as
    the SDK's own claim does: a stdin given to it explicitly is not claimed)."""
    if sys.stdin is None or not _is_fd(sys.stdin, 0):
        yield sys.stdin.buffer  # nothing of fd 0 to divert: read what Python reads
        return
    private = os.dup(0)  # not inheritable: no child reads the protocol
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)
    try:
        # closefd=False, never closed: the reading thread may still block on it at exit.
        yield os.fdopen(private, "rb", closefd=False)
    finally:
        with suppress(OSError):
            os.dup2(private, 0)


def _is_fd(stream: TextIO, fd: int) -> bool:
    try:
        return stream.buffer.fileno() == fd
    except (AttributeError, OSError, ValueError):
        return False


@contextmanager
def _stopped_by_sigterm() -> Iterator[None]:
    """SIGTERM (what hosts send a server that does not exit) ends serving like the end of
    stdin does: the store is closed and fds 0 and 1 and their pipes are restored. Only
    here: the SDK's transport can wait in a thread that no cancellation reaches."""
    loop = asyncio.get_running_loop()
    with anyio.CancelScope() as serving:
        loop.add_signal_handler(signal.SIGTERM, serving.cancel)
        try:
            yield
        finally:
            loop.remove_signal_handler(signal.SIGTERM)


def _not_on_asyncio() -> str | None:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return "the event loop is not asyncio's"
    return None


async def serve_stdio(server: MCPServer[Any]) -> None:
    """What ``server.run_stdio_async()`` does, over ``open_stdio()``."""
    lowlevel = lowlevel_server(server)
    async with open_stdio() as (read_stream, write_stream):
        try:
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
        finally:
            _flush_stray_stdout()  # on either transport, before it restores fd 1


def run_stdio(server: MCPServer[Any]) -> None:
    """Serve ``server`` on stdio until the client closes stdin (``MCPServer.run()``)."""
    anyio.run(serve_stdio, server)
