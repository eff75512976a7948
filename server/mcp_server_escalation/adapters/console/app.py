"""The operator console: a Starlette app that shows and answers escalations.

Server-rendered pages, one small vendored script (``static/console.js``) that follows the
change feed over SSE and refreshes the live parts of the page; no CDN, no build step. Every
route is behind the same Host/Origin allow-list as ``/mcp`` (adapters/http/serving.py); every page
but the login needs the operator's session; every POST needs an allowed Origin header and
(but the login) the session's CSRF token. Answers go through the service the CLI uses,
recorded as ``console:<name>`` (who logged in: the person for their own token, ``operator``
for the shared operator token), and carry the revision they were made on. The console runs
no command: it reads the store and answers escalations, nothing else.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ...errors import Conflict, EscalationError, Forbidden, InvalidInput, NotFound, StoreUnavailable
from ...rules.decide.triggers import COUNTER_LIMITS
from ...rules.wording.words import kind_words
from ...services import escalations, guidance, reports, tasks, verdicts
from ...services.operator_queue import QueueFilter, queue, read_place, told_when_fired
from ...services.runtime import Runtime, open_runtime
from ...services.scope import refuse_outside
from ...settings import Settings
from . import charts, queue_view
from .forms import answer_fields, int_field
from .guard import Guard
from .landing import landing, login_location, login_to
from .live import STREAMS_PER_SESSION, LiveStreams
from .refusals import refusal_text
from .rendering import Pages, path_segment
from .sessions import COOKIE, Session, Sessions, csrf_matches
from .throttle import LoginThrottle

STATIC = Path(__file__).parent / "static"
STATUS_BY_ERROR: tuple[tuple[type[EscalationError], int], ...] = (
    (NotFound, 404),
    (Conflict, 409),
    (Forbidden, 403),
    (InvalidInput, 400),
)
# Rows of the answered list (the CLI's `escalations list --status resolved` shows as many).
ANSWERED_SHOWN = 50

Handler = Callable[[Request], Awaitable[Response]]


class Console:
    """The routes, bound to one runtime and one set of sessions."""

    def __init__(self, rt: Runtime, sessions: Sessions, secure_cookie: bool) -> None:
        self.rt = rt
        self.sessions = sessions
        self.live = LiveStreams(
            lambda session_id: sessions.find(session_id) is not None,
            lambda session_id: session.scope if (session := sessions.find(session_id)) else None,
        )
        self.book = rt.prompts
        # Behind a TLS proxy the browser sees https: the cookie then never travels in plain text.
        self.secure_cookie = secure_cookie
        self.throttle = LoginThrottle()
        self.pages = Pages()

    def _session(self, request: Request) -> Session | None:
        return self.sessions.find(request.cookies.get(COOKIE))

    def _page(
        self, request: Request, name: str, title: str, session: Session | None, **context: object
    ) -> Response:
        status = int(str(context.pop("status", 200)))
        csrf = session.csrf if session else None
        # A scoped session is refused the stats (they count every task): no link to them.
        scoped = session is not None and session.scope is not None
        return self.pages.render(
            request, name, status, title=title, csrf=csrf, scoped=scoped, now=self.rt.now(), **context
        )

    def _refused(self, request: Request, status: int, reason: str, back: str = "/") -> Response:
        """The console's own refusal (``reason``: which of error.html's texts), outside a session."""
        return self._page(
            request,
            "error.html",
            "Not done",
            None,
            status=status,
            reason=reason,
            message="",
            back=back,
            limit=STREAMS_PER_SESSION,
        )

    def _error(self, request: Request, status: int, message: str, session: Session, back: str) -> Response:
        """A refusal of the service, in the words ``refusals.py`` gives it."""
        return self._page(
            request,
            "error.html",
            "Not done",
            session,
            status=status,
            reason="",
            message=message,
            back=back,
            limit=STREAMS_PER_SESSION,
        )

    async def login_page(self, request: Request) -> Response:
        """The login form, carrying the page to land on after it (``next``, when it is ours)."""
        return self._login(request, None, 200, landing(request.query_params.get("next", "")))

    def _login(
        self, request: Request, refused: str | None, status: int, next_path: str, seconds: int = 0
    ) -> Response:
        return self._page(
            request,
            "login.html",
            "Log in",
            None,
            status=status,
            refused=refused,
            next=next_path,
            seconds=seconds,
        )

    async def login(self, request: Request) -> Response:
        """Check the operator token (unless the address tried too often); set the session cookie and
        land on the page asked for before the login (``next``), else the queue."""
        address = request.client.host if request.client else ""
        form = await request.form()
        next_path = landing(str(form.get("next") or ""))
        wait = self.throttle.retry_after(address)
        if wait is not None:
            throttled = self._login(request, "throttled", 429, next_path, wait)
            throttled.headers["Retry-After"] = str(wait)
            return throttled
        holder = self.sessions.holder(str(form.get("token") or ""))
        if holder is None:
            self.throttle.failed(address)
            return self._login(request, "token", 401, next_path)
        if holder.role != "operator":
            self.throttle.failed(address)
            return self._login(request, "agent", 403, next_path)
        session = self.sessions.login(holder)
        self.throttle.succeeded(address)
        response = RedirectResponse(next_path, status_code=303)
        response.set_cookie(
            COOKIE,
            session.session_id,
            httponly=True,
            samesite="strict",
            path="/",
            secure=self.secure_cookie,
        )
        return response

    async def logout(self, request: Request) -> Response:
        """End the session and its live streams."""
        session = self._session(request)
        if session is None or not csrf_matches(session, str((await request.form()).get("csrf") or "")):
            return self._refused(request, 403, "csrf")
        self.sessions.logout(session.session_id)
        self.live.end_session(session.session_id)
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(COOKIE, path="/", secure=self.secure_cookie, httponly=True, samesite="strict")
        return response

    async def queue_page(self, request: Request) -> Response:
        """Pending escalations and answers not yet acknowledged, filtered by the query string,
        a page at a time (``after``: the place the previous page ended)."""
        session = self._session(request)
        if session is None:
            return RedirectResponse(login_location(request), status_code=303)
        wanted = QueueFilter(
            project=request.query_params.get("project", ""),
            agent=request.query_params.get("agent", ""),
            type=request.query_params.get("type", ""),
        )
        try:
            place_asked = read_place(request.query_params.get("after", ""))
            found = await queue(self.rt, wanted, place_asked, within=session.scope)
        except InvalidInput as exc:
            return self._error(request, 400, str(exc), session, "/")
        rows, place = queue_view.queue_rows(found.escalations), queue_view.queue_place(found, wanted)
        return self._page(request, "queue.html", "Queue", session, wanted=wanted, rows=rows, place=place)

    async def escalation_page(self, request: Request) -> Response:
        """One escalation: what fired and its evidence, the question, and the answer form or the answer."""
        session = self._session(request)
        if session is None:
            return RedirectResponse(login_location(request), status_code=303)
        escalation_id = int(request.path_params["id"])
        outside = await self._outside(request, session, escalation_id=escalation_id)
        if outside is not None:
            return outside
        try:
            escalation = await escalations.show_escalation(self.rt, escalation_id)
            told = await escalations.agent_message(self.rt, escalation_id)
            told_then = await told_when_fired(self.rt, escalation_id)
            verdict = await escalations.verdict_of(self.rt, escalation_id)
        except NotFound as exc:
            return self._error(request, 404, refusal_text(self.book, exc, self.rt.db.path), session, "/")
        title = f"#{escalation.escalation_id} {kind_words(escalation.type)}"
        return self._page(
            request,
            "escalation.html",
            title,
            session,
            e=escalation,
            headline=queue_view.salient_line(escalation),
            told=told,
            told_then=told_then,
            verdict=verdict,
        )

    async def task_page(self, request: Request) -> Response:
        """One task: its state, what its agent is told now, its escalations, counters and tests."""
        session = self._session(request)
        if session is None:
            return RedirectResponse(login_location(request), status_code=303)
        task_id = str(request.path_params["task_id"])
        outside = await self._outside(request, session, task_id=task_id)
        if outside is not None:
            return outside
        try:
            after = int_field(request.query_params.get("after"), "after") or 0
            view = await tasks.get_task(self.rt, task_id)
            story = await tasks.timeline(self.rt, task_id, after)
        except NotFound as exc:
            return self._error(request, 404, refusal_text(self.book, exc, self.rt.db.path), session, "/")
        except InvalidInput as exc:
            return self._error(request, 400, str(exc), session, f"/tasks/{path_segment(task_id)}")
        title = f"Task {view.task.task_id}"
        return self._page(request, "task.html", title, session, view=view, limits=COUNTER_LIMITS, story=story)

    async def failure_page(self, request: Request) -> Response:
        """A failure's whole error: each occurrence's whole output and what changed between them."""
        session = self._session(request)
        if session is None:
            return RedirectResponse(login_location(request), status_code=303)
        failure_id = str(request.path_params["failure_id"])
        outside = await self._outside(request, session, failure_id=failure_id)
        if outside is not None:
            return outside
        try:
            whole = await guidance.whole_failure(self.rt, failure_id)
        except NotFound as exc:
            return self._error(request, 404, refusal_text(self.book, exc, self.rt.db.path), session, "/")
        return self._page(
            request, "failure.html", f"Failure {whole.failure.failure_id}", session, whole=whole
        )

    async def answered_page(self, request: Request) -> Response:
        """The latest answered (or otherwise closed) escalations."""
        session = self._session(request)
        if session is None:
            return RedirectResponse(login_location(request), status_code=303)
        found = await escalations.list_escalations(
            self.rt, status="resolved", limit=ANSWERED_SHOWN, within=session.scope
        )
        return self._page(request, "answered.html", "Answered", session, rows=found.escalations)

    async def stats_page(self, request: Request) -> Response:
        """The ``stats`` figures: time to answer, counts by kind and status, notifier health."""
        session = self._session(request)
        if session is None:
            return RedirectResponse(login_location(request), status_code=303)
        if session.scope is not None:
            # The figures count every task's escalations: a scoped token sees none of them.
            return self._refused(request, 403, "scoped_stats")
        report = await reports.stats(self.rt)
        buckets = await reports.answer_time_buckets(self.rt)
        chart = charts.day_chart(report.per_day)
        return self._page(
            request, "stats.html", "Stats", session, report=report, buckets=buckets, chart=chart
        )

    async def answer(self, request: Request) -> Response:
        """Answer through the CLI's service, as the logged-in operator, on the revision shown."""
        posted = await self._posted_on_escalation(request)
        if isinstance(posted, Response):
            return posted
        escalation_id, back, session, form = posted
        try:
            answer = await answer_fields(self.rt, escalation_id, form)
            await escalations.resolve_escalation(
                self.rt,
                escalation_id=escalation_id,
                role="operator",
                responder=session.responder,
                expected_revision=int_field(form.get("revision"), "revision"),
                response_type=answer.response_type,
                content=answer.content,
                new_file_limit=answer.new_file_limit,
                add_scope=answer.add_scope,
                verdict=answer.verdict,
            )
        except EscalationError as exc:
            return self._escalation_refused(request, exc, session, back)
        return RedirectResponse(back, status_code=303)

    async def judge(self, request: Request) -> Response:
        """A verdict on an escalation answered before (elsewhere, or without one), as the
        logged-in operator; the answer form asks it of a pending one."""
        posted = await self._posted_on_escalation(request)
        if isinstance(posted, Response):
            return posted
        escalation_id, back, session, form = posted
        try:
            await verdicts.judge_escalation(
                self.rt,
                escalation_id=escalation_id,
                verdict=str(form.get("verdict") or ""),
                role="operator",
                judged_by=session.responder,
            )
        except EscalationError as exc:
            return self._escalation_refused(request, exc, session, back)
        return RedirectResponse(f"{back}#answer-state", status_code=303)

    async def _posted_on_escalation(self, request: Request) -> tuple[int, str, Session, FormData] | Response:
        """An operator's form posted on an escalation's page: the escalation's id, its page, the
        session and the form; or the refusal. What was filled in is lost with the session, so a
        logged-out operator goes back to the escalation through the login."""
        escalation_id = int(request.path_params["id"])
        back = f"/escalations/{escalation_id}"
        session = self._session(request)
        if session is None:
            return self._refused(request, 401, "session", login_to(back))
        form = await request.form()
        if not csrf_matches(session, str(form.get("csrf") or "")):
            return self._refused(request, 403, "csrf")
        outside = await self._outside(request, session, escalation_id=escalation_id)
        return outside or (escalation_id, back, session, form)

    async def _outside(self, request: Request, session: Session, **named: object) -> Response | None:
        """The page refusing what ``named`` names (a task, an escalation, a failure record)
        when it is outside the scope of the session's token (the check and the words of
        ``/mcp``), before anything of it is read; None when it is inside."""
        if session.scope is None:
            return None
        try:
            await refuse_outside(self.rt, session.scope, "read", named)
        except Forbidden as exc:
            return self._error(request, 403, str(exc), session, "/")
        return None

    def _escalation_refused(
        self, request: Request, exc: EscalationError, session: Session, back: str
    ) -> Response:
        """The service's refusal in the operator's words, with the status its kind maps to."""
        status = next((code for kind, code in STATUS_BY_ERROR if isinstance(exc, kind)), 400)
        return self._error(request, status, refusal_text(self.book, exc, self.rt.db.path), session, back)

    async def events(self, request: Request) -> Response:
        """Server-sent events: one ``change`` per batch of the change feed, from the process's
        one reader of it (``live.py``), a keep-alive comment between them, until the session ends."""
        session = self._session(request)
        if session is None:
            return self._refused(request, 401, "session", "/login")
        session_id = session.session_id
        if self.live.count(session_id) >= STREAMS_PER_SESSION:
            return self._refused(request, 429, "streams")

        async def stream() -> AsyncIterator[str]:
            # Opened here, not before the response: a stream is closed by the code that iterates it.
            receive = self.live.open(session_id)
            if receive is None:  # another request of the session took the last place meanwhile
                return
            yield "retry: 2000\n\n"
            async for ids in self.live.messages(session_id, receive):
                yield f"event: change\ndata: {json.dumps(ids)}\n\n" if ids else ": keep-alive\n\n"

        return StreamingResponse(stream(), media_type="text/event-stream")


# How long a browser (or a person) is asked to wait before trying a page again.
RETRY_AFTER_SECONDS = 30


def unavailable_page(console: Console, request: Request, exc: StoreUnavailable) -> Response:
    """The page every route answers while the store does not: which store, why, what to do."""
    book = console.book
    message = book.render("console_store_unavailable", store=exc.location, reason=exc.reason)
    response = console._page(
        request,
        "error.html",
        book.render("console_title_unavailable"),
        None,
        status=503,
        reason="",
        message=message,
        back="/",
        limit=STREAMS_PER_SESSION,
    )
    response.headers["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


def build_console(
    settings: Settings,
    sessions: Sessions,
    security: TransportSecuritySettings,
    *,
    secure_cookie: bool = False,
) -> Guard:
    """The console app on the store ``settings`` name (opened for the app's lifetime);
    ``secure_cookie`` marks the session cookie ``Secure`` (for a console behind a TLS proxy)."""
    holder: dict[str, Console] = {}

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        # The standalone console refuses a missing store before it gets here; next to /mcp
        # the store is the server's, which creates it.
        async with open_runtime(settings) as rt, anyio.create_task_group() as group:
            console = holder["console"] = Console(rt, sessions, secure_cookie)
            group.start_soon(console.live.follow, rt)
            yield
            group.cancel_scope.cancel()

    def bound(name: str) -> Handler:
        async def handle(request: Request) -> Response:
            handler: Handler = getattr(holder["console"], name)
            try:
                return await handler(request)
            except StoreUnavailable as exc:
                return unavailable_page(holder["console"], request, exc)

        return handle

    app = Starlette(
        routes=[
            Route("/", bound("queue_page"), methods=["GET"]),
            Route("/login", bound("login_page"), methods=["GET"]),
            Route("/login", bound("login"), methods=["POST"]),
            Route("/logout", bound("logout"), methods=["POST"]),
            Route("/events", bound("events"), methods=["GET"]),
            Route("/escalations/{id:int}", bound("escalation_page"), methods=["GET"]),
            Route("/escalations/{id:int}/answer", bound("answer"), methods=["POST"]),
            Route("/escalations/{id:int}/verdict", bound("judge"), methods=["POST"]),
            Route("/tasks/{task_id}", bound("task_page"), methods=["GET"]),
            Route("/failures/{failure_id}", bound("failure_page"), methods=["GET"]),
            Route("/answered", bound("answered_page"), methods=["GET"]),
            Route("/stats", bound("stats_page"), methods=["GET"]),
            Mount("/static", app=StaticFiles(directory=STATIC), name="static"),
        ],
        lifespan=lifespan,
    )
    return Guard(app, security)
