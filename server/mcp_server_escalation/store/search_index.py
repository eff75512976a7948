"""The full-text index of failure records (``failures_fts``): derived data, checked and rebuilt.

The index holds nothing the ``failures`` table does not: it is kept in step by triggers and
can always be rebuilt from it. So a damaged index is never a reason to fail a tool call:
SQLite's connections (``db.SqliteConnections``) rebuild it and run the call again, and
``db check`` finds and repairs it on demand.

Which merges are safe: FTS5's ``'merge'`` command with a negative page count damaged the
index of a store growing record by record on SQLite 3.40 (Debian 12's) after ~1,076
records: every later write said "database disk image is malformed". Nothing here runs a
merge: FTS5's own automatic merging, which every insert runs, keeps a store grown record by
record to 9 segments at 100,000 records, and guidance on it was as fast as on an index
built in one piece (p50 0.48-0.54 ms in process; ``benchmarks/README.md``).
"""

from __future__ import annotations

import logging
import sqlite3
import time
from dataclasses import dataclass

log = logging.getLogger(__name__)

# The store's handle (``db.Conn``), named here without importing ``db``, which imports us.
Conn = sqlite3.Connection

# SQLite's primary result code for a damaged file or index (extended codes add high bits:
# SQLITE_CORRUPT_VTAB is what FTS5 answers for a damaged index).
SQLITE_CORRUPT = 11


def is_corruption(exc: sqlite3.Error) -> bool:
    """Is ``exc`` SQLite saying that a page or an index is damaged?"""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return (int(code) & 0xFF) == SQLITE_CORRUPT
    return "malformed" in str(exc) or "corrupt" in str(exc)


def damage(conn: Conn) -> str | None:
    """What is wrong with the index (checked against its records), or None when it is whole."""
    try:
        # rank 1: also compare the index with the records it is built from.
        conn.execute("INSERT INTO failures_fts (failures_fts, rank) VALUES ('integrity-check', 1)")
    except sqlite3.DatabaseError as exc:
        if is_corruption(exc):
            return str(exc)
        raise
    return None


def rebuild(conn: Conn) -> None:
    """Build the index anew from the failure records, however damaged it is.

    FTS5's own ``'rebuild'`` first opens the index, which fails when its structure record
    is unreadable ("vtable constructor failed", and DROP TABLE fails the same way). So its
    storage is first put back into the state of a new, empty index of this SQLite, taken
    from one made in memory, and the records are indexed into that.
    """
    conn.execute("DELETE FROM failures_fts_idx")
    conn.execute("DELETE FROM failures_fts_data")
    conn.executemany("INSERT INTO failures_fts_data (id, block) VALUES (?, ?)", _empty_index_rows())
    conn.execute("INSERT INTO failures_fts (failures_fts) VALUES ('rebuild')")


def _empty_index_rows() -> list[tuple[int, bytes]]:
    """The storage rows of a new FTS5 index (its averages and structure records)."""
    scratch = sqlite3.connect(":memory:")
    try:
        scratch.execute("CREATE VIRTUAL TABLE empty USING fts5(text)")
        return [(int(row[0]), bytes(row[1])) for row in scratch.execute("SELECT id, block FROM empty_data")]
    finally:
        scratch.close()


@dataclass(frozen=True)
class Repair:
    """What a repair found and did."""

    damage: str | None
    seconds: float


def repair_if_damaged(conn: Conn) -> Repair:
    """Rebuild the index when it is damaged (inside the caller's write transaction)."""
    start = time.perf_counter()
    found = damage(conn)
    if found is not None:
        rebuild(conn)
    return Repair(found, time.perf_counter() - start)


def file_problems(conn: Conn) -> list[str]:
    """``PRAGMA integrity_check`` of the whole file: empty when it answers 'ok'."""
    try:
        rows = [str(row[0]) for row in conn.execute("PRAGMA integrity_check")]
    except sqlite3.DatabaseError as exc:
        # A page so damaged that the check itself cannot read it.
        return [str(exc)]
    return [] if rows == ["ok"] else rows


def indexed_records(conn: Conn) -> int:
    """How many failure records the index is built from."""
    return int(conn.execute("SELECT count(*) FROM failures").fetchone()[0])
