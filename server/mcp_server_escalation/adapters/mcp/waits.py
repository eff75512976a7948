"""The wait each connection is asked for, and what a wait cut short teaches the server.

Every pause message spells out the next call, ``get_escalation(N, wait_seconds=W)``. A
client that times out on that call ends it with its own error ("Request 'tools/call' timed
out"), which tells the agent nothing of what to do instead; so W must fit the client:

- W is the operator's ``[waiting] seconds`` (4 by default: under the 5 s request timeout
  of openai-agents' ``MCPServerStdio``, the shortest default of the clients people use), or
  ``[waiting] form_seconds`` (30) for a connection whose client declared elicitation: a
  host with a person at it, whose requests wait long, and where the form lasts as long as
  the wait (adapters/mcp/elicitation.py).
- A connection that cut a wait short (the client cancelled the call: ``mcp`` 2.x clients
  send ``notifications/cancelled`` when their timeout ends a request) is asked from then on
  for three quarters of the wait it let run (whole seconds, at least 1), and a longer wait it
  asks for is shortened to that, so the result, not the client's timeout, ends the call,
  and its message asks for the shorter wait.
- While a call waits, a client that sent a progress token hears ``notifications/progress``
  every second (some clients restart their timeout on progress).

W reaches every message the call renders through ``prompts.ASKED_WAIT``, which this
middleware sets for the call. The connection: on the handshake era the one
``client_notifications`` names; on 2026-07-28, which gives every request a connection of its
own, the session's runtime on stdio (one process per client), and none over HTTP, whose
2026-07-28 requests nothing ties together (there, a cut wait teaches nothing).
"""

from __future__ import annotations

import math
from collections import OrderedDict
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ...models.limits import WAIT_MAX_SECONDS
from ...prompts import ASKED_WAIT
from ...settings import WaitingConfig
from .client_notifications import connection_key
from .context import AppContext

MAX_CONNECTIONS = 1024  # remembered cut waits; a forgotten one costs one more cut wait
PROGRESS_SECONDS = 1.0


@dataclass(frozen=True)
class Fit:
    """The waits of one call's connection: the one to ask for, and the longest it lets run."""

    asked: int
    limit: int | None = None

    def wait(self, requested: float) -> float:
        """The wait to make of one the agent asked for."""
        return requested if self.limit is None else min(requested, self.limit)


FIT: ContextVar[Fit | None] = ContextVar("wait_fit", default=None)


def fitted_wait(requested: float) -> float:
    """The wait the call being served makes of ``requested`` (itself outside a served call)."""
    fit = FIT.get()
    return requested if fit is None else fit.wait(requested)


class WaitFitting:
    """The middleware that fits every tool call's waits to its connection."""

    def __init__(self, waiting: WaitingConfig, *, http: bool) -> None:
        self.http = http
        self.seconds = waiting.seconds
        self.form_seconds = waiting.form_seconds
        self._limits: OrderedDict[int, int] = OrderedDict()  # connection -> longest wait it lets run

    def fit(self, ctx: ServerRequestContext[AppContext, Any]) -> Fit:
        """The waits of the connection ``ctx`` came on."""
        capabilities = ctx.session.client_capabilities
        asks_a_person = capabilities is not None and capabilities.elicitation is not None
        asked = self.form_seconds if asks_a_person else self.seconds
        connection = self._connection(ctx)
        limit = None if connection is None else self._limits.get(connection)
        return Fit(asked if limit is None else min(asked, limit), limit)

    def _connection(self, ctx: ServerRequestContext[AppContext, Any]) -> int | None:
        """Which client the request came from, as far as the server can tell (module docstring)."""
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            return connection_key(ctx.session)
        return None if self.http else id(ctx.lifespan_context.runtime)

    async def __call__(
        self, ctx: ServerRequestContext[AppContext, Any], call_next: CallNext
    ) -> HandlerResult:
        """Run the call with its connection's waits; learn from a wait it cuts short."""
        if ctx.method == "tasks/get":
            # A wait run as a task ends in tasks/get: its message asks for this connection's wait.
            asked = ASKED_WAIT.set(self.fit(ctx).asked)
            try:
                return await call_next(ctx)
            finally:
                ASKED_WAIT.reset(asked)
        if ctx.method != "tools/call":
            return await call_next(ctx)
        fit = self.fit(ctx)
        fitted, asked = FIT.set(fit), ASKED_WAIT.set(fit.asked)
        started = anyio.current_time()
        try:
            return await call_next(ctx)
        except anyio.get_cancelled_exc_class():
            connection = self._connection(ctx)
            if connection is not None and _waits(ctx.params):
                self._cut(connection, anyio.current_time() - started)
            raise
        finally:
            ASKED_WAIT.reset(asked)
            FIT.reset(fitted)

    def _cut(self, connection: int, waited: float) -> None:
        """The client on ``connection`` cancelled a wait after ``waited`` seconds."""
        if waited < 1:
            return  # cancelled for another reason than its length (an agent's own interrupt)
        # Three quarters of what it allowed, in whole seconds: the cancellation reaches us
        # after the client's timeout by however long a busy machine takes to read it.
        limit = max(1, math.floor(waited * 3 / 4))
        self._limits[connection] = min(limit, self._limits.pop(connection, limit))
        while len(self._limits) > MAX_CONNECTIONS:
            self._limits.popitem(last=False)


def _waits(params: Any) -> bool:
    """Is this ``tools/call`` a ``get_escalation`` that waits?"""
    if not isinstance(params, dict) or params.get("name") != "get_escalation":
        return False
    return waited_on(params.get("arguments")) is not None


def waited_on(arguments: Any) -> int | None:
    """The escalation id of ``get_escalation`` arguments that wait for it, or None."""
    if not isinstance(arguments, dict):
        return None
    escalation_id, wait = number(arguments.get("escalation_id")), number(arguments.get("wait_seconds"))
    # Only a wait the tool accepts: NaN, infinite or out-of-range ones fail validation.
    if escalation_id is None or not escalation_id.is_integer() or wait is None:
        return None
    if not 0 < wait <= WAIT_MAX_SECONDS:
        return None
    return int(escalation_id)


def number(value: object) -> float | None:
    """A raw argument as a number, or None: the Inspector sends numbers as strings."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        return float(value)
    except ValueError:
        return None
