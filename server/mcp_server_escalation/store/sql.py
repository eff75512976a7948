"""What a repository needs to know of the backend it runs on.

The repositories take a connection (``Conn``) of either backend and write their SQL once,
in what SQLite and PostgreSQL both accept. The few statements that must differ ask
``is_postgres``; a read whose rows the transaction will then change adds ``for_update``,
which takes PostgreSQL's row locks (SQLite's write transaction already holds the whole
store).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any, TypeGuard

from .postgres.connection import PgConn
from .postgres.connection import Row as PgRow

# The handle repositories take; services pass it through without touching SQL.
Conn = sqlite3.Connection | PgConn
# A row read through it: by column name or position.
Row = sqlite3.Row | PgRow


def is_postgres(conn: Conn) -> TypeGuard[PgConn]:
    """Does ``conn`` speak PostgreSQL?"""
    return isinstance(conn, PgConn)


def is_sqlite(conn: Conn) -> TypeGuard[sqlite3.Connection]:
    """Is ``conn`` a SQLite file's (where the file's own checks apply)?"""
    return isinstance(conn, sqlite3.Connection)


def for_update(conn: Conn, *tables: str) -> str:
    """The row-lock clause for a read in a write transaction (nothing on SQLite or in reads)."""
    if isinstance(conn, PgConn) and conn.locks_rows:
        return " FOR UPDATE" + (f" OF {', '.join(tables)}" if tables else "")
    return ""


def lock(conn: Conn, select: str, params: Sequence[Any]) -> None:
    """Take the row locks of ``select`` for the rest of a write transaction, in a statement
    of their own (nothing on SQLite or in reads).

    At READ COMMITTED, a statement that waited for a row lock sees the locked row as the
    other transaction committed it, but everything else it reads (a subquery's count)
    as it was when the statement began, before that commit. So the lock is taken first, and
    the reads that follow, each a statement with a snapshot of its own, see the other
    transaction's work whole.
    """
    clause = for_update(conn)
    if clause:
        conn.execute(select + clause, params)


def skip_locked(conn: Conn, *tables: str) -> str:
    """The claim clause for a queue read in a write transaction: rows another server has
    locked (is claiming now) are passed over, not waited for (nothing on SQLite)."""
    lock = for_update(conn, *tables)
    return f"{lock} SKIP LOCKED" if lock else ""


def tuples(conn: Conn, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    """Every row of ``sql`` as a plain tuple: cheaper than named rows where hundreds are read."""
    if isinstance(conn, PgConn):
        return conn.tuples(sql, params)
    cursor = conn.cursor()
    cursor.row_factory = None
    return cursor.execute(sql, params).fetchall()
