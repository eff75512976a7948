"""``db backup`` of a PostgreSQL store: ``pg_dump``'s custom format, checked by ``pg_restore``.

``pg_dump`` reads one consistent snapshot while servers go on writing, as SQLite's backup
API does for a file; the copy is written beside the target and renamed into place only
once ``pg_restore --list`` has read it whole. Restoring is ``pg_restore -d URL FILE`` into
an empty database (docs/postgresql.md).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import psycopg

from ...errors import StoreError
from ...models.reports import BackupReport
from .connection import PgConn
from .database import shown

_TIMEOUT_SECONDS = 3600


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise StoreError(
            f"db backup of a PostgreSQL store runs {name}, which is not installed here"
            " (Debian: apt install postgresql-client); or back the database up as its DBA does"
        )
    return found


def backup(url: str, target: Path, partial: Path) -> BackupReport:
    """Dump the database at ``url`` to ``target`` (through ``partial``)."""
    partial.unlink(missing_ok=True)
    try:
        _run([_tool("pg_dump"), "--format=custom", f"--file={partial}", f"--dbname={url}"])
        _run([_tool("pg_restore"), "--list", str(partial)])
        version, escalations, tasks = _counts(url)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    partial.replace(target)
    return BackupReport(
        source=shown(url),
        destination=str(target),
        bytes=target.stat().st_size,
        schema_version=version,
        escalations=escalations,
        tasks=tasks,
        integrity="ok",
    )


def _run(command: list[str]) -> None:
    # A tool found on PATH, its arguments a list: no shell reads them.
    done = subprocess.run(command, capture_output=True, text=True, timeout=_TIMEOUT_SECONDS, check=False)  # noqa: S603
    if done.returncode != 0:
        name = Path(command[0]).name
        raise StoreError(f"db backup: {name} failed: {done.stderr.strip() or done.returncode}")


def _counts(url: str) -> tuple[int, int, int]:
    from ..reports import store_counts  # noqa: PLC0415 (reports imports this module when asked)

    conn = PgConn(psycopg.connect(url, autocommit=True), shown(url))
    try:
        return store_counts(conn)
    finally:
        conn.close()
