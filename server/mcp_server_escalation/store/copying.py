"""``db copy``: every row of one store into an empty store of the other backend (or the same).

The rows are read in one transaction of the source (one consistent state) and written in
one transaction of the target, table by table in the order their references need. What
the target's own triggers add while rows arrive (the change feed and the outbox of each
escalation, the retry entry of each rejected attempt) is removed before those tables are
copied, so the target holds exactly the source's rows, with their ids. Derived data is the
target's own: SQLite's search index fills from its triggers, PostgreSQL's from
``reindex_search``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import StoreError
from ..rules.reading.fingerprint import message_key
from .sql import Conn, is_postgres

# (table, its key: the copy's order), in an order where every reference points back.
TABLES = (
    ("tasks", "task_id"),
    ("task_assignments", "task_id, generation"),
    ("modified_files", "task_id, generation, path"),
    ("actions", "action_id"),
    ("failures", "seq"),
    ("failure_occurrences", "occurrence_id"),
    ("failure_revisions", "revision_id"),
    ("attempts", "attempt_id"),
    ("retry_entries", "entry_id"),
    ("escalation_feedback", "feedback_id"),
    ("review_findings", "finding_id"),
    ("progress_reports", "report_id"),
    ("escalations", "escalation_id"),
    ("told_at_firing", "escalation_id"),
    ("verdicts", "escalation_id"),
    ("escalation_waits", "wait_id"),
    ("escalation_changes", "change_id"),
    ("notification_outbox", "outbox_id"),
    ("notification_deliveries", "outbox_id, notifier"),
    ("hook_events", "event_id"),
)
# Rows the target's triggers write as the rows of the first table arrive: the copy brings
# the source's own instead.
_TRIGGERED = {"escalations": ("escalation_changes", "notification_outbox"), "attempts": ("retry_entries",)}
_BATCH = 1000


@dataclass(frozen=True)
class Rows:
    """One table's rows as read from the source."""

    columns: tuple[str, ...]
    values: list[tuple[Any, ...]]


Snapshot = dict[str, Rows]


def columns(conn: Conn, table: str) -> tuple[str, ...]:
    """The table's columns, in order."""
    cursor = conn.execute(f"SELECT * FROM {table} LIMIT 0")  # noqa: S608 (table from TABLES)
    return tuple(str(column[0]) for column in cursor.description or ())


def read_all(conn: Conn) -> Snapshot:
    """Every row of every table (in a read transaction of the source)."""
    snapshot: Snapshot = {}
    for table, key in TABLES:
        cursor = conn.execute(f"SELECT * FROM {table} ORDER BY {key}")  # noqa: S608 (constants)
        names = tuple(str(column[0]) for column in cursor.description or ())
        snapshot[table] = Rows(names, [tuple(row) for row in cursor.fetchall()])
    return snapshot


def held_rows(conn: Conn) -> int:
    """How many rows the store's tables hold (a copy goes only into an empty store)."""
    return sum(int(conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]) for t, _ in TABLES)  # noqa: S608


def write_all(conn: Conn, snapshot: Snapshot, reindex: Callable[[Conn], None] | None) -> dict[str, int]:
    """Insert the snapshot (in a write transaction of the empty target); the rows each table
    holds afterwards."""
    for table, _ in TABLES:
        _insert(conn, table, snapshot[table], columns(conn, table))
        for made in _TRIGGERED.get(table, ()):
            conn.execute(f"DELETE FROM {made}")  # noqa: S608 (constant)
    _link_superseded(conn, snapshot["failures"])
    if is_postgres(conn):
        _continue_identities(conn)
    if reindex is not None:
        reindex(conn)
    held = {t: int(conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]) for t, _ in TABLES}  # noqa: S608
    wrong = [
        f"{t}: {held[t]} of {len(snapshot[t].values)}"
        for t, _ in TABLES
        if held[t] != len(snapshot[t].values)
    ]
    if wrong:
        # Raised inside the transaction: the target is left as empty as it was.
        raise StoreError(f"db copy: the target's counts differ from the source's ({'; '.join(wrong)})")
    return held


def _insert(conn: Conn, table: str, rows: Rows, target_columns: tuple[str, ...]) -> None:
    # Columns both stores have: a backend's own (PostgreSQL's search column) is the target's.
    kept = [i for i, name in enumerate(rows.columns) if name in target_columns]
    names = [rows.columns[i] for i in kept]
    values = [tuple(row[i] for i in kept) for row in rows.values]
    if table == "failures":
        values = _failures_unlinked(names, values)
    marks = ", ".join("?" * len(names))
    sql = f"INSERT INTO {table} ({', '.join(names)}) VALUES ({marks})"  # noqa: S608 (names from the schema)
    for start in range(0, len(values), _BATCH):
        conn.executemany(sql, values[start : start + _BATCH])


def _failures_unlinked(names: list[str], values: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Failure rows with no ``superseded_by`` yet (it may point forward: linked afterwards),
    and a message key on every one (a store may hold records written before it had one)."""
    superseded, key, message = (
        names.index("superseded_by"),
        names.index("message_key"),
        names.index("message"),
    )
    unlinked = []
    for row in values:
        fixed = list(row)
        fixed[superseded] = None
        if fixed[key] is None:
            fixed[key] = message_key(fixed[message])
        unlinked.append(tuple(fixed))
    return unlinked


def _link_superseded(conn: Conn, rows: Rows) -> None:
    seq, superseded = rows.columns.index("seq"), rows.columns.index("superseded_by")
    links = [(row[superseded], row[seq]) for row in rows.values if row[superseded] is not None]
    if links:
        conn.executemany("UPDATE failures SET superseded_by = ? WHERE seq = ?", links)


def _continue_identities(conn: Conn) -> None:
    """Every identity column's sequence goes on after the ids copied into it."""
    identities = conn.execute(
        "SELECT table_name, column_name FROM information_schema.columns"
        " WHERE table_schema = current_schema() AND is_identity = 'YES'"
    ).fetchall()
    for table, key in identities:
        conn.execute(
            f"SELECT setval(pg_get_serial_sequence(?, ?), COALESCE(MAX({key}), 0) + 1, false)"  # noqa: S608
            f" FROM {table}",
            (table, key),
        )
