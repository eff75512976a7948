"""Which backend holds the store: a SQLite file by default, PostgreSQL by URL.

Every process (the MCP server on either transport, the CLI, the console, hooks and their
relay) opens its store here, so ``--db postgresql://...`` (or ``ESCALATION_DB``) moves all
of them at once; anything else is a SQLite file's path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from ..errors import StoreError
from ..locations import is_database_url
from ..models.store_config import StoreConfig
from .db import BUSY_TIMEOUT_MS, Database

T = TypeVar("T")


class Store(Protocol):
    """What services use of a store, on either backend."""

    path: str
    # The longest one call waits for the store, in all: the bound of a call's deadline.
    call_seconds: float

    async def write(self, fn: Callable[[Any], T]) -> T: ...
    async def read(self, fn: Callable[[Any], T]) -> T: ...
    async def schema_version(self) -> int: ...
    async def migrate(self) -> list[int]: ...
    async def listen_for_changes(self, heard: Callable[[], None]) -> None: ...
    async def close(self) -> None: ...


async def open_store(
    location: str, *, create: bool = True, config: StoreConfig | None = None, bounded: bool = False
) -> Store:
    """The store at ``location``, migrated; ``create`` false refuses one nobody has set up.

    ``config`` bounds its waits and sizes its pools (the defaults without one). PostgreSQL's
    bounds always hold; a SQLite store waits for another process's lock up to
    ``operation_timeout_seconds`` when ``bounded`` (a hook run, whose host waits 15 s at
    most), else up to its busy timeout (30 s), once."""
    config = config or StoreConfig.model_construct()
    if not is_database_url(location):
        # Unbounded callers (a server's tool calls, the console, the CLI) wait for another
        # process's lock up to the busy timeout once, the bound the docs give a tool call:
        # then the call is told the store is unavailable and that nothing was recorded.
        wait = config.operation_timeout_seconds if bounded else BUSY_TIMEOUT_MS / 1000
        return await Database.open(location, create=create, wait_seconds=wait)
    try:
        from .postgres.database import PgDatabase  # noqa: PLC0415 (psycopg only when asked for)
    except ImportError as exc:
        raise StoreError(
            f"a PostgreSQL store needs the PostgreSQL driver ({exc.name} is not installed):"
            " pip install 'mcp-server-escalation[postgresql]'"
        ) from exc
    return await PgDatabase.open(location, create=create, config=config)
