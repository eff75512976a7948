"""What every tool function receives first: its request's runtime and caller."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from mcp.server.mcpserver import Context
from mcp.types import ToolAnnotations

from ....models.limits import Role
from ....rules.bounds.token_scope import Scope
from ....services.runtime import Runtime
from ....services.scope import refuse_outside
from ..context import AppContext
from ..holders import STDIO_HOLDER, TaskHolders
from ..registry import ToolFunction

WRITE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)
IDEMPOTENT_WRITE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)
DESTRUCTIVE = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False
)


class Served(NamedTuple):
    """A tool as served: its function, its hints to the client, and the field of its result
    the model reads as text (None: the whole result, as JSON)."""

    fn: ToolFunction
    annotations: ToolAnnotations
    text: str | None = None


class ToolCall:
    """One tool call's request: the runtime of its session, and who is calling on what
    (``role``: the server's --role, which a bearer token overrides over HTTP)."""

    __slots__ = ("_context", "_http", "_role")

    def __init__(self, context: Context[AppContext], role: Role, http: bool) -> None:
        self._context = context
        self._role = role
        self._http = http

    @property
    def runtime(self) -> Runtime:
        return self._context.request_context.lifespan_context.runtime

    def store_seconds(self) -> float:
        """The longest the call waits for the store, in all (its deadline): 30 s for another
        process's lock on SQLite, ``[store] operation_timeout_seconds`` on PostgreSQL."""
        return self.runtime.db.call_seconds

    @property
    def holders(self) -> TaskHolders:
        return self._context.request_context.lifespan_context.holders

    def role(self) -> Role:
        """The caller's role. Over HTTP the bearer token decides; on stdio there is no
        token, only --role (and the auth machinery is not even imported: it costs cold start)."""
        if not self._http:
            return self._role
        from ...http.auth import request_role  # noqa: PLC0415

        return request_role(self._role)

    def scope(self) -> Scope | None:
        """What the request's token may see: over HTTP a person's token may be limited to some
        projects and task prefixes; None (anything) for other tokens and on stdio."""
        if not self._http:
            return None
        from ...http.auth import request_scope  # noqa: PLC0415

        return request_scope()

    async def within_scope(self, tool: str, arguments: Mapping[str, Any]) -> None:
        """Refuse (``Forbidden``) a call on a task outside the scope of the request's token;
        a tool reading across tasks is given ``scope()`` to keep only the scope's."""
        scope = self.scope()
        if scope is not None:
            await refuse_outside(self.runtime, scope, tool, arguments)

    def responder(self, given: str | None) -> str | None:
        """Who answers, as recorded: over HTTP an operator holding a token of their own is
        that person (``http:<name>``), whatever name the call gives; otherwise the name
        given (a shared token names nobody; on stdio the process's user chose --role)."""
        if not self._http:
            return given
        from ...http.auth import request_person  # noqa: PLC0415

        person = request_person()
        if person is None or self.role() != "operator":
            return given
        return f"http:{person}"

    async def report_progress(self, done: float, total: float, message: str) -> None:
        """``notifications/progress`` to a client that sent a progress token (else nothing)."""
        await self._context.report_progress(done, total, message)

    def connection(self) -> str | None:
        """Which connection the call came on (adapters/mcp/holders.py): the process on stdio,
        the MCP session over HTTP; None for a sessionless HTTP request."""
        if not self._http:
            return STDIO_HOLDER
        headers = self._context.headers
        return headers.get("mcp-session-id") if headers else None
