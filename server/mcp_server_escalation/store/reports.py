"""Read-only queries behind ``stats`` and ``db backup``."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ..errors import StoreError
from ..locations import is_database_url
from ..models.reports import BackupReport
from .db import BUSY_TIMEOUT_MS
from .sql import Conn

# (type, status, created_at, responded_at, response_type) per escalation.
EscalationTimes = tuple[str, str, str, str | None, str | None]


def escalation_times(conn: Conn) -> list[tuple[str, str, EscalationTimes]]:
    """Type, status, creation and response times of every escalation, oldest first, each
    with its task and the task's project: what a scoped token's stats keep only the rows of
    its scope from (the check is the scope's own, as for the lists)."""
    rows = conn.execute(
        "SELECT e.task_id, t.project, e.type, e.status, e.created_at, e.responded_at, e.response_type"
        " FROM escalations e JOIN tasks t ON t.task_id = e.task_id ORDER BY e.escalation_id"
    ).fetchall()
    return [(row[0], row[1], (row[2], row[3], row[4], row[5], row[6])) for row in rows]


def failure_records(conn: Conn) -> int:
    """How many failure records the store holds."""
    return int(conn.execute("SELECT COUNT(*) FROM failures").fetchone()[0])


def store_counts(conn: Conn) -> tuple[int, int, int]:
    """The store's schema version, escalations and tasks (what a backup reports)."""
    version = conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").fetchone()[0]
    escalations = conn.execute("SELECT COUNT(*) FROM escalations").fetchone()[0]
    tasks = conn.execute("SELECT COUNT(*) FROM tasks").fetchone()[0]
    return int(version), int(escalations), int(tasks)


def partial_path(target: Path) -> Path:
    """Where a backup to ``target`` is written before it is renamed into place."""
    return target.with_name(f".{target.name}.partial")


def backup(source: str, target: Path) -> BackupReport:
    """Copy the live store to ``target``: a SQLite file with SQLite's online backup API, a
    PostgreSQL database with ``pg_dump`` (``postgres/dump.py``).

    Blocking: run it in a worker thread. It opens connections of its own (never the
    process's shared one), copies every page in one step, which reads one consistent
    snapshot while writers in other processes carry on (WAL), writes to a temporary file
    next to ``target`` and renames it into place only once the copy has passed
    ``PRAGMA integrity_check``, so a failed backup never leaves a half-written file.
    """
    partial = partial_path(target)
    if is_database_url(source):
        from .postgres import dump  # noqa: PLC0415 (psycopg only on that backend)

        return dump.backup(source, target, partial)
    try:
        return _backup(source, target, partial)
    except (sqlite3.Error, OSError) as exc:
        partial.unlink(missing_ok=True)
        raise StoreError(f"backup of {source} to {target} failed: {exc}") from exc


def _backup(source: str, target: Path, partial: Path) -> BackupReport:
    partial.unlink(missing_ok=True)
    src = sqlite3.connect(source, timeout=BUSY_TIMEOUT_MS / 1000)
    try:
        dst = sqlite3.connect(partial)
        try:
            src.backup(dst)
            # The copy is a standalone file: no WAL to carry along.
            dst.execute("PRAGMA journal_mode = DELETE")
            integrity = str(dst.execute("PRAGMA integrity_check").fetchone()[0])
            version, escalations, tasks = store_counts(dst)
        finally:
            dst.close()
    finally:
        src.close()
    if integrity != "ok":
        raise sqlite3.DatabaseError(f"the copy failed its integrity check: {integrity}")
    partial.replace(target)
    return BackupReport(
        source=source,
        destination=str(target),
        bytes=target.stat().st_size,
        schema_version=version,
        escalations=escalations,
        tasks=tasks,
        integrity=integrity,
    )
