"""The wait for a human's answer as an MCP task: the tasks extension (``io.modelcontextprotocol/tasks``).

When: a ``get_escalation`` call with a wait, on a pending escalation, from a client that
declares the extension on that request (2026-07-28 only: the extension is negotiated per
request there). Instead of waiting inside the call, the server answers at once with a task
(``resultType: "task"``), stored before it is returned (services/waits.py), and the client
polls ``tasks/get`` for it: the task completes when a human answers, the escalation closes,
or the caller's ``wait_seconds`` (fitted to its connection, as every wait is) have run, with
the very result ``get_escalation`` gives then (worked out at the first poll that finds the
escalation no longer pending or the wait over, kept, and returned by every later poll). A
wait that ran its length completes pending, with the same "keep waiting" message a plain
call's timed-out wait gives: a client that declares the extension on every call (and so
takes the plain wait as a task) waits no longer than it asked for. ``raise_escalation`` takes
no ``wait``: the call that asks the question returns it (and the pause) at once, and the wait
is the next call, as every pause message says. A client that does not declare the extension, or
a handshake-era client, gets today's ``get_escalation``.

- ``tasks/get``: working, or ``input_required`` while the person at the client can answer: the
  same question as the 2026-07-28 form (adapters/mcp/elicitation_modern.py: a form, or the
  console's link where ``console_url`` is set), keyed ``answer-<revision>`` by the revision it
  shows, so a key is never reused for another question; completed with the result; cancelled.
- ``tasks/update``: the person's answer, taken by the same method as the other two forms
  (``AskInClient.record``, on the revision the question showed): the CLI or the console
  answering first wins, an answer to a revision that changed since is refused, a decline (or
  cancel) is remembered and the task asks no more; an accepted link is not sent again.
- ``tasks/cancel``: the client stops waiting; the escalation stays pending, as after a wait
  that timed out. A cancelled or completed task keeps its state.

A task is read only by the caller that started it (on stdio the one client of the process;
over HTTP the role and person of the bearer token). An unknown, expired or another caller's
task id is the extension's "invalid params" error. The result is bounded like every tool
result, and the stored task with it (``RESULT_MAX_BYTES`` in all).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mcp import MCPError
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension, MethodBinding
from mcp.server.mcpserver import Context, MCPServer, require_client_extension
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import INVALID_PARAMS, CallToolRequestParams, CallToolResult, ElicitResult, TextContent
from mcp_types import RequestParams
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ConfigDict, Field, ValidationError

from ...errors import EscalationError, NotFound
from ...models.escalations import Escalation
from ...models.limits import RESULT_MAX_BYTES, Role
from ...models.waits import Asking, Wait
from ...rules.bounds.results import fit
from ...services import escalations, waits
from ...services.runtime import Runtime
from .context import AppContext
from .elicitation_modern import client_name
from .registry import shown_text
from .waits import fitted_wait, waited_on

if TYPE_CHECKING:
    from .elicitation import AskInClient

log = logging.getLogger(__name__)

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
POLL_INTERVAL_MS = 1000  # an answer reaches the polling client within a second or so
ANSWER_KEY = re.compile(r"answer-(\d{1,12})")
MAX_RESPONSES = 8  # inputResponses read per update: the task asks one question at a time
TASK_ID_MAX = 128


class TaskParams(RequestParams):
    """``tasks/get`` and ``tasks/cancel``: the task named."""

    model_config = ConfigDict(populate_by_name=True)

    task_id: str = Field(alias="taskId", min_length=1, max_length=TASK_ID_MAX)


class UpdateParams(TaskParams):
    """``tasks/update``: the task and the person's answers, by the keys the task asked with."""

    input_responses: dict[str, Any] = Field(alias="inputResponses")


def declares_tasks(ctx: ServerRequestContext[AppContext, Any]) -> bool:
    """Did this request's client declare the tasks extension (2026-07-28 only)?"""
    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return False
    capabilities = ctx.session.client_capabilities
    return bool(capabilities and capabilities.extensions and TASKS_EXTENSION in capabilities.extensions)


class WaitAsTask(Extension):
    """The tasks extension of one server (module docstring)."""

    identifier = TASKS_EXTENSION

    def __init__(self, asker: AskInClient, *, http: bool, role: Role) -> None:
        self.asker = asker
        self.http = http
        self.role = role
        # The server whose get_escalation completes a task: set once it is built.
        self.server: MCPServer[AppContext] | None = None

    def methods(self) -> Sequence[MethodBinding]:
        modern = frozenset(MODERN_PROTOCOL_VERSIONS)
        return (
            MethodBinding("tasks/get", TaskParams, self._get, modern),
            MethodBinding("tasks/update", UpdateParams, self._update, modern),
            MethodBinding("tasks/cancel", TaskParams, self._cancel, modern),
        )

    async def intercept_tool_call(
        self, params: CallToolRequestParams, ctx: ServerRequestContext[AppContext, Any], call_next: CallNext
    ) -> HandlerResult:
        """A waiting ``get_escalation`` on a pending escalation becomes a task; the rest runs."""
        escalation_id = waited_on(params.arguments) if params.name == "get_escalation" else None
        if escalation_id is None or not declares_tasks(ctx):
            return await call_next(ctx)
        rt = ctx.lifespan_context.runtime
        try:
            escalation = await escalations.show_escalation(rt, escalation_id)
        except EscalationError:
            return await call_next(ctx)  # the tool reports the unknown id itself
        if escalation.status != "pending":
            return await call_next(ctx)
        known = (params.arguments or {}).get("known_revision")
        if known is not None and (isinstance(known, bool) or not isinstance(known, int)):
            return await call_next(ctx)  # the tool reports the malformed revision itself
        wait = await waits.start_wait(
            rt,
            escalation_id,
            self._owner(),
            self._asking(ctx, rt, escalation),
            seconds=fitted_wait(float(params.arguments["wait_seconds"])),  # type: ignore[index]
            known_revision=known,
        )
        # The seed state is always working: a question is read with tasks/get.
        return {"resultType": "task", **_task(rt, wait, "working", "task_wait_working", escalation_id)}

    def _asking(
        self, ctx: ServerRequestContext[AppContext, Any], rt: Runtime, escalation: Escalation
    ) -> Asking:
        """How the person at this client is asked, by the rules of the other forms."""
        how = self.asker.how_to_ask(ctx, (id(rt), escalation.escalation_id), escalation)
        return "no" if how is None else how

    def _owner(self) -> str:
        """Who may read the task: the process's one client on stdio, the token's caller over HTTP."""
        if not self.http:
            return "stdio"
        from ..http.auth import request_person, request_role  # noqa: PLC0415

        return f"{request_role(self.role)}:{request_person() or ''}"

    async def _read(
        self, ctx: ServerRequestContext[AppContext, Any], task_id: str
    ) -> tuple[Wait, Escalation]:
        require_client_extension(ctx, TASKS_EXTENSION)
        try:
            return await waits.read_wait(ctx.lifespan_context.runtime, task_id, self._owner())
        except NotFound as exc:
            raise MCPError(code=INVALID_PARAMS, message=f"Failed to retrieve task: {exc}") from None

    async def _get(self, ctx: ServerRequestContext[AppContext, Any], params: TaskParams) -> HandlerResult:
        wait, escalation = await self._read(ctx, params.task_id)
        rt = ctx.lifespan_context.runtime
        if wait.status == "working" and (escalation.status != "pending" or waits.wait_over(rt, wait)):
            wait = await waits.complete_wait(rt, wait, await self._result(ctx, wait))
        return _detailed(rt, wait, escalation, self.asker)

    async def _result(self, ctx: ServerRequestContext[AppContext, Any], wait: Wait) -> dict[str, Any]:
        """``get_escalation``'s result now, as the tool gives it to this caller after its
        wait (with the revision it named), bounded."""
        assert self.server is not None, "build_server sets the server"
        context: Context[AppContext] = Context(request_context=ctx, mcp_server=self.server)
        arguments: dict[str, Any] = {"escalation_id": wait.escalation_id}
        if wait.known_revision is not None:
            arguments["known_revision"] = wait.known_revision
        try:
            result = await self.server.call_tool("get_escalation", arguments, context)
        except ToolError as exc:  # the tool's own error result, as the call would have had it
            result = CallToolResult(content=[TextContent(type="text", text=str(exc))], is_error=True)
        return bounded(result.model_dump(mode="json", by_alias=True, exclude_none=True))

    async def _update(
        self, ctx: ServerRequestContext[AppContext, Any], params: UpdateParams
    ) -> HandlerResult:
        wait, escalation = await self._read(ctx, params.task_id)
        for key, raw in list(params.input_responses.items())[:MAX_RESPONSES]:
            asked = ANSWER_KEY.fullmatch(key)
            if asked is not None and wait.status == "working" and wait.asking != "no":
                await self._take(ctx, wait, escalation, int(asked[1]), raw)
        return {}

    async def _take(
        self,
        ctx: ServerRequestContext[AppContext, Any],
        wait: Wait,
        escalation: Escalation,
        shown: int,
        raw: Any,
    ) -> None:
        """One answer of the person at the client: recorded, remembered, or refused (module docstring)."""
        rt = ctx.lifespan_context.runtime
        escalation_id = escalation.escalation_id
        try:
            answer = ElicitResult.model_validate(raw)
        except ValidationError as exc:
            log.warning("escalation %d: an answer from the client could not be read: %s", escalation_id, exc)
            return
        if answer.action != "accept" or wait.asking == "url":
            await waits.stop_asking(rt, wait)
            if answer.action != "accept":
                self.asker._remember_refusal(id(rt), escalation_id)
                log.info("escalation %d: the human chose %s; it stays pending", escalation_id, answer.action)
            else:
                self.asker._remember_link((id(rt), escalation_id), "accepted in a task")
            return
        try:
            data = self.asker._form(escalation).model_validate(answer.content or {})
        except ValidationError as exc:
            log.warning("escalation %d: the answer from the client was not recorded: %s", escalation_id, exc)
            return
        await self.asker.record(rt, escalation, data, client_name(ctx), revision=shown)

    async def _cancel(self, ctx: ServerRequestContext[AppContext, Any], params: TaskParams) -> HandlerResult:
        require_client_extension(ctx, TASKS_EXTENSION)
        try:
            await waits.cancel_wait(ctx.lifespan_context.runtime, params.task_id, self._owner())
        except NotFound as exc:
            raise MCPError(code=INVALID_PARAMS, message=f"Failed to cancel task: {exc}") from None
        return {}


def _task(rt: Runtime, wait: Wait, status: str, message: str, escalation_id: int) -> dict[str, Any]:
    """The task fields every answer about it carries."""
    return {
        "taskId": wait.wait_id,
        "status": status,
        "statusMessage": rt.prompts.render(message, escalation_id=escalation_id),
        "createdAt": wait.created_at,
        "lastUpdatedAt": wait.updated_at,
        "ttlMs": waits.WAIT_KEPT_SECONDS * 1000,
        "pollIntervalMs": POLL_INTERVAL_MS,
    }


def _detailed(rt: Runtime, wait: Wait, escalation: Escalation, asker: AskInClient) -> dict[str, Any]:
    """The task as ``tasks/get`` shows it: with its result, or the question it asks."""
    escalation_id = escalation.escalation_id
    if wait.status == "completed":
        return {**_task(rt, wait, "completed", "task_wait_completed", escalation_id), "result": wait.result}
    if wait.status == "cancelled":
        return _task(rt, wait, "cancelled", "task_wait_cancelled", escalation_id)
    if wait.asking == "no":
        return _task(rt, wait, "working", "task_wait_working", escalation_id)
    question = asker.question(escalation, wait.asking)
    return {
        **_task(rt, wait, "input_required", "task_wait_asking", escalation_id),
        "inputRequests": {
            f"answer-{escalation.revision}": question.model_dump(
                mode="json", by_alias=True, exclude_none=True
            )
        },
    }


def bounded(result: dict[str, Any]) -> dict[str, Any]:
    """A tool result whose structured content and text together fit ``RESULT_MAX_BYTES``
    (the tool bounds each on its own: stored with a task, both travel in one answer)."""
    structured = result.get("structuredContent")
    if not isinstance(structured, dict) or len(shown_text(structured).encode()) * 2 <= RESULT_MAX_BYTES:
        return result
    # Half each, less what the envelope around them takes.
    structured = fit(structured, RESULT_MAX_BYTES // 2 - 512)
    return {
        **result,
        "structuredContent": structured,
        "content": [{"type": "text", "text": shown_text(structured)}],
    }
