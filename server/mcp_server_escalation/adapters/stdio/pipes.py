"""The line streams of the loop stdio transport (``transport.py``): asyncio pipe transports
behind the small file interface the SDK's ``stdio_server(stdin=..., stdout=...)`` uses."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable

import anyio

log = logging.getLogger(__name__)

# A request line longer than this is dropped with a warning instead of buffered whole (the
# SDK's transport has no bound). It is far above any valid call: texts are capped at 1 MiB
# and lists at 500 paths of 4 KiB (models/limits.py), a few MiB even JSON-escaped.
LINE_LIMIT = 64 * 1024 * 1024
# At exit, how long the client gets to read responses the pipe has not taken yet.
DRAIN_SECONDS = 5.0


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
