"""Who is logged in to the console: server-side sessions behind an HttpOnly cookie.

Only the operator token opens a session (the agent token is refused by name: an agent must
never answer its own escalation). The cookie holds a random session id and nothing else;
the session, with its CSRF token, lives in this process's memory, so restarting the console
logs everyone out, and no secret is needed to sign anything. The token itself never
travels again after the login form: not in a cookie, not in a URL.
"""

from __future__ import annotations

import hmac
import secrets
import time
from dataclasses import dataclass

COOKIE = "escalation_console"
# A session outlives a working day but not a forgotten browser: 12 hours, then log in again.
SESSION_SECONDS = 12 * 3600
# Sessions held at once; the oldest is dropped beyond it (a login loop cannot fill memory).
SESSIONS_MAX = 256
RESPONDER = "console:operator"


@dataclass(frozen=True)
class Session:
    """One logged-in browser."""

    session_id: str
    csrf: str
    started: float


class Sessions:
    """The operator token and the sessions it opened."""

    def __init__(self, operator_token: str, agent_token: str | None) -> None:
        self._operator = operator_token.encode()
        self._agent = agent_token.encode() if agent_token else None
        self._sessions: dict[str, Session] = {}

    def is_agent_token(self, token: str) -> bool:
        """The agent's token (refused with its own message)."""
        return self._agent is not None and hmac.compare_digest(self._agent, token.encode())

    def login(self, token: str) -> Session | None:
        """A new session for the operator token, else None (compared in constant time)."""
        if not hmac.compare_digest(self._operator, token.encode()):
            return None
        while len(self._sessions) >= SESSIONS_MAX:
            del self._sessions[next(iter(self._sessions))]
        session = Session(secrets.token_urlsafe(32), secrets.token_urlsafe(32), time.monotonic())
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
