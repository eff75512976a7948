"""Where a login lands: the console page the operator asked for before logging in.

An operator who opens an escalation's link (from a notifier, from an agent's URL
elicitation) while logged out is sent to the login with that page's path in ``next``, and
after the login the browser goes there instead of the queue. The path is followed only when
it is plainly one of this site's own: ``//evil.example``, ``/\\evil.example`` (browsers read
a backslash as a slash), ``https://evil.example`` or ``javascript:`` would make our login an
open redirect, a trusted link that ends on someone else's page. Anything else lands on the
queue. The login's token never travels in ``next``: it holds a path and its query, nothing more.
"""

from __future__ import annotations

from urllib.parse import unquote, urlencode, urlsplit

from starlette.requests import Request

QUEUE = "/"
LOGIN = "/login"
# A console path is short (an escalation's or a task's page and a few filters); a longer one
# did not come from the console.
NEXT_MAX_CHARS = 2048
# Paths a login must not land on: the login itself (a loop), the log-out, the event stream.
NOT_LANDINGS = frozenset({LOGIN, "/logout", "/events"})
# A percent-encoded path decoded this many times shows whatever it hides.
DECODE_ROUNDS = 4


def _hides_another_site(path: str) -> bool:
    """Does the path, decoded as often as a browser or a proxy might, start like an address
    of another site (``//host``, ``/\\host``) or hold a control character?"""
    for _ in range(DECODE_ROUNDS):
        if path[:2] in ("//", "/\\") or any(ord(c) < 0x20 or ord(c) == 0x7F for c in path):
            return True
        decoded = unquote(path)
        if decoded == path:
            return False
        path = decoded
    return True  # still decoding after that many rounds: nothing a console link looks like


def landing(requested: str) -> str:
    """The relative path a login goes to: ``requested`` when it is this site's own page, else the queue."""
    if not requested or len(requested) > NEXT_MAX_CHARS or not requested.startswith("/"):
        return QUEUE
    # Printable ASCII only: a browser sends a path percent-encoded, so a raw space, a control
    # character, a backslash or a non-ASCII letter means the value was made by hand.
    if any(not 0x21 <= ord(c) <= 0x7E or c == "\\" for c in requested):
        return QUEUE
    parts = urlsplit(requested)
    if parts.scheme or parts.netloc or _hides_another_site(requested):
        return QUEUE
    return QUEUE if parts.path in NOT_LANDINGS else requested


def login_to(path: str) -> str:
    """The login page, landing on ``path`` afterwards when it is one of this site's own pages."""
    requested = landing(path)
    return LOGIN if requested == QUEUE else f"{LOGIN}?{urlencode({'next': requested})}"


def login_location(request: Request) -> str:
    """The login page, carrying the page asked for as ``next`` when it is not the queue."""
    raw = request.scope.get("raw_path")
    path = raw.decode("latin-1") if isinstance(raw, bytes) else request.url.path
    query = request.url.query
    return login_to(f"{path}?{query}" if query else path)
