"""``serve``: run the MCP server on stdio or streamable HTTP."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import errno
import logging
import socket
from typing import TYPE_CHECKING, Any

import anyio

if TYPE_CHECKING:
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    from ..adapters.console.guard import Guard
    from ..adapters.http.auth import TokenBook
    from ..adapters.http.serving import Listen

from ..errors import ConfigError
from ..process import server_ready
from ..settings import Settings

log = logging.getLogger(__name__)
# uvicorn waits for open responses on shutdown, and the console's SSE streams never end.
SHUTDOWN_SECONDS = 2


def console_beside_mcp(
    settings: Settings, tokens: TokenBook, security: TransportSecuritySettings, *, secure_cookie: bool = False
) -> Guard | None:
    """The console for ``serve --transport http``, when an operator's token is configured (else
    None: without one nobody could log in, so nothing is mounted)."""
    from ..adapters.console.app import build_console  # noqa: PLC0415
    from ..adapters.console.sessions import Sessions  # noqa: PLC0415

    if not tokens.has_role("operator"):
        log.info("no console next to /mcp: no operator token (shared or in the tokens file)")
        return None
    return build_console(settings, Sessions(tokens), security, secure_cookie=secure_cookie)


def forwarded_for(trusted_proxies: list[str] | None) -> dict[str, Any]:
    """uvicorn's options for X-Forwarded-For: believed from ``trusted_proxies`` alone. uvicorn
    believes it from 127.0.0.1 by default, so any local client could name the address the
    console's login limit counts (a guesser a new one at each try, or a victim's)."""
    trusted = list(trusted_proxies or ())
    return {"proxy_headers": bool(trusted), "forwarded_allow_ips": trusted or None}


def http_listening(args: argparse.Namespace) -> tuple[Listen, TransportSecuritySettings]:
    """Where an HTTP command listens (``--host``, ``--port``, ``--allowed-host``,
    ``--allowed-origin``) and the Host/Origin checks that go with it; a taken port is refused
    and an exposed address warned about before anything is opened."""
    from ..adapters.http.serving import Listen, transport_security, warn_about_exposure  # noqa: PLC0415

    listen = Listen(
        host=args.host,
        port=args.port,
        allowed_hosts=tuple(args.allowed_host or ()),
        allowed_origins=tuple(args.allowed_origin or ()),
    )
    refuse_a_taken_port(listen.host, listen.port)
    security = transport_security(listen)
    warn_about_exposure(listen, security)
    return listen, security


def refuse_a_taken_port(host: str, port: int) -> None:
    """A ``ConfigError`` naming the port when something listens there already.

    Left to uvicorn, it was an errno and an address tuple, logged after the store had been
    opened, and exit code 3. Bound the way uvicorn binds (``SO_REUSEADDR``), so a port that
    only lingers from a server just stopped is not refused."""
    if port == 0:  # any free port
        return
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                return  # an address this host lacks, a port it forbids: the server says it
            raise ConfigError(
                f"port {port} on {host} is taken: another process listens there (an earlier "
                "serve or console?). Stop it, or choose another port with --port."
            ) from None


def with_console_link(settings: Settings, host: str, port: int) -> Settings:
    """``settings`` whose URL elicitation points at the console mounted on this port, unless
    the config names the console's address itself (a proxy, another name for the host)."""
    if settings.elicitation.console_url:
        return settings
    shown = f"[{host}]" if ":" in host else host
    elicitation = settings.elicitation.model_copy(update={"console_url": f"http://{shown}:{port}"})
    return dataclasses.replace(settings, elicitation=elicitation)


def serve(args: argparse.Namespace) -> int:
    """Serve until the client disconnects (stdio) or the process is stopped (http)."""
    from ..adapters.composition.server import build_server  # noqa: PLC0415 (keeps the operator CLI free of the SDK)

    settings = serve_settings(args)
    if getattr(args, "transport", "stdio") == "http":
        return serve_http(args, settings)
    from ..adapters.stdio.transport import run_stdio  # noqa: PLC0415

    server = build_server(settings, hook_relay=True)
    server_ready()
    run_stdio(server)
    return 0


def serve_settings(args: argparse.Namespace) -> Settings:
    """The settings a ``serve`` command line gives, with the config and environment."""
    return Settings.from_sources(
        db=args.db, config=args.config, role=getattr(args, "role", "agent"), prompts=args.prompts
    )


def serve_http(args: argparse.Namespace, settings: Settings) -> int:
    """``serve --transport http`` until the process is stopped."""
    server = http_server(args, settings)
    # Opened once before uvicorn runs: a store that does not answer (a database down at
    # start) is then the one-line error of every command, not a traceback that uvicorn logs
    # from the apps' start-up, where each app opens the store again.
    anyio.run(store_opens, settings)
    server_ready()
    return run_until_stopped(server)


async def store_opens(settings: Settings) -> None:
    """The store opens (migrated, as the server will use it), or its ``StoreError`` is raised."""
    from ..services.runtime import open_runtime  # noqa: PLC0415

    async with open_runtime(settings):
        pass


def run_until_stopped(server: uvicorn.Server) -> int:
    """Run ``server`` as uvicorn's own runner does: Ctrl-C is a normal stop (exit 0; uvicorn
    raises the signal again once it has shut down), and a server that could not start exits 3."""
    with contextlib.suppress(KeyboardInterrupt):
        server.run()
    return 0 if server.started else 3


def http_server(args: argparse.Namespace, settings: Settings) -> uvicorn.Server:
    """What ``serve --transport http`` runs: ``/mcp``, the hook routes and (with the operator
    token) the console on one port, ready to run in this thread or another."""
    import uvicorn  # noqa: PLC0415

    from ..adapters.composition.one_port import one_port  # noqa: PLC0415
    from ..adapters.composition.server import build_server  # noqa: PLC0415
    from ..adapters.http.auth import StaticTokenVerifier, load_tokens  # noqa: PLC0415
    from ..adapters.http.connections import guarded_options  # noqa: PLC0415
    from ..adapters.http.hooks import build_hook_app  # noqa: PLC0415
    from ..adapters.http.serving import request_body_limit  # noqa: PLC0415

    # One book of tokens for /mcp, the hook routes and the console: a person's token works
    # (and names them) on each the same way.
    tokens = load_tokens()
    listen, security = http_listening(args)
    console = console_beside_mcp(settings, tokens, security, secure_cookie=args.secure_cookie)
    if console is not None:
        settings = with_console_link(settings, listen.host, listen.port)
    server = build_server(settings, http=True, tokens=tokens, hook_relay=True)
    body_limit = anyio.run(request_body_limit, server)
    mcp_app = server.streamable_http_app(
        transport_security=security, max_request_body_size=body_limit, host=listen.host
    )
    hooks = build_hook_app(settings, StaticTokenVerifier(tokens), security)
    if console is not None:
        log.info("the operator console is at http://%s:%d/", listen.host, listen.port)
    config = uvicorn.Config(
        one_port(mcp_app, hooks, console),
        host=listen.host,
        port=listen.port,
        log_level=server.settings.log_level.lower(),
        timeout_graceful_shutdown=SHUTDOWN_SECONDS,
        **forwarded_for(args.trusted_proxy),
        **guarded_options(),  # connections capped, requests timed (adapters/http/connections.py)
    )
    return uvicorn.Server(config)
