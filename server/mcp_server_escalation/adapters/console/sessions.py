"""Who is logged in to the console: server-side sessions behind an HttpOnly cookie.

Only an operator's token opens a session (an agent's is refused by name: an agent must
never answer its own escalation), and the session remembers whose token it was: answers
given with a person's own token (the tokens file) are recorded as ``console:<name>``, with
the shared operator token as ``console:operator``; and a person's token with a scope keeps
its session to that scope, as on ``/mcp``. The cookie holds a random session id and
nothing else; the session, with its CSRF token, lives in this process's memory, so restarting the console
logs everyone out, and no secret is needed to sign anything. The token itself never
travels again after the login form: not in a cookie, not in a URL.
"""

from __future__ import annotations

import hmac
import secrets
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...rules.bounds.token_scope import Scope
    from ..http.auth import Holder, TokenBook

COOKIE = "escalation_console"
# A session outlives a working day but not a forgotten browser: 12 hours, then log in again.
SESSION_SECONDS = 12 * 3600
# Sessions held at once; the oldest is dropped beyond it (a login loop cannot fill memory).
SESSIONS_MAX = 256


@dataclass(frozen=True)
class Session:
    """One logged-in browser, and who logged in (``responder``: how their answers are recorded)."""

    session_id: str
    csrf: str
    started: float
    responder: str
    # What the token may see (its tokens file scope), as on /mcp; None: every task.
    scope: Scope | None = None


class Sessions:
    """The tokens the server accepts and the sessions operators' tokens opened."""

    def __init__(self, tokens: TokenBook) -> None:
        self._tokens = tokens
        self._sessions: dict[str, Session] = {}

    def holder(self, token: str) -> Holder | None:
        """Who holds ``token`` (compared in constant time), or None."""
        return self._tokens.holder(token)

    def login(self, holder: Holder) -> Session:
        """A new session for an operator's token (an agent's never gets here)."""
        if holder.role != "operator":
            raise ValueError("only an operator's token opens a console session")
        while len(self._sessions) >= SESSIONS_MAX:
            del self._sessions[next(iter(self._sessions))]
        session = Session(
            secrets.token_urlsafe(32),
            secrets.token_urlsafe(32),
            time.monotonic(),
            f"console:{holder.name}",
            holder.scope,
        )
        self._sessions[session.session_id] = session
        return session

    def find(self, session_id: str | None) -> Session | None:
        """The live session the cookie names, or None."""
        session = self._sessions.get(session_id or "")
        if session is None:
            return None
        if time.monotonic() - session.started > SESSION_SECONDS:
            del self._sessions[session.session_id]
            return None
        return session

    def logout(self, session_id: str) -> None:
        """End the session (its cookie opens nothing any more)."""
        self._sessions.pop(session_id, None)


def csrf_matches(session: Session, given: str | None) -> bool:
    """Does the form carry the session's CSRF token?"""
    return given is not None and hmac.compare_digest(session.csrf.encode(), given.encode())
