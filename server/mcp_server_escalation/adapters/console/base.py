"""What every console route shares: the runtime and the sessions it is bound to, the page
rendered for a session, and the console's refusals (outside a session, of the service, of a
scope).

``read_pages.py`` and ``posts.py`` build on it; ``app.py`` puts them together as one console.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from ...errors import Conflict, EscalationError, Forbidden, InvalidInput, NotFound
from ...services.runtime import Runtime
from ...services.scope import refuse_outside
from .live import STREAMS_PER_SESSION, LiveStreams
from .refusals import refusal_text
from .rendering import Pages
from .sessions import COOKIE, Session, Sessions
from .throttle import LoginThrottle

STATUS_BY_ERROR: tuple[tuple[type[EscalationError], int], ...] = (
    (NotFound, 404),
    (Conflict, 409),
    (Forbidden, 403),
    (InvalidInput, 400),
)


class ConsoleBase:
    """The runtime and sessions a console is bound to, and the page and refusals its routes share."""

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
        return self.pages.render(request, name, status, title=title, csrf=csrf, now=self.rt.now(), **context)

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
