"""One migrated PostgreSQL database that a worker's tests take in turn.

Copying the migrated template for every test costs ~120 ms (~250 ms while the other worker
runs) and was a third of the PostgreSQL half of the suite. Emptying the one database after a
test costs ~3 ms: every row goes, every sequence starts again, and the rows the migrations
wrote (the applied versions, the search totals) come back as the template holds them. A
test that leaves the database in a state a reset cannot undo (a session still connected, a
schema it changed) gets a fresh copy instead, so no test sees what an earlier one did.
"""

from __future__ import annotations

import time
from typing import Any

from psycopg import sql

import pg_local as pg

# Everything a test could change about the schema itself, as one text: relations and their
# columns, triggers and functions of the public schema.
SHAPE = """
SELECT md5(coalesce(string_agg(item, ',' ORDER BY item), '')) FROM (
    SELECT c.relname || ':' || c.relkind::text || ':'
        || coalesce(a.attname || ' ' || a.atttypid::text, '') AS item
    FROM pg_class c
    JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'public'
    LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
    UNION ALL
    SELECT 'trigger ' || tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
    JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'public' WHERE NOT t.tgisinternal
    UNION ALL
    SELECT 'function ' || p.proname FROM pg_proc p
    JOIN pg_namespace n ON n.oid = p.pronamespace AND n.nspname = 'public'
) AS shape
"""
OTHER_SESSIONS = """
SELECT count(*) FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'
"""
TABLES = "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename"
SEQUENCES = "SELECT sequencename FROM pg_sequences WHERE schemaname = 'public' ORDER BY sequencename"


class ReusedDatabase:
    """A copy of ``template`` on ``server``, emptied back to the template's rows between tests."""

    def __init__(self, server: pg.PgServer, template: str) -> None:
        self.server = server
        self.template = template
        self.name = server.create_database(template=template)
        # Held between tests: connecting costs as much as the emptying itself.
        self._conn = server.connect(self.name)
        self.shape = self._conn.execute(SHAPE).fetchone()
        self._emptying = self._emptying_script(self._conn)

    @property
    def url(self) -> str:
        return self.server.url(self.name)

    def reset(self) -> None:
        """Back to the template's contents, or a new copy when a test left more than rows."""
        if self._alone() and self._conn.execute(SHAPE).fetchone() == self.shape:
            with self._conn.transaction():
                self._conn.execute(self._emptying)
            return
        self._conn.close()
        self.server.drop_database(self.name)
        self.name = self.server.create_database(template=self.template)
        self._conn = self.server.connect(self.name)

    def _alone(self, wait_s: float = 0.5) -> bool:
        """No other session on the database, once the ones just closed have gone: a server
        ends a session's process shortly after its client hangs up, not at once."""
        deadline = time.monotonic() + wait_s
        while self._conn.execute(OTHER_SESSIONS).fetchone() != (0,):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.005)
        return True

    def close(self) -> None:
        self._conn.close()

    @staticmethod
    def _emptying_script(conn: Any) -> str:
        """One text that deletes every row, puts back the template's and restarts every
        sequence: one round trip instead of one a table."""
        # Foreign keys and the feed's triggers are triggers: a replica session skips them,
        # so the tables empty in any order and write no feed rows as they do.
        parts = [sql.SQL("SET LOCAL session_replication_role = replica")]
        for (table,) in conn.execute(TABLES).fetchall():
            name = sql.Identifier(table)
            parts.append(sql.SQL("DELETE FROM {}").format(name))
            for row in conn.execute(sql.SQL("SELECT * FROM {}").format(name)).fetchall():
                values = sql.SQL(", ").join(sql.Literal(value) for value in row)
                parts.append(sql.SQL("INSERT INTO {} VALUES ({})").format(name, values))
        # setval, not ALTER SEQUENCE RESTART: a restart gives the sequence a new file, as a
        # TRUNCATE gives a table (the 13 restarts were 95% of the emptying's ~10 ms).
        for (sequence,) in conn.execute(SEQUENCES).fetchall():
            parts.append(sql.SQL("SELECT setval({}, 1, false)").format(sql.Literal(sequence)))
        return sql.SQL("; ").join(parts).as_string(conn)
