"""MCP resources and prompts: read-only views on the same services as the tools.

Resources: ``escalation://pending``, ``escalation://{escalation_id}``, ``task://{task_id}``,
``task://{task_id}/feedback/{step}``; an unknown id is resource-not-found. Prompts:
``retry_with_feedback``, ``fix_review_findings``, ``escalation_briefing``,
``resume_after_response``. Descriptions come from ``prompts/tools.toml``.

Over HTTP a person's token may carry a scope: a resource or prompt on a task outside it is
refused before it is read, by the check every request passes (``adapters/mcp/scope_gate.py``,
with what ``named_by_uri`` reads of a URI), and the pending list keeps the scope's
escalations only.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from mcp import MCPError
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError
from mcp.server.mcpserver.prompts.base import Prompt, PromptArgument
from mcp.server.mcpserver.resources import ResourceTemplate
from mcp.shared.uri_template import UriTemplate
from mcp.types import INVALID_PARAMS

from ...errors import ConfigError, EscalationError, NotFound
from ...prompts import PromptBook
from ...rules.bounds.token_scope import Scope
from ...services import briefings, escalation_lists, escalations, guidance, tasks
from ...services import feedback as feedback_service
from ...services.runtime import Runtime
from ..sdk_private import add_resource_template
from .context import AppContext, LiveRuntimes

Ctx = Context[AppContext]
T = TypeVar("T")

RESOURCE_FEEDBACK_CHARS = 12000


def _rt(ctx: Ctx) -> Runtime:
    return ctx.request_context.lifespan_context.runtime


@contextmanager
def _not_found(uri: str) -> Iterator[None]:
    try:
        yield
    except NotFound as exc:
        raise ResourceNotFoundError(f"{uri}: {exc}") from exc


def _token_scope() -> Scope | None:
    """The scope of the request's token (None: anything; always so on stdio, which has no
    token: the HTTP machinery is imported only when a resource or prompt is read)."""
    from ..http.auth import request_scope  # noqa: PLC0415

    return request_scope()


async def _read(uri: str, read: Callable[[], Awaitable[T]]) -> T:
    """``read``; a name that names nothing is resource-not-found."""
    with _not_found(uri):
        return await read()


def register_resources(server: MCPServer[AppContext], prompts: PromptBook, live: LiveRuntimes) -> None:
    """Add the resources, described from prompts/."""
    texts = prompts.resources
    if set(texts) != set(RESOURCES):
        raise ConfigError(f"{prompts.directory}: resource descriptions must be exactly {sorted(RESOURCES)}")

    @server.resource(
        "escalation://pending",
        mime_type="application/json",
        description=texts["escalation://pending"].description,
    )
    async def pending() -> str:
        # A static resource gets no Context in the SDK: read through a live runtime of this
        # server (every one of them points at the same store).
        listed = await escalation_lists.list_escalations(
            live.current(), status="pending", limit=200, within=_token_scope()
        )
        return listed.model_dump_json()

    for uri, (fn, mime_type) in TEMPLATES.items():
        add_resource_template(server, _template(uri, fn, mime_type, texts[uri].description))


@functools.cache
def _template(
    uri: str, fn: Callable[..., Awaitable[str]], mime_type: str, description: str
) -> ResourceTemplate:
    """The SDK's template for ``fn``, built once per process and description.

    Building one derives an argument model and a validating wrapper of ``fn`` (~1 ms each
    of the four, at every server built); a template is the same for every server, as its
    function reads the runtime from the request.
    """
    return ResourceTemplate.from_function(fn, uri_template=uri, mime_type=mime_type, description=description)


async def escalation(escalation_id: int, ctx: Ctx) -> str:
    rt = _rt(ctx)
    uri = f"escalation://{escalation_id}"
    found = await _read(uri, lambda: escalations.show_escalation(rt, escalation_id))
    return found.model_dump_json()


async def task(task_id: str, ctx: Ctx) -> str:
    rt = _rt(ctx)
    view = await _read(f"task://{task_id}", lambda: tasks.get_task(rt, task_id))
    return view.model_dump_json()


async def step_feedback(task_id: str, step: str, ctx: Ctx) -> str:
    rt = _rt(ctx)
    found = await _read(
        f"task://{task_id}/feedback/{step}",
        lambda: feedback_service.get_feedback(
            rt, task_id=task_id, step=step, max_chars=RESOURCE_FEEDBACK_CHARS
        ),
    )
    return found.rendered


async def failure(failure_id: str, ctx: Ctx) -> str:
    rt = _rt(ctx)
    uri = f"failure://{failure_id}"
    view = await _read(uri, lambda: guidance.show_failure(rt, failure_id))
    return view.model_dump_json()


# The templates by URI: the function that reads one, and what it answers with.
TEMPLATES: dict[str, tuple[Callable[..., Awaitable[str]], str]] = {
    "escalation://{escalation_id}": (escalation, "application/json"),
    "task://{task_id}": (task, "application/json"),
    "task://{task_id}/feedback/{step}": (step_feedback, "text/plain"),
    "failure://{failure_id}": (failure, "application/json"),
}
RESOURCES = ("escalation://pending", *TEMPLATES)
# Each template as the SDK parses and matches it (percent-escapes decoded alike).
_PARSED = tuple(UriTemplate.parse(uri) for uri in TEMPLATES)


def named_by_uri(uri: str) -> dict[str, str]:
    """What a resource URI names (``task_id``, ``escalation_id``, ``failure_id``, ``step``),
    for the scope check: nothing for the pending list or a URI that is no resource's."""
    for template in _PARSED:
        found = template.match(uri)
        if found is not None:
            return {name: value for name, value in found.items() if isinstance(value, str)}
    return {}


def _prompt(server: MCPServer[AppContext], prompts: PromptBook, fn: Callable[..., Awaitable[str]]) -> None:
    """Register ``fn`` as a prompt, described from prompts/.

    Built directly rather than with ``Prompt.from_function``: that derives an argument
    model and a validating wrapper per prompt at start-up (cold start), and prompt
    arguments are strings on the wire anyway; the functions convert what they need.
    """
    text = prompts.prompts.get(fn.__name__)
    if text is None:
        raise ConfigError(f"{prompts.directory}: prompt {fn.__name__!r} has no description")
    parameters = [p for name, p in inspect.signature(fn).parameters.items() if name != "ctx"]
    names = {p.name for p in parameters}
    if names != set(text.arguments):
        raise ConfigError(
            f"{prompts.directory}: prompt {fn.__name__!r} arguments {sorted(names)} "
            f"are described as {sorted(text.arguments)}"
        )
    arguments = [
        PromptArgument(
            name=p.name,
            description=text.arguments[p.name],
            required=p.default is inspect.Parameter.empty,
        )
        for p in parameters
    ]
    server.add_prompt(
        Prompt(
            name=fn.__name__, description=text.description, arguments=arguments, fn=fn, context_kwarg="ctx"
        )
    )


def _escalation_id(value: str) -> int:
    try:
        number = int(str(value).strip())
    except ValueError:
        number = 0
    if number < 1:
        raise MCPError(
            code=INVALID_PARAMS, message=f"escalation_id: {value!r} is not an escalation id (an integer >= 1)"
        )
    return number


async def _text(call: Callable[[], Awaitable[str]]) -> str:
    """The prompt's text (what it names is within the token's scope: adapters/mcp/scope_gate.py)."""
    try:
        return await call()
    except EscalationError as exc:
        # A prompt failure is a protocol error; the SDK keeps the message only of an MCPError.
        raise MCPError(code=INVALID_PARAMS, message=str(exc)) from exc


def register_prompts(server: MCPServer[AppContext], prompts: PromptBook) -> None:
    """Add the MCP prompts, described from prompts/."""
    unknown = sorted(
        set(prompts.prompts)
        - {
            "retry_with_feedback",
            "fix_review_findings",
            "escalation_briefing",
            "resume_after_response",
        }
    )
    if unknown:
        raise ConfigError(f"{prompts.directory}: descriptions for unknown prompt(s) {unknown}")

    async def retry_with_feedback(task_id: str, step: str, ctx: Ctx) -> str:
        rt = _rt(ctx)
        return await _text(lambda: briefings.retry_with_feedback(rt, task_id, step))

    async def fix_review_findings(task_id: str, ctx: Ctx) -> str:
        rt = _rt(ctx)
        return await _text(lambda: briefings.fix_review_findings(rt, task_id))

    async def escalation_briefing(escalation_id: str, ctx: Ctx) -> str:
        rt, number = _rt(ctx), _escalation_id(escalation_id)
        return await _text(lambda: briefings.escalation_briefing(rt, number))

    async def resume_after_response(escalation_id: str, ctx: Ctx) -> str:
        rt, number = _rt(ctx), _escalation_id(escalation_id)
        return await _text(lambda: briefings.resume_after_response(rt, number))

    for fn in (retry_with_feedback, fix_review_findings, escalation_briefing, resume_after_response):
        _prompt(server, prompts, fn)
