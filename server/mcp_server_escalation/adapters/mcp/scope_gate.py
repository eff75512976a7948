"""The one door every JSON-RPC request over HTTP passes before anything of it runs: the scope.

A person's token may carry a scope (``rules/bounds/token_scope.py``). What a request names
of a task, whatever the method, is checked here, first of the server's middleware: before the
tasks extension turns a wait into a task, before the question is put to the person at the
client (both eras of elicitation), before a tool validates its arguments, a resource or a
prompt is read, an update is subscribed to, or a task of the extension is read, answered or
cancelled. The check is ``services/scope.py``'s, the same the console and the hook route
make, and its refusal the same words.

``ROUTES`` says, for every method the server handles, how a request names a task; a method
it does not know is refused to a scoped token, so a method added later reaches nothing until
it is classified here (``tests/test_scope_routes.py`` holds this table, the methods served
and the list in docs/security.md to each other). A tool call's arguments are read raw, with
its ids read as the wait's interceptors read them (``waited_on``); the tool checks them
again once they are validated (``adapters/mcp/registry.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from mcp import MCPError
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.types import INVALID_PARAMS, INVALID_REQUEST, CallToolResult, TextContent

from ...errors import Forbidden, StoreUnavailable
from ...rules.bounds.token_scope import Scope
from ...services import waits
from ...services.runtime import Runtime
from ...services.scope import ESCALATION_ARGUMENTS, FAILURE_ARGUMENTS, refuse_outside
from .context import AppContext
from .registry import unavailable_text
from .surfaces import named_by_uri
from .waits import number

# How a method's request names a task: nothing (a list, the protocol itself), a tool's
# arguments, a resource's URI, a prompt's arguments, a task of the tasks extension, or the
# URIs a stream of updates listens to.
Names = Literal["nothing", "tool", "uri", "prompt", "task", "listened"]
ROUTES: dict[str, Names] = {
    "initialize": "nothing",  # the handshake era's, answered by the SDK's session
    "ping": "nothing",
    "server/discover": "nothing",
    "logging/setLevel": "nothing",
    "tools/list": "nothing",
    "resources/list": "nothing",
    "resources/templates/list": "nothing",
    "prompts/list": "nothing",
    "resources/unsubscribe": "nothing",  # stops updates: reaches nothing new
    "tools/call": "tool",
    "resources/read": "uri",
    "resources/subscribe": "uri",
    "prompts/get": "prompt",
    "tasks/get": "task",
    "tasks/update": "task",
    "tasks/cancel": "task",
    "subscriptions/listen": "listened",
}
NOTIFICATIONS = "notifications/"
# The name of a tool call's refusal, as the SDK words a tool's error.
TOOL_ERROR = "Error executing tool {tool}: {words}"


class ScopeGate:
    """The middleware that refuses a scoped token's request naming a task outside its scope."""

    async def __call__(
        self, ctx: ServerRequestContext[AppContext, Any], call_next: CallNext
    ) -> HandlerResult:
        """Run the request once what it names is within the token's scope."""
        from ..http.auth import request_scope  # noqa: PLC0415 (over HTTP only)

        scope = request_scope()
        if scope is None:
            return await call_next(ctx)
        rt = ctx.lifespan_context.runtime
        params: Mapping[str, Any] = ctx.params or {}
        names = ROUTES.get(ctx.method)
        if names is None and ctx.method.startswith(NOTIFICATIONS):
            return await call_next(ctx)  # a notification is answered by nothing
        if names is None:
            words = rt.prompts.render("scope_method_unknown", method=ctx.method)
            raise MCPError(code=INVALID_REQUEST, message=words)
        try:
            await _check(rt, scope, names, params)
        except (Forbidden, StoreUnavailable) as exc:
            # A store that does not answer cannot tell the scope: refused, in the tools' words.
            words = unavailable_text(rt.prompts, exc) if isinstance(exc, StoreUnavailable) else str(exc)
            if names == "tool":
                text = TOOL_ERROR.format(tool=params.get("name"), words=words)
                return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)
            raise MCPError(code=INVALID_PARAMS, message=words) from None
        return await call_next(ctx)


async def _check(rt: Runtime, scope: Scope, names: Names, params: Mapping[str, Any]) -> None:
    """Raise ``Forbidden`` (its words: the refusal, a URI's prefixed by it) when the request
    names a task outside ``scope``."""
    if names == "tool":
        tool = params.get("name")
        await refuse_outside(rt, scope, str(tool), _read_ids(params.get("arguments")))
    elif names == "prompt":
        await refuse_outside(rt, scope, "read", _read_ids(params.get("arguments")))
    elif names == "uri":
        await _check_uri(rt, scope, params.get("uri"))
    elif names == "listened":
        listened = params.get("notifications")
        uris = _listened(listened) if isinstance(listened, Mapping) else []
        for uri in uris:
            await _check_uri(rt, scope, uri)
    elif names == "task":
        task_id = params.get("taskId")
        escalation_id = await waits.escalation_of(rt, task_id) if isinstance(task_id, str) else None
        if escalation_id is not None:
            await refuse_outside(rt, scope, "read", {"escalation_id": escalation_id})


async def _check_uri(rt: Runtime, scope: Scope, uri: object) -> None:
    if not isinstance(uri, str):
        return  # not a URI: the handler refuses it
    try:
        await refuse_outside(rt, scope, "read", _read_ids(named_by_uri(uri)))
    except Forbidden as exc:
        raise Forbidden(f"{uri}: {exc}") from None


def _listened(notifications: Mapping[str, Any]) -> list[object]:
    uris = notifications.get("resourceSubscriptions", notifications.get("resource_subscriptions"))
    return list(uris) if isinstance(uris, list) else []


def _read_ids(arguments: object) -> dict[str, Any]:
    """The arguments with each id that names a task read as its handler will read it (an
    escalation's number given as "7" or 7.0 is 7); what is of no type a handler accepts is
    left out (the handler refuses it)."""
    if not isinstance(arguments, Mapping):
        return {}
    read = {str(key): value for key, value in arguments.items()}
    for name in ESCALATION_ARGUMENTS:
        if name in read:
            value = number(read[name])
            read[name] = int(value) if value is not None and value.is_integer() else None
    for name in (*FAILURE_ARGUMENTS, "task_id", "project"):
        if name in read and not isinstance(read[name], str):
            read[name] = None
    return read
