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
- requests read before stdin ends are answered before serving stops (``Unanswered``);
- a client that hangs up its end of stdout ends serving as the end of stdin does, and one
  that stops reading cannot keep the server from exiting (``DRAIN_SECONDS``);
- SIGTERM ends serving cleanly (store closed, pipes restored to their blocking mode).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import stat
import sys
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager, suppress
from typing import TYPE_CHECKING, Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp.types import JSONRPCError, JSONRPCNotification, JSONRPCRequest, JSONRPCResponse, RequestId

if TYPE_CHECKING:
    # The stream protocols of Server.run's signature (the SDK exports them from nowhere else).
    from mcp.shared._stream_protocols import ReadStream, WriteStream

log = logging.getLogger(__name__)

# Which transport serves stdio: "loop" where possible (the default), or the SDK's "threads".
TRANSPORT_ENV = "ESCALATION_STDIO"
# A request line longer than this is dropped with a warning instead of buffered whole (the
# SDK's transport has no bound). It is far above any valid call: texts are capped at 1 MiB
# and lists at 500 paths of 4 KiB (models/limits.py), a few MiB even JSON-escaped.
LINE_LIMIT = 64 * 1024 * 1024
# At exit, how long the client gets to read responses the pipe has not taken yet.
DRAIN_SECONDS = 5.0
# At the end of stdin, how long requests already read get to finish (Unanswered). Below
# the 2 s the SDK's client waits for a server to exit after closing stdin before SIGTERM.
SETTLE_SECONDS = 1.0


def loop_transport_refusal(
    env: Mapping[str, str] | None = None, fds: tuple[int, int, int] = (0, 1, 2)
) -> str | None:
    """Why the loop transport cannot serve stdio (``fds``: stdin, stdout, stderr), or None."""
    choice = (os.environ if env is None else env).get(TRANSPORT_ENV, "loop")
    if choice == "threads":
        return f"{TRANSPORT_ENV}=threads"
    if choice != "loop":
        return f"{TRANSPORT_ENV}={choice!r} is neither 'loop' nor 'threads'"
    if sys.platform == "win32":
        return "Windows"
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


class LineReader:
    """The lines of a pipe, as text, for ``stdio_server(stdin=...)``: read on the loop.

    Decoded as the SDK decodes stdin (UTF-8, undecodable bytes replaced); a last line
    without its newline still counts; a line over ``limit`` bytes is skipped.
    """

    def __init__(self, reader: asyncio.StreamReader, transport: asyncio.ReadTransport, limit: int) -> None:
        self._reader = reader
        self._transport = transport
        self._limit = limit

    @classmethod
    async def connect(cls, fd: int, limit: int = LINE_LIMIT) -> LineReader:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=limit, loop=loop)
        # closefd=False: the descriptor is ours to close (or restore) after serving.
        pipe = os.fdopen(fd, "rb", buffering=0, closefd=False)
        transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
        return cls(reader, transport, limit)

    def __aiter__(self) -> LineReader:
        return self

    async def __anext__(self) -> str:
        while True:
            try:
                line = await self._reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as eof:
                if not eof.partial:
                    raise StopAsyncIteration from None
                line = eof.partial
            except asyncio.LimitOverrunError:
                await self._skip_line()
                log.warning("stdin: dropped a message of over %d bytes", self._limit)
                continue
            return line.decode("utf-8", errors="replace")

    async def _skip_line(self) -> None:
        """Drop buffered input up to and including the next newline (or to EOF)."""
        while True:
            try:
                await self._reader.readuntil(b"\n")
            except asyncio.LimitOverrunError as overrun:
                await self._reader.readexactly(overrun.consumed)
                continue
            except asyncio.IncompleteReadError:
                pass
            return

    def close(self) -> None:
        self._transport.close()


class _FlowControl(asyncio.Protocol):
    """Tells a writer when the pipe's transport buffers too much, and when it is gone."""

    def __init__(self, on_lost: Callable[[], None]) -> None:
        # asyncio's own event: the transport calls back outside any task, where anyio's
        # primitives cannot tell which loop they belong to; and a waiter's cancellation
        # cancels only its own wait.
        self.writable = asyncio.Event()
        self.writable.set()
        self.lost = False
        self._on_lost = on_lost

    def pause_writing(self) -> None:
        self.writable.clear()

    def resume_writing(self) -> None:
        self.writable.set()

    def connection_lost(self, exc: Exception | None) -> None:  # noqa: ARG002 (gone is gone)
        self.gone()
        self._on_lost()

    def gone(self) -> None:
        self.lost = True
        self.writable.set()  # nobody waits for a pipe that is gone


class LineWriter:
    """A pipe for ``stdio_server(stdout=...)``: text written on the loop, straight through.

    ``write`` hands the bytes to the pipe at once (asyncio buffers only what the pipe does
    not take); ``flush`` waits while that buffer is over its high-water mark, so a reader
    that stops reading slows the server down instead of growing its memory. When the
    reader hangs up, ``on_lost`` is called and writing fails as the SDK's writer expects.
    """

    def __init__(self, transport: asyncio.WriteTransport, flow: _FlowControl) -> None:
        self._transport = transport
        self._flow = flow
        self._deadline: asyncio.TimerHandle | None = None

    @classmethod
    async def connect(cls, fd: int, on_lost: Callable[[], None] = lambda: None) -> LineWriter:
        loop = asyncio.get_running_loop()
        pipe = os.fdopen(fd, "wb", buffering=0, closefd=False)
        transport, flow = await loop.connect_write_pipe(lambda: _FlowControl(on_lost), pipe)
        return cls(transport, flow)

    async def write(self, text: str) -> None:
        if self._flow.lost or self._transport.is_closing():
            # The client is gone: the SDK's writer ends quietly on this error.
            raise anyio.ClosedResourceError
        self._transport.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self._flow.writable.wait()

    def give_up_after(self, seconds: float) -> None:
        """From now on the client has ``seconds`` to take what is left, then the pipe is
        dropped: a client that stopped reading cannot keep the server from exiting."""
        if self._deadline is None:
            self._deadline = asyncio.get_running_loop().call_later(seconds, self.abort)

    async def aclose(self, drain_seconds: float = DRAIN_SECONDS) -> None:
        """Let the pipe take what is still buffered (within the give-up time), then let go."""
        self.give_up_after(drain_seconds)
        if not self._flow.lost:
            # A high-water mark of 0 pauses the writer until the buffer is empty.
            self._transport.set_write_buffer_limits(high=0)
            await self.flush()
        self.abort()

    def abort(self) -> None:
        """Drop the pipe and whatever it has not taken (abort: close would go on writing
        after the descriptor is restored)."""
        if self._deadline is not None:
            self._deadline.cancel()
        # A transport already closing must not be aborted again: asyncio's fails on that.
        if not self._transport.is_closing():
            self._transport.abort()
        self._flow.gone()  # at once: connection_lost arrives a loop iteration later


class Unanswered:
    """The requests read but not answered yet, so that the end of stdin does not drop them.

    The SDK's serving loop cancels what is still running when its read stream ends. A client
    that writes its last request and closes stdin at once (``cat calls.jsonl | server``)
    would lose that answer; so the read stream ends only when every request read has been
    answered, or after ``settle_seconds`` (a host closing stdin wants the server gone).
    """

    def __init__(self, settle_seconds: float = SETTLE_SECONDS) -> None:
        self.ids: set[RequestId] = set()
        self._settle_seconds = settle_seconds
        self._answered: anyio.Event | None = None
        self._unanswerable = False

    def reading(self, stream: ReadStream[SessionMessage | Exception]) -> _RequestsRead:
        return _RequestsRead(stream, self)

    def writing(self, stream: WriteStream[SessionMessage]) -> _AnswersWritten:
        return _AnswersWritten(stream, self)

    def read(self, item: SessionMessage | Exception) -> None:
        if not isinstance(item, SessionMessage):
            return
        message = item.message
        if isinstance(message, JSONRPCRequest):
            self.ids.add(message.id)
        elif isinstance(message, JSONRPCNotification) and message.method == "notifications/cancelled":
            # The SDK never answers a request its client cancelled: nothing to wait for.
            self._settled((message.params or {}).get("requestId"))

    def written(self, item: SessionMessage) -> None:
        message = item.message
        if isinstance(message, JSONRPCResponse | JSONRPCError):
            self._settled(message.id)

    def unanswerable(self) -> None:
        """The client can no longer read answers: stop waiting for them."""
        self._unanswerable = True
        self._settled(None)

    def _settled(self, request_id: RequestId | None) -> None:
        self.ids.discard(request_id)
        if self._answered is not None:
            self._answered.set()

    async def settle(self) -> None:
        with anyio.move_on_after(self._settle_seconds):
            while self.ids and not self._unanswerable:
                self._answered = anyio.Event()
                await self._answered.wait()
        self._answered = None


class _RequestsRead:
    """The SDK's read stream, noting each request and ending only once they are answered."""

    def __init__(self, inner: ReadStream[SessionMessage | Exception], unanswered: Unanswered) -> None:
        self._inner = inner
        self._unanswered = unanswered

    @property
    def last_context(self) -> Any:
        # The serving loop reads the sender's context from here (ReadStream's contract).
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        try:
            item = await self._inner.receive()
        except anyio.EndOfStream:
            await self._unanswered.settle()
            raise
        self._unanswered.read(item)
        return item

    def __aiter__(self) -> _RequestsRead:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _RequestsRead:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


class _AnswersWritten:
    """The SDK's write stream, noting each answer."""

    def __init__(self, inner: WriteStream[SessionMessage], unanswered: Unanswered) -> None:
        self._inner = inner
        self._unanswered = unanswered

    async def send(self, item: SessionMessage, /) -> None:
        try:
            await self._inner.send(item)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            self._unanswered.unanswerable()  # the SDK's stdout writer has ended
            raise
        self._unanswered.written(item)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _AnswersWritten:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


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
        flush_stray_stdout()
        for fd, private in ((0, read_fd), (1, write_fd)):
            with suppress(OSError):
                os.set_blocking(private, blocking[private])
                os.dup2(private, fd)
            os.close(private)


def flush_stray_stdout() -> None:
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
        async with stdio_server() as (read_stream, write_stream):
            unanswered = Unanswered()  # its loop, too, would drop what is running at EOF
            yield unanswered.reading(read_stream), unanswered.writing(write_stream)
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
            async with stdio_server(stdin=stdin, stdout=stdout) as (read_stream, write_stream):  # type: ignore[arg-type]
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
    # MCPServer has no public handle on its low-level server; run_stdio_async uses the
    # same attribute, and tests/test_stdio.py serves every stdio test through here.
    lowlevel = server._lowlevel_server
    async with open_stdio() as (read_stream, write_stream):
        try:
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
        finally:
            flush_stray_stdout()  # also on the SDK's transport, before it restores fd 1


def run_stdio(server: MCPServer[Any]) -> None:
    """Serve ``server`` on stdio until the client closes stdin (``MCPServer.run()``)."""
    anyio.run(serve_stdio, server)
