"""``serve``: run the MCP server on stdio or streamable HTTP."""

from __future__ import annotations

import argparse

import anyio

from ..settings import Settings


def serve(args: argparse.Namespace) -> int:
    """Serve until the client disconnects (stdio) or the process is stopped (http)."""
    from ..adapters.app import build_server  # noqa: PLC0415 (keeps the operator CLI free of the SDK)

    settings = Settings.from_sources(
        db=args.db, config=args.config, role=getattr(args, "role", "agent"), prompts=args.prompts
    )
    if getattr(args, "transport", "stdio") == "http":
        from ..adapters.http_serving import (  # noqa: PLC0415
            Listen,
            request_body_limit,
            transport_security,
            warn_about_exposure,
        )

        listen = Listen(
            host=args.host,
            port=args.port,
            allowed_hosts=tuple(args.allowed_host or ()),
            allowed_origins=tuple(args.allowed_origin or ()),
        )
        server = build_server(settings, http=True, hook_relay=True)
        security = transport_security(listen)
        warn_about_exposure(listen, security)
        server.run(
            "streamable-http",
            host=listen.host,
            port=listen.port,
            transport_security=security,
            max_request_body_size=anyio.run(request_body_limit, server),
        )
        return 0
    from ..adapters.stdio import run_stdio  # noqa: PLC0415

    run_stdio(build_server(settings, hook_relay=True))
    return 0
