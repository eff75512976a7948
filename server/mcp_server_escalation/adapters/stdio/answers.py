"""Requests read but not answered yet, so that the end of stdin does not drop them; and
lines the SDK could not read, answered with a JSON-RPC error (``malformed.py``).

Wrappers of the SDK's stdio streams (either transport, ``transport.py``), which the serving
loop reads and writes as it would the SDK's own.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterable, AsyncIterator
from typing import TYPE_CHECKING, Any

import anyio
from mcp.shared.message import SessionMessage
from mcp.types import JSONRPCError, JSONRPCNotification, JSONRPCRequest, JSONRPCResponse, RequestId

from .malformed import malformed_answer, odd_id_answer

if TYPE_CHECKING:
    # What either transport hands over (the SDK's stdio_server() yields anyio memory streams).
    from anyio.abc import ObjectReceiveStream, ObjectSendStream

log = logging.getLogger(__name__)

# At the end of stdin, how long requests already read get to finish. Below the 2 s the
# SDK's client waits for a server to exit after closing stdin before it sends SIGTERM.
SETTLE_SECONDS = 1.0


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
        self._writer: ObjectSendStream[SessionMessage] | None = None

    def reading(self, stream: ObjectReceiveStream[SessionMessage | Exception]) -> _RequestsRead:
        return _RequestsRead(stream, self)

    def writing(self, stream: ObjectSendStream[SessionMessage]) -> _AnswersWritten:
        self._writer = stream
        return _AnswersWritten(stream, self)

    async def answer_malformed(self, error: Exception) -> None:
        """Answer a line the SDK could not read (it drops it): the client would wait forever."""
        answer = malformed_answer(error)
        if answer is not None:
            await self.refuse(answer)

    def screening(self, lines: AsyncIterable[str]) -> _ScreenedLines:
        """``lines`` as the SDK should read them: a request it would misread is answered here."""
        return _ScreenedLines(lines, self)

    async def refuse(self, answer: SessionMessage) -> None:
        """Write the JSON-RPC error that answers a line no request was read from."""
        if self._writer is None or self._unanswerable:
            return
        log.warning("stdin: answered a line that is no JSON-RPC message: %s", answer.message.error.message)  # type: ignore[union-attr]
        try:
            await self._writer.send(answer)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            self.unanswerable()

    def read(self, item: SessionMessage | Exception) -> None:
        if not isinstance(item, SessionMessage):
            return
        message = item.message
        if isinstance(message, JSONRPCRequest):
            self.ids.add(message.id)
        elif isinstance(message, JSONRPCNotification) and message.method == "notifications/cancelled":
            # The SDK never answers a request its client cancelled: nothing to wait for.
            self.ids.discard((message.params or {}).get("requestId"))
            self._wake()

    def written(self, item: SessionMessage) -> None:
        message = item.message
        if isinstance(message, JSONRPCResponse | JSONRPCError):
            self.ids.discard(message.id)
            self._wake()

    def unanswerable(self) -> None:
        """The client can no longer read answers: stop waiting for them."""
        self._unanswerable = True
        self._wake()

    def _wake(self) -> None:
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

    def __init__(
        self, inner: ObjectReceiveStream[SessionMessage | Exception], unanswered: Unanswered
    ) -> None:
        self._inner = inner
        self._unanswered = unanswered

    @property
    def last_context(self) -> Any:
        # The serving loop reads the sender's context from here (its read streams' contract).
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        try:
            item = await self._inner.receive()
        except anyio.EndOfStream:
            await self._unanswered.settle()
            raise
        if isinstance(item, Exception):
            await self._unanswered.answer_malformed(item)
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


class _ScreenedLines:
    """stdin's lines for the SDK's reader (on either transport), less each request whose id
    is no string or integer: the SDK would read it as a notification and answer nothing, so
    it is answered here (``malformed.odd_id_answer``) and the SDK never sees it."""

    def __init__(self, lines: AsyncIterable[str], unanswered: Unanswered) -> None:
        self._lines: AsyncIterator[str] = aiter(lines)
        self._unanswered = unanswered

    def __aiter__(self) -> _ScreenedLines:
        return self

    async def __anext__(self) -> str:
        while True:
            line = await anext(self._lines)
            answer = odd_id_answer(line)
            if answer is None:
                return line
            await self._unanswered.refuse(answer)


class _AnswersWritten:
    """The SDK's write stream, noting each answer."""

    def __init__(self, inner: ObjectSendStream[SessionMessage], unanswered: Unanswered) -> None:
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
