"""Everything a store holds, on either backend: what "nothing stored changed" compares."""

from __future__ import annotations

import sqlite3
from typing import Any

import psycopg

from mcp_server_escalation.locations import is_database_url
from mcp_server_escalation.store.copying import TABLES


def contents(db_path: str) -> list[Any]:
    """Every row of the store (SQLite: its SQL dump; PostgreSQL: each table's rows by key)."""
    if not is_database_url(db_path):
        conn = sqlite3.connect(db_path)
        try:
            return list(conn.iterdump())
        finally:
            conn.close()
    with psycopg.connect(db_path) as conn:
        return [
            (table, conn.execute(f"SELECT * FROM {table} ORDER BY {key}").fetchall())  # noqa: S608 (the schema's names)
            for table, key in TABLES
        ]
