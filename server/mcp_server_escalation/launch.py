"""The console script's first stop: a hook run goes to a running server when one listens.

Every hook event starts a new process. Before the command line parser and the services are
even imported, a ``hook claude-code|cursor|codex`` run offers itself to the relay of its store
(``hooks/relay.py``, standard library only); everything else, and a hook run no server
takes, goes on to ``cli.main``.
"""

from __future__ import annotations

import sys

from .process import claim  # the standard library's gc alone: nothing a hook run waits for


def script() -> int:
    """The console script ``mcp-server-escalation``: ``main`` in a process of its own."""
    claim()
    return main()


def main() -> int:
    """Entry point of ``mcp-server-escalation``."""
    if "hook" in sys.argv[1:]:
        from .hooks.relay import try_relay  # noqa: PLC0415

        code = try_relay(sys.argv[1:])
        if code is not None:
            return code
    from .cli import main as cli_main  # noqa: PLC0415

    return cli_main()
