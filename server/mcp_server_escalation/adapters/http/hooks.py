"""Host hooks over HTTP: a remote agent's host posts each hook event instead of running a process.

An agent on another machine (a cloud sandbox, a CI runner) has no store of its own to run
``hook claude-code`` on. Claude Code's ``http`` hook type posts the very JSON a command hook
reads on stdin to ``POST /hooks/claude-code``, and reads a 2xx response's JSON body exactly
as a command hook's stdout; an empty body is "no decision". The event goes through the
same code as the command hook and the relay (``hooks/dispatch.py``), in this process, on
the runtime this app opens for the server's lifetime.

Over HTTP there is no exit code: every answer the hooks give is JSON already (a deny is
``permissionDecision: "deny"``, a held stop ``decision: "block"``), so nothing is lost.
Anything else the host reads as a non-blocking error (the tool call proceeds), as it reads
a command hook's exit 0 with nothing on stdout; the status says what went wrong:

- the Host/Origin allow-list of ``/mcp`` (421, 403), and a JSON content type (400);
- a bearer token, either role's, as ``/mcp`` takes them (401; nothing is read or stored);
- at most ``HOOK_BODY_BYTES`` of body (413, before anything is parsed or stored);
- an ``X-Escalation-Task`` header that is not a task id (400): the host fills it from the
  agent's ``ESCALATION_TASK`` (``allowedEnvVars``); empty means none;
- an event the hooks cannot use, or one without an absolute ``cwd`` (400): the remote
  agent's project is its event's ``cwd``, never this server's working directory;
- what became of an event handled (a report kept or dropped, the store down or failing,
  a bug): ``hooks/outcome.py``'s statuses and words, which the command hook shares;
- an event outside the scope of a person's token (``projects``, ``task_prefixes`` in the
  tokens file; 403, nothing recorded): a task not named, or named without one of the
  prefixes (before the body is read), or a ``cwd`` outside every folder.

The host shows a refusal's body to the user (and some hosts to the model), so it is worded
from the ``hook_http_*`` templates of ``prompts/hooks.toml``, names as sent on one clipped
line, never a repr. The app loads the prompt book the settings name when it is built, not
with the runtime: the host, token and task-header checks refuse before the store is open,
and the runtime is opened on that same book.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from ...hooks.dispatch import HTTP_PATH, prepare_remote
from ...hooks.hosts import http_hosts
from ...hooks.outcome import Ending, answered, failed, for_http, no_decision, not_recorded
from ...hooks.relay import MAX_STDIN
from ...hooks.spool import Spooled, answer_or_keep, own_spool
from ...models.limits import TASK_ID_PATTERN
from ...prompts import PromptBook
from ...rules.bounds.token_scope import Scope
from ...rules.reading.salient import one_line
from ...rules.wording.hook_input import NAME_CHARS
from ...rules.wording.scope_refusals import scope_refusal_words
from ...services.runtime import Runtime, open_runtime, prompt_book
from ...settings import Settings
from .auth import Holder, StaticTokenVerifier

# The hosts whose hooks can be posted (their descriptions say so: Claude Code has an
# ``http`` hook type; Cursor's and Codex's hooks are commands only).
HTTP_HOSTS = http_hosts()
HOOK_PATH = HTTP_PATH + "{host}"
# What the relay takes from a local hook's stdin: an Edit's payload carries the whole file.
HOOK_BODY_BYTES = MAX_STDIN
TASK_HEADER = "X-Escalation-Task"


def is_hook_path(path: str) -> bool:
    """Is this path one of the hook routes' (never ``/mcp`` or the console's)?"""
    return path.startswith(HTTP_PATH)


def _refusal(status: int, text: str, **headers: str) -> Response:
    return PlainTextResponse(text + "\n", status_code=status, headers=headers or None)


async def _body(request: Request, limit: int) -> bytes | None:
    """The whole body; None as soon as it is larger than ``limit`` bytes (declared or sent)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        return None
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _task(request: Request, book: PromptBook) -> str | None:
    """The task the agent names in its header; raises ``Refused`` for one that is no id."""
    named = request.headers.get(TASK_HEADER, "").strip()
    if not named:
        return None
    if not re.match(TASK_ID_PATTERN, named):
        raise Refused(
            book.render("hook_http_bad_task", header=TASK_HEADER, task_id=one_line(named, NAME_CHARS))
        )
    return named


class Refused(Exception):
    """An event refused before it is recorded, with the status that says why."""

    status = 400


class OutOfScope(Refused):
    """The event is outside what the token's holder may report (their tokens file scope)."""

    status = 403


class TooLarge(Refused):
    """The event's body is over ``HOOK_BODY_BYTES`` (declared or sent)."""

    status = 413


class HookRoutes:
    """The hook routes of one server: its settings, its tokens, its Host/Origin checks."""

    def __init__(
        self,
        settings: Settings,
        verifier: StaticTokenVerifier,
        security: TransportSecuritySettings,
        book: PromptBook,
    ) -> None:
        self.settings = settings
        self.book = book
        self.verifier = verifier
        self.check = TransportSecurityMiddleware(security)
        # A remote agent has no spool of its own: its reports wait in this server's.
        self.spool = own_spool(settings.db_path)
        self.rt: Runtime | None = None  # open while the app runs

    async def _refused(self, request: Request, host: str) -> Response | Holder:
        """The host, Host/Origin, content-type and token checks, before any byte of the body
        is read: the refusal, or who holds the token."""
        if host not in HTTP_HOSTS:
            named = one_line(host, NAME_CHARS)
            return _refusal(404, self.book.render("hook_http_unknown_host", host=named, hosts=HTTP_HOSTS))
        refused = await self.check.validate_request(request, is_post=True)
        if refused is not None:
            return refused
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        holder = self.verifier.holder(token.strip()) if scheme.lower() == "bearer" else None
        if holder is None:
            return _refusal(
                401,
                self.book.render("hook_http_no_token"),
                **{"WWW-Authenticate": 'Bearer error="invalid_token"'},
            )
        return holder

    async def post(self, request: Request) -> Response:
        """One hook event in, the host's JSON out (an empty body: no decision)."""
        host = str(request.path_params["host"])
        holder = await self._refused(request, host)
        if isinstance(holder, Response):
            return holder
        return await self._decided(host, request, holder)

    async def _decided(self, host: str, request: Request, holder: Holder) -> Response:
        """The answer to a checked event: its JSON, or a status that says why there is none."""
        try:
            ending = await self._answer(host, request, holder.scope)
        except Refused as exc:
            return _refusal(exc.status, not_recorded(self.book, str(exc)))
        except Exception as exc:  # noqa: BLE001 (as in the hook process: never an answer the host misreads)
            ending = failed(exc)
        if ending is None:
            return _refusal(503, no_decision(self.book, "hook_http_store_not_open"))
        answer = for_http(ending, self.book)
        return Response(answer.body, answer.status, answer.headers or None, answer.media_type)

    async def _answer(self, host: str, request: Request, scope: Scope | None) -> Ending | None:
        """What became of the event; None while the store is closed. Raises ``OutOfScope``
        for an event the token may not report."""
        task = _task(request, self.book)
        if self.rt is None:
            return None
        refusal = scope.task_refusal(task) if scope else None
        if refusal:
            raise OutOfScope(scope_refusal_words(self.book, refusal, TASK_HEADER))  # before the body
        try:
            raw = await _body(request, HOOK_BODY_BYTES)
        except ClientDisconnect as exc:  # gone, or closed for sending too slowly
            raise Refused(self.book.render("hook_http_cut_short")) from exc
        if raw is None:
            raise TooLarge(self.book.render("hook_http_too_large", limit=HOOK_BODY_BYTES))
        triaged = prepare_remote(raw, self.settings, task, entry=host)
        if triaged is None:
            return answered("", None)
        refusal = scope.project_refusal(triaged.root) if scope else None
        if refusal:
            raise OutOfScope(scope_refusal_words(self.book, refusal, TASK_HEADER))
        triaged = triaged._replace(within=scope)
        event = Spooled(host, raw.decode("utf-8"), {}, None, remote=True, task=task)
        return answered(*await answer_or_keep(self.rt, self.settings, triaged, event, self.spool))


def build_hook_app(
    settings: Settings, verifier: StaticTokenVerifier, security: TransportSecuritySettings
) -> Starlette:
    """The hook routes on the store ``settings`` name, opened for the app's lifetime."""
    routes = HookRoutes(settings, verifier, security, prompt_book(settings))

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        async with open_runtime(settings, prompts=routes.book) as rt:
            routes.rt = rt
            try:
                yield
            finally:
                routes.rt = None

    return Starlette(routes=[Route(HOOK_PATH, routes.post, methods=["POST"])], lifespan=lifespan)
