"""Which store a process uses, with the standard library only.

Shared by ``settings`` and by the hook relay's client (``hooks/relay.py``), which must find
the store's socket before pydantic or anything else is imported.
"""

from __future__ import annotations

import os
from collections.abc import Mapping


def default_store(env: Mapping[str, str]) -> str:
    """``${XDG_DATA_HOME:-~/.local/share}/mcp-server-escalation/escalations.db``."""
    home = env.get("HOME") or os.path.expanduser("~")
    base = env.get("XDG_DATA_HOME") or os.path.join(home, ".local", "share")
    return os.path.join(base, "mcp-server-escalation", "escalations.db")


def chosen_store(flag: str | None, env: Mapping[str, str]) -> str:
    """The store as given: ``--db``, else ``ESCALATION_DB``, else the per-user default."""
    return flag or env.get("ESCALATION_DB") or default_store(env)
