"""What the operator sends the console: the login (and its form), the logout, an answer and
a verdict. Every POST needs an allowed Origin header (``guard.py``) and, but the login, the
session's CSRF token; answers and verdicts go through the services the CLI uses.
"""

from __future__ import annotations

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from ...errors import EscalationError
from ...services import escalation_answers, verdicts
from .base import ConsoleBase
from .forms import answer_fields, int_field
from .landing import landing, login_to
from .sessions import COOKIE, Session, csrf_matches


class Posts(ConsoleBase):
    """The login and logout, and the forms posted on an escalation's page."""

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

    async def answer(self, request: Request) -> Response:
        """Answer through the CLI's service, as the logged-in operator, on the revision shown."""
        posted = await self._posted_on_escalation(request)
        if isinstance(posted, Response):
            return posted
        escalation_id, back, session, form = posted
        try:
            answer = await answer_fields(self.rt, escalation_id, form)
            await escalation_answers.resolve_escalation(
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
        # The page it lands on says the answer was sent (a reload alone looked like nothing happened).
        return RedirectResponse(f"{back}?sent=answer#answer-state", status_code=303)

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
        return RedirectResponse(f"{back}?sent=verdict#answer-state", status_code=303)

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
