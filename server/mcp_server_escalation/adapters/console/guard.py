"""The console's guard: the same Host/Origin allow-list as ``/mcp`` on every request, and
the security headers on every answer (a refusal is a page too)."""

from __future__ import annotations

from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
        "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",  # "no-referrer" makes a browser send "Origin: null"
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}


class Guard:
    """Host and Origin on every request, the security headers on every answer."""

    def __init__(self, app: Starlette, security: TransportSecuritySettings) -> None:
        self.app = app
        self.check = TransportSecurityMiddleware(security)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse a foreign Host (421) or Origin (403); a POST without an Origin too (403)."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: dict[str, object]) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))  # type: ignore[call-overload]
                headers.extend((k.lower().encode(), v.encode()) for k, v in HEADERS.items())
                message["headers"] = headers
            await send(message)

        request = Request(scope)
        refused = await self.check.validate_request(request, is_post=False)
        if refused is None and request.method == "POST" and not request.headers.get("origin"):
            refused = Response("A POST needs an Origin header", status_code=403)
        # A refusal is a page too (a browser shows its text): it gets the same headers.
        answer = self.app if refused is None else refused
        await answer(scope, receive, with_headers)  # type: ignore[arg-type]
