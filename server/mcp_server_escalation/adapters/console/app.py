"""The operator console: a Starlette app that shows and answers escalations.

Server-rendered pages, one small vendored script (``static/console.js``) that follows the
change feed over SSE and refreshes the live parts of the page; no CDN, no build step. Every
route is behind the same Host/Origin allow-list as ``/mcp`` (adapters/http/serving.py); every page
but the login needs the operator's session; every POST needs an allowed Origin header and
(but the login) the session's CSRF token. Answers go through the service the CLI uses,
recorded as ``console:<name>`` (who logged in: the person for their own token, ``operator``
for the shared operator token), and carry the revision they were made on. The console runs
no command: it reads the store and answers escalations, nothing else.

This module assembles the app: the routes, the store's lifespan, the page every route answers
while the store does not, and the guard around them all. The pages are ``read_pages.py``'s,
what the operator posts is ``posts.py``'s, and what both share ``base.py``'s.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ...errors import StoreUnavailable
from ...services.runtime import open_runtime
from ...settings import Settings
from .guard import Guard
from .live import STREAMS_PER_SESSION
from .posts import Posts
from .read_pages import ReadPages
from .sessions import Sessions

STATIC = Path(__file__).parent / "static"

Handler = Callable[[Request], Awaitable[Response]]


class Console(ReadPages, Posts):
    """The routes, bound to one runtime and one set of sessions."""


# How long a browser (or a person) is asked to wait before trying a page again.
RETRY_AFTER_SECONDS = 30


def unavailable_page(console: Console, request: Request) -> Response:
    """The page every route answers while the store does not: what became of the request and
    what to do. Which store (a database's URL) and why are in the log the store writes once per
    outage, for whoever runs the server; a line per page would flood it."""
    book = console.book
    message = book.render("console_store_unavailable")
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
            except StoreUnavailable:
                return unavailable_page(holder["console"], request)

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
