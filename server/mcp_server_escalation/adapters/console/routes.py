"""The console's paths next to ``/mcp`` on one port (``serve --transport http``).

``adapters/composition/one_port.py`` sends these paths to the console, everything else to
the SDK's app (or the hook routes), which keeps its own bearer-token checks on ``/mcp``.
"""

from __future__ import annotations

CONSOLE_PATHS = frozenset({"/", "/login", "/logout", "/events", "/answered", "/stats"})
CONSOLE_PREFIXES = ("/escalations/", "/tasks/", "/failures/", "/static/")


def is_console_path(path: str) -> bool:
    """Is this path one of the console's (never ``/mcp`` or the SDK's other routes)?"""
    return path in CONSOLE_PATHS or path.startswith(CONSOLE_PREFIXES)
