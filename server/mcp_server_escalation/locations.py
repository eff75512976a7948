"""Which store and which config file a process uses, with the standard library only.

Shared by ``settings`` and by the hook relay's client (``hooks/relay.py``), which must find
the store's socket before pydantic or anything else is imported.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

FOLDER = "mcp-server-escalation"


def _home(env: Mapping[str, str]) -> str:
    return env.get("HOME") or os.path.expanduser("~")


def default_store(env: Mapping[str, str]) -> str:
    """``${XDG_DATA_HOME:-~/.local/share}/mcp-server-escalation/escalations.db``."""
    base = env.get("XDG_DATA_HOME") or os.path.join(_home(env), ".local", "share")
    return os.path.join(base, FOLDER, "escalations.db")


def chosen_store(flag: str | None, env: Mapping[str, str]) -> str:
    """The store as given: ``--db``, else ``ESCALATION_DB``, else the per-user default."""
    return flag or env.get("ESCALATION_DB") or default_store(env)


def store_origin(flag: str | None, env: Mapping[str, str]) -> str:
    """Where ``chosen_store`` took the store from: ``--db``, ``ESCALATION_DB`` or ``default``."""
    if flag:
        return "--db"
    return "ESCALATION_DB" if env.get("ESCALATION_DB") else "default"


def is_database_url(store: str) -> bool:
    """Is the store a PostgreSQL database's URL (rather than a SQLite file's path)?"""
    return store.startswith(("postgresql://", "postgres://"))


def default_config(env: Mapping[str, str]) -> str:
    """``${XDG_CONFIG_HOME:-~/.config}/mcp-server-escalation/config.toml``."""
    base = env.get("XDG_CONFIG_HOME") or os.path.join(_home(env), ".config")
    return os.path.join(base, FOLDER, "config.toml")
