"""Asking the human in the client on 2026-07-28, where a server cannot push a request mid-call.

The same question as the handshake era's (adapters/mcp/elicitation.py), asked the way that
protocol allows: a ``get_escalation`` call with a wait, on a pending blocking escalation, from
a client that declared elicitation, is answered with an ``InputRequiredResult`` instead of
running (a form, or the console link where ``console_url`` is set and the client opens links).
The client shows it and retries the call with the human's answer and the ``requestState`` the
server minted (the SDK seals it: the client cannot forge it), and the retry runs the call as
usual, after the answer is taken:

- An accepted form goes through the same service as the handshake era's, in the operator role,
  ``responder = "elicitation:<client>"``, made on the revision the form showed
  (``expected_revision``): an escalation answered meanwhile (the CLI or the console first) or
  changed since (new evidence) refuses it, and the call returns what is there now.
- A decline or a cancel is remembered, and the question is not asked again for that escalation;
  an accepted link is not sent again either.

What the form cannot do here, unlike the handshake era's, is watch the store: the client holds
the call while the form is open (its request clock stops while it waits on a person), so an
answer given meanwhile in the CLI is seen when the form is closed. What is remembered is kept
per session (the process on stdio); over HTTP, whose 2026-07-28 requests nothing ties
together, per server.
"""

from __future__ import annotations

import json
import logging
import uuid
from typing import TYPE_CHECKING, Any, Literal

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.elicitation import render_elicitation_schema
from mcp.types import (
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitRequestURLParams,
    ElicitResult,
    InputRequiredResult,
)
from pydantic import ValidationError

from ...errors import EscalationError
from ...models.escalations import Escalation
from ...rules.operators.announce import elicitation_question
from ...services import escalations
from .context import AppContext

if TYPE_CHECKING:
    from .elicitation import AskInClient

log = logging.getLogger(__name__)

ANSWER = "escalation_answer"  # the key of our one input request


class AskOnRetry:
    """The 2026-07-28 half of ``AskInClient`` (its rules and its memory of refusals)."""

    def __init__(self, asker: AskInClient) -> None:
        self.asker = asker

    async def __call__(
        self,
        ctx: ServerRequestContext[AppContext, Any],
        call_next: CallNext,
        escalation_id: int,
        how: Literal["form", "url"],
    ) -> HandlerResult:
        """Ask with an ``InputRequiredResult``, or take the answer a retry brings, then run."""
        params = ctx.params or {}
        rt = ctx.lifespan_context.runtime
        asked = (id(rt), escalation_id)
        responses = params.get("inputResponses")
        if isinstance(responses, dict) and ANSWER in responses:
            await self._take(ctx, asked, how, params.get("requestState"), responses[ANSWER])
            return await call_next(ctx)
        try:
            escalation = await escalations.show_escalation(rt, escalation_id)
        except EscalationError:
            return await call_next(ctx)  # the tool reports the unknown id itself
        if self.asker.how_to_ask(ctx, asked, escalation) is None:
            return await call_next(ctx)
        state = json.dumps({"escalation_id": escalation_id, "revision": escalation.revision})
        return InputRequiredResult(
            input_requests={ANSWER: self.request(escalation, how)}, request_state=state
        )

    def request(self, escalation: Escalation, how: Literal["form", "url"]) -> ElicitRequest:
        prompts = self.asker.prompts
        if how == "url":
            escalation_id = escalation.escalation_id
            return ElicitRequest(
                params=ElicitRequestURLParams(
                    message=elicitation_question(prompts, escalation, template="elicitation_url_message"),
                    url=f"{self.asker.console_url}/escalations/{escalation_id}",
                    elicitation_id=f"escalation-{escalation_id}-{uuid.uuid4().hex}",
                )
            )
        return ElicitRequest(
            params=ElicitRequestFormParams(
                message=elicitation_question(prompts, escalation),
                requested_schema=render_elicitation_schema(self.asker._form(escalation)),
            )
        )

    async def _take(
        self,
        ctx: ServerRequestContext[AppContext, Any],
        asked: tuple[int, int],
        how: Literal["form", "url"],
        state: Any,
        raw: Any,
    ) -> None:
        """The human's answer a retry brings: recorded, remembered, or refused (module docstring)."""
        escalation_id = asked[1]
        try:
            shown = json.loads(state) if isinstance(state, str) else None
            answer = ElicitResult.model_validate(raw)
        except (ValueError, ValidationError) as exc:
            log.warning("escalation %d: an answer from the client could not be read: %s", escalation_id, exc)
            return
        if not isinstance(shown, dict) or shown.get("escalation_id") != escalation_id:
            return  # an answer to another question than this call's
        if answer.action != "accept":
            self.asker._remember_refusal(*asked)
            log.info("escalation %d: the human chose %s; it stays pending", escalation_id, answer.action)
            return
        if how == "url":
            self.asker._remember_link(asked, "accepted on retry")  # open in the browser: not sent again
            return
        await self._record(ctx, escalation_id, shown.get("revision"), answer.content or {})

    async def _record(
        self, ctx: ServerRequestContext[AppContext, Any], escalation_id: int, revision: Any, content: Any
    ) -> None:
        """An accepted form, answered on the revision it showed (none shown: a stale answer)."""
        rt = ctx.lifespan_context.runtime
        try:
            escalation = await escalations.show_escalation(rt, escalation_id)
            data = self.asker._form(escalation).model_validate(content)
        except (EscalationError, ValidationError) as exc:  # gone meanwhile, or a form that does not fit
            log.warning("escalation %d: the answer from the client was not recorded: %s", escalation_id, exc)
            return
        shown = revision if isinstance(revision, int) else -1
        await self.asker.record(rt, escalation, data, client_name(ctx), revision=shown)


def client_name(ctx: ServerRequestContext[AppContext, Any]) -> str:
    params = ctx.session.client_params
    return params.client_info.name if params else "client"
