"""Asking the human in the client (MCP elicitation), an extra on top of tools and CLI.

When: while the agent waits for an answer, i.e. during ``get_escalation(id,
wait_seconds > 0)`` on a pending, blocking escalation. The question (the response type
and a text: a flat form, worded from prompts/operator.toml) is shown for as long as the
agent's own wait lasts, so asking can never make a call take longer than the agent asked
for, and an unattended run with nobody at the client is exactly as before: the form times
out with the wait and the escalation stays pending.

An accepted answer goes through the same service as ``escalations respond``, in the
operator role, with ``responder = "elicitation:<client name>"`` marking the channel; the
waiting ``get_escalation`` wakes at once and returns it. Decline or cancel leave the
escalation pending and are remembered for the connection (the human said no: the form is
not shown again for that escalation); a timeout is not (the next wait asks again). An
answer from another channel (the CLI) ends the wait and withdraws the open form.

Where: on connections whose client declared the ``elicitation`` capability (form mode). On
2026-07-28 a server cannot push a request mid-call: there the question is an
``InputRequiredResult`` and the client's retry brings the answer (adapters/mcp/
elicitation_modern.py, which cannot also watch the store while the form is open), and a
client that declares the MCP tasks extension is asked by the task its wait becomes
(adapters/mcp/task_waits.py). A client
without the capability is never asked: nothing here can turn into a protocol error for the
agent's call. ``[elicitation] mode``: ``auto`` (the
default) asks on stdio only; over HTTP the caller's role comes from its bearer token, and
an agent-token client answering a form would be answering as an operator, so HTTP needs
``mode = "on"``; ``off`` never asks.

Or a link (URL mode), where ``[elicitation] console_url`` is set and the client declared
``elicitation.url``: the client is asked to open ``<console_url>/escalations/<id>``, the
console page of the escalation, and the human logs in and answers there (the link carries no
token). A client that declares both modes is sent the link: the operator who set
``console_url`` chose the console, where the whole escalation and its evidence can be read.
The link is offered over HTTP too (unless ``mode = "off"``): the console, not the agent's
token, decides who may answer. Declined, cancelled or accepted, it is sent once per
connection and escalation (an accepted link is open in the human's browser already); once
the escalation is answered, the next wait to end sends ``notifications/elicitation/complete``
for it.

Implemented as a middleware around ``tools/call`` of ``get_escalation``: the tool itself is
unchanged, the question runs next to its wait.
"""

from __future__ import annotations

import logging
import uuid
from collections import OrderedDict
from typing import Any, Literal

import anyio
from mcp import MCPError
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.elicitation import AcceptedElicitation, elicit_url, elicit_with_validation
from mcp.types import ElicitRequest
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, Field, create_model

from ...errors import EscalationError
from ...models.escalations import Escalation
from ...models.limits import TEXT_MAX
from ...prompts import PromptBook
from ...rules.operators.announce import elicitation_question
from ...rules.operators.choices import form_choices, picked
from ...services import escalation_answers, escalations
from ...services.runtime import Runtime
from .client_notifications import connection_key
from .context import AppContext
from .elicitation_modern import AskOnRetry
from .task_waits import declares_tasks
from .waits import waited_on

log = logging.getLogger(__name__)

MAX_REMEMBERED = 1024


class AskInClient:
    """The elicitation middleware of one server."""

    def __init__(
        self,
        prompts: PromptBook,
        mode: Literal["auto", "on", "off"],
        *,
        http: bool,
        console_url: str | None = None,
    ) -> None:
        self.prompts = prompts
        self.enabled = mode == "on" or (mode == "auto" and not http)
        self.console_url = console_url.rstrip("/") if console_url and mode != "off" else None
        # (connection, escalation id) the human declined or cancelled: not asked again.
        self._refused: OrderedDict[tuple[int, int], None] = OrderedDict()
        # (connection, escalation id) -> elicitation id of an accepted link, until completed.
        self._opened: OrderedDict[tuple[int, int], str] = OrderedDict()
        self._on_retry = AskOnRetry(self)

    async def __call__(
        self, ctx: ServerRequestContext[AppContext, Any], call_next: CallNext
    ) -> HandlerResult:
        """Run ``get_escalation`` and, where allowed, the question next to its wait."""
        waiting = self._waiting_on(ctx)
        if waiting is None:
            return await call_next(ctx)
        escalation_id, how = waiting
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return await self._on_retry(ctx, call_next, escalation_id, how)
        rt = ctx.lifespan_context.runtime
        try:
            escalation = await escalations.show_escalation(rt, escalation_id)
        except EscalationError:
            return await call_next(ctx)  # the tool reports the unknown id itself
        asked = (connection_key(ctx.session), escalation_id)
        if (
            escalation.status != "pending"
            or not escalation.blocking
            or asked in self._refused
            or asked in self._opened
        ):
            result = await call_next(ctx)
            await self._complete_if_answered(ctx, rt, asked)
            return result
        error: Exception | None = None
        result = None
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._ask if how == "form" else self._link, ctx, rt, escalation)
            try:
                result = await call_next(ctx)
            except Exception as exc:  # noqa: BLE001 (re-raised below, outside the task group, unchanged)
                error = exc
            # The wait is over (answered here or elsewhere, or timed out): withdraw the form.
            tg.cancel_scope.cancel()
        if error is not None:
            raise error
        await self._complete_if_answered(ctx, rt, asked)
        return result

    def _how(self, ctx: ServerRequestContext[AppContext, Any]) -> Literal["form", "url"] | None:
        """How this client may be asked: a console link, a form, or not at all."""
        capabilities = ctx.session.client_capabilities
        elicitation = capabilities.elicitation if capabilities else None
        if elicitation is None:
            return None
        if self.console_url and elicitation.url is not None:
            return "url"
        # An empty ``elicitation`` capability means form mode (clients from before URL mode).
        if self.enabled and (elicitation.form is not None or elicitation.url is None):
            return "form"
        return None  # never ask a client that cannot show a form

    def _waiting_on(
        self, ctx: ServerRequestContext[AppContext, Any]
    ) -> tuple[int, Literal["form", "url"]] | None:
        """The escalation a handshake-era ``get_escalation`` call with a wait is about, and
        how to ask about it."""
        params = ctx.params or {}
        if ctx.method != "tools/call" or params.get("name") != "get_escalation":
            return None
        if declares_tasks(ctx):
            return None  # the wait becomes a task, which asks the question (adapters/mcp/task_waits.py)
        how = self._how(ctx)
        escalation_id = waited_on(params.get("arguments"))
        if how is None or escalation_id is None:
            return None
        return escalation_id, how

    def how_to_ask(
        self, ctx: ServerRequestContext[AppContext, Any], asked: tuple[int, int], escalation: Escalation
    ) -> Literal["form", "url"] | None:
        """How to ask about ``escalation`` on this 2026-07-28 request, if at all: a pending
        blocking escalation, a client that can be asked, not declined or opened already
        (``asked``: the session's key and the escalation id)."""
        how = self._how(ctx)
        if (
            how is None
            or escalation.status != "pending"
            or not escalation.blocking
            or asked in self._refused
            or asked in self._opened
        ):
            return None
        return how

    def question(self, escalation: Escalation, how: Literal["form", "url"]) -> ElicitRequest:
        """The question as an elicitation request, as 2026-07-28 carries it (a retried call's
        ``InputRequiredResult``, a task's ``inputRequests``)."""
        return self._on_retry.request(escalation, how)

    def _form(self, escalation: Escalation) -> type[BaseModel]:
        """The flat form of this escalation: one answer of those it allows (the agent's options
        by their words first), and a text that only guidance and an override need."""
        choices = form_choices(self.prompts, escalation)
        choice: Any = Literal[tuple(key for key, _ in choices)]  # a Literal built at run time

        def titled(schema: dict[str, Any]) -> None:
            # A titled single-select: the person reads each answer's words, the key comes back.
            schema.pop("enum", None)
            schema["oneOf"] = [{"const": key, "title": title} for key, title in choices]

        return create_model(
            "EscalationAnswer",
            response_type=(
                choice,
                Field(
                    description=self.prompts.render(
                        "elicitation_field_response_type", options="; ".join(title for _, title in choices)
                    ),
                    json_schema_extra=titled,
                ),
            ),
            text=(
                str,
                Field(
                    default="",
                    max_length=TEXT_MAX,
                    description=self.prompts.render("elicitation_field_text"),
                ),
            ),
        )

    async def _ask(
        self, ctx: ServerRequestContext[AppContext, Any], rt: Runtime, escalation: Escalation
    ) -> None:
        escalation_id = escalation.escalation_id
        client = ctx.session.client_params.client_info.name if ctx.session.client_params else "client"
        try:
            answer = await elicit_with_validation(
                session=ctx.session,
                message=elicitation_question(self.prompts, escalation),
                schema=self._form(escalation),
                related_request_id=ctx.request_id,
            )
        except (MCPError, ValueError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            # The client refused the request or sent a form that does not fit: no answer.
            log.warning("escalation %d: asking %s failed: %s", escalation_id, client, exc)
            return
        if not isinstance(answer, AcceptedElicitation):
            self._remember_refusal(connection_key(ctx.session), escalation_id)
            log.info(
                "escalation %d: %s's human chose %s; it stays pending", escalation_id, client, answer.action
            )
            return
        await self.record(rt, escalation, answer.data, client)

    async def record(
        self,
        rt: Runtime,
        escalation: Escalation,
        data: BaseModel,
        client: str,
        *,
        revision: int | None = None,
    ) -> None:
        """A human's accepted form (``_form`` of ``escalation``) as the operator's answer (an
        option picked is guidance in its words); ``revision``: the one the form showed, so that
        an answer given elsewhere first wins. Not recorded (logged) when the escalation was
        answered meanwhile or the answer is not allowed (guidance without text)."""
        escalation_id = escalation.escalation_id
        response_type, content = picked(escalation, data.response_type, data.text)  # type: ignore[attr-defined]
        try:
            await escalation_answers.resolve_escalation(
                rt,
                escalation_id=escalation_id,
                response_type=response_type,
                content=content,
                responder=f"elicitation:{client}",
                role="operator",
                expected_revision=revision,
            )
        except EscalationError as exc:  # answered elsewhere meanwhile, or not allowed
            log.warning("escalation %d: the answer from %s was not recorded: %s", escalation_id, client, exc)
            return
        log.info("escalation %d answered in %s (%s)", escalation_id, client, response_type)

    async def _link(
        self, ctx: ServerRequestContext[AppContext, Any], _rt: Runtime, escalation: Escalation
    ) -> None:
        escalation_id = escalation.escalation_id
        asked = (connection_key(ctx.session), escalation_id)
        elicitation_id = f"escalation-{escalation_id}-{uuid.uuid4().hex}"
        try:
            answer = await elicit_url(
                session=ctx.session,
                message=elicitation_question(self.prompts, escalation, template="elicitation_url_message"),
                url=f"{self.console_url}/escalations/{escalation_id}",
                elicitation_id=elicitation_id,
                related_request_id=ctx.request_id,
            )
        except (MCPError, ValueError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            log.warning("escalation %d: sending the console link failed: %s", escalation_id, exc)
            return
        if answer.action != "accept":
            self._remember_refusal(*asked)
            log.info(
                "escalation %d: the human chose %s for the console link; it stays pending",
                escalation_id,
                answer.action,
            )
            return
        self._remember_link(asked, elicitation_id)

    def _remember_link(self, asked: tuple[int, int], elicitation_id: str) -> None:
        self._opened[asked] = elicitation_id
        while len(self._opened) > MAX_REMEMBERED:
            self._opened.popitem(last=False)

    async def _complete_if_answered(
        self, ctx: ServerRequestContext[AppContext, Any], rt: Runtime, asked: tuple[int, int]
    ) -> None:
        """Tell the client an accepted console link is done with, once the escalation is."""
        elicitation_id = self._opened.get(asked)
        if elicitation_id is None:
            return
        try:
            escalation = await escalations.show_escalation(rt, asked[1])
        except EscalationError:
            escalation = None
        if escalation is not None and escalation.status == "pending":
            return
        del self._opened[asked]
        try:
            await ctx.session.send_elicit_complete(elicitation_id, related_request_id=ctx.request_id)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            log.warning("escalation %d: completing the console link failed: %s", asked[1], exc)

    def _remember_refusal(self, connection: int, escalation_id: int) -> None:
        self._refused[(connection, escalation_id)] = None
        while len(self._refused) > MAX_REMEMBERED:
            self._refused.popitem(last=False)
