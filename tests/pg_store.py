"""Stores on PostgreSQL for the behaviour suites that run on both backends.

A test's store must start empty, as a new SQLite file does. Creating and migrating a schema
per test costs ~150 ms; so each worker migrates one database once and every test then
empties its tables (``TRUNCATE ... RESTART IDENTITY``, ~30 ms), ids starting at 1 again as
in a new file. ``schema_migrations`` is kept: the store stays migrated.
"""

from __future__ import annotations

import psycopg
from psycopg import sql


def worker_database(server_url: str, worker: str) -> str:
    """The worker's own database on the server (created on first use), as a URL."""
    name = f"esc_{worker}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if not exists:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    base, _, _ = server_url.rpartition("/")
    return f"{base}/{name}"


def emptied(url: str) -> str:
    """The store at ``url`` with every table emptied (nothing there yet: left as is)."""
    with psycopg.connect(url, autocommit=True) as conn:
        tables = [
            row[0]
            for row in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
                " AND tablename != 'schema_migrations'"
            )
        ]
        if tables:
            names = sql.SQL(", ").join(sql.Identifier(t) for t in tables)
            conn.execute(sql.SQL("TRUNCATE {} RESTART IDENTITY CASCADE").format(names))
    return url
