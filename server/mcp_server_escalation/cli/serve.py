"""``serve``: run the MCP server on stdio or streamable HTTP."""

from __future__ import annotations

import argparse

from ..settings import Settings


def serve(args: argparse.Namespace) -> int:
    """Serve until the client disconnects (stdio) or the process is stopped (http)."""
    from ..adapters.app import build_server  # noqa: PLC0415 (keeps the operator CLI free of the SDK)

    settings = Settings.from_sources(
        db=args.db, config=args.config, role=getattr(args, "role", "agent"), prompts=args.prompts
    )
    if getattr(args, "transport", "stdio") == "http":
        server = build_server(settings, http=(args.host, args.port), hook_relay=True)
        server.run("streamable-http", host=args.host, port=args.port)
        return 0
    from ..adapters.stdio import run_stdio  # noqa: PLC0415

    run_stdio(build_server(settings, hook_relay=True))
    return 0
