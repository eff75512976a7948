"""``console``: serve the operator console (adapters/console) on its own port.

It needs an operator's token, the shared ``ESCALATION_OPERATOR_TOKEN`` or a person's own in
the tokens file (``ESCALATION_TOKENS_FILE``), and refuses to start without one; agents'
tokens, when set, are known only to refuse them by name at the login.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from ..errors import ConfigError, StoreError
from ..process import server_ready
from ..settings import Settings
from .operator import missing_store
from .parsers import PORT_MAX, TRUSTED_PROXY_HELP, bounded
from .serve import forwarded_for, http_listening, run_until_stopped

if TYPE_CHECKING:
    import socket

    import uvicorn

# uvicorn waits for open responses on shutdown, and an SSE stream never ends by itself.
SHUTDOWN_SECONDS = 2
SECURE_COOKIE_HELP = (
    "mark the session cookie Secure, for a console reached over https through a TLS proxy "
    "(a browser then never sends it over plain http, so logging in over plain http stops "
    "working; default: off)"
)


def add_parser(sub: argparse._SubParsersAction, common: object) -> None:  # type: ignore[type-arg]
    """``console [--host 127.0.0.1] [--port 8766] [--allowed-host NAME] [--allowed-origin URL]
    [--secure-cookie] [--trusted-proxy ADDRESS]``."""
    console = sub.add_parser(
        "console",
        help="serve the operator console in a browser (needs an operator token)",
        description="Serve the operator console: see and answer escalations in a browser. "
        "Log in with the token in ESCALATION_OPERATOR_TOKEN, or with your own operator token "
        "from the tokens file named in ESCALATION_TOKENS_FILE.",
    )
    common(console)  # type: ignore[operator]
    console.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    console.add_argument(
        "--port", type=bounded(0, PORT_MAX), default=8766, help="port to listen on (default: 8766)"
    )
    console.add_argument(
        "--allowed-host",
        action="append",
        metavar="NAME[:PORT]",
        help="a Host name browsers use beyond loopback (repeatable; default: loopback names only)",
    )
    console.add_argument(
        "--allowed-origin",
        action="append",
        metavar="ORIGIN",
        help="an Origin allowed besides http://127.0.0.1, localhost and [::1] (repeatable; "
        "default: those alone)",
    )
    console.add_argument("--secure-cookie", action="store_true", help=SECURE_COOKIE_HELP)
    console.add_argument("--trusted-proxy", action="append", metavar="ADDRESS", help=TRUSTED_PROXY_HELP)


def say_where(server: uvicorn.Server) -> None:
    """The address to open, once ``server`` listens (with ``--port 0`` only the bound socket
    knows the port), on stdout: the line an operator copies into a browser."""
    host, port = server.servers[0].sockets[0].getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    sys.stdout.write(f"Console: http://{shown}:{port}/ (log in with an operator token; Ctrl-C stops it)\n")
    sys.stdout.flush()


def _announcing(config: uvicorn.Config) -> uvicorn.Server:
    import uvicorn  # noqa: PLC0415 (the operator's other commands do not load the server)

    class Console(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            if self.started:
                say_where(self)

    return Console(config)


def run(args: argparse.Namespace) -> int:
    """Serve the console until stopped."""
    server = console_server(args)
    server_ready()
    return run_until_stopped(server)


def console_server(args: argparse.Namespace) -> uvicorn.Server:
    """What ``console`` runs, ready to run in this thread or another; the refusals (no
    operator token, no store, a taken port) are raised here, before anything listens."""
    import uvicorn  # noqa: PLC0415 (the operator's other commands do not load the server)

    from ..adapters.console.app import build_console  # noqa: PLC0415
    from ..adapters.console.sessions import Sessions  # noqa: PLC0415
    from ..adapters.http.auth import OPERATOR_TOKEN_ENV, load_tokens  # noqa: PLC0415
    from ..adapters.http.connections import guarded_options  # noqa: PLC0415
    from ..adapters.http.token_file import TOKENS_FILE_ENV  # noqa: PLC0415

    needed = (
        f"the console opens only with an operator's token: set {OPERATOR_TOKEN_ENV} "
        f"(make one with: openssl rand -hex 16), or give operators their own tokens in the "
        f"tokens file named in {TOKENS_FILE_ENV}"
    )
    # The same checks as HTTP (long enough, none held twice), in the console's words when
    # there is no token at all: the console serves operators, not agents.
    tokens = load_tokens(none_given=needed)
    if not tokens.has_role("operator"):
        raise ConfigError(needed)
    settings = Settings.from_sources(db=args.db, config=args.config, prompts=args.prompts, role="operator")
    problem = missing_store(settings.db_path, args.db)
    if problem:
        raise StoreError(problem)
    listen, security = http_listening(args)
    app = build_console(settings, Sessions(tokens), security, secure_cookie=args.secure_cookie)
    config = uvicorn.Config(
        app,
        host=listen.host,
        port=listen.port,
        log_level="warning",
        timeout_graceful_shutdown=SHUTDOWN_SECONDS,
        **forwarded_for(args.trusted_proxy),
        **guarded_options(),  # connections capped, requests timed (adapters/http/connections.py)
    )
    return _announcing(config)
