"""PostgreSQL for the benchmarks: a throw-away server (``scripts/pg_local.py``, the one the
tests start) holding one new database, and what the server counted while the servers ran.

    with postgres_database(keep_log=workdir / "postgresql.log") as (url, server):
        ...  # start escalation servers with --db url
        figures = postgres_figures(server, url)
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

import pg_local  # found through the path entry above

if TYPE_CHECKING:
    from pg_local import PgServer

POSTGRES_SCHEMES = ("postgresql://", "postgres://")
BACKEND_MODULE = "mcp_server_escalation.store.postgres"


def backend_installed() -> bool:
    """Whether the installed server can open a ``postgresql://`` store."""
    try:
        return importlib.util.find_spec(BACKEND_MODULE) is not None
    except ModuleNotFoundError:
        return False


@contextmanager
def postgres_server(keep_log: Path | None = None) -> Iterator[PgServer]:
    """A new server, stopped on the way out (its log first copied to ``keep_log``)."""
    with pg_local.running() as server:
        try:
            yield server
        finally:
            if keep_log is not None and server.log.exists():
                shutil.copyfile(server.log, keep_log)


@contextmanager
def postgres_database(name: str = "bench", keep_log: Path | None = None) -> Iterator[tuple[str, PgServer]]:
    """A new server with one empty database: its URL and the server."""
    with postgres_server(keep_log) as server:
        server.create_database(name, template="template0")
        yield server.url(name), server


def postgres_figures(server: PgServer, url: str) -> dict[str, Any]:
    """The database's own counts: deadlocks, commits, rollbacks, size."""
    dbname = url.rsplit("/", 1)[1]
    with server.connect() as conn:
        row = conn.execute(
            "SELECT deadlocks, xact_commit, xact_rollback, pg_database_size(datname)"
            " FROM pg_stat_database WHERE datname = %s",
            (dbname,),
        ).fetchone()
        version = conn.execute("SHOW server_version").fetchone()
    if row is None or version is None:
        return {"database": dbname, "missing": True}
    deadlocks, commits, rollbacks, size = row
    return {
        "database": dbname,
        "server_version": version[0],
        "deadlocks": int(deadlocks),
        "commits": int(commits),
        "rollbacks": int(rollbacks),
        "size_bytes": int(size),
    }
