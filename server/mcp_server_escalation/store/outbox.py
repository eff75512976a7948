"""The notification outbox (migration 4): announcements and their delivery per notifier.

``notification_outbox`` holds one row per announcement: ``created`` is written by a trigger
in the very transaction that creates the escalation (a committed escalation always has its
announcement, whichever process or code path created it), ``renotify`` by the notifier
service. ``notification_deliveries`` holds, per announcement and configured notifier, the
attempts, the next attempt time, the lease of the process sending it and the outcome.

Only the newest announcement of a still-pending escalation is ever sent: an answered
escalation needs no operator any more, and a re-notification supersedes an older
announcement that is still being retried.
"""

from __future__ import annotations

import json
from collections.abc import Collection

from ..models.reports import Delivery, NotifierStats
from .sql import Conn, Row, is_postgres, skip_locked

_DELIVERY_COLUMNS = (
    "o.outbox_id, o.escalation_id, o.event, d.notifier, d.attempts, d.next_attempt_at,"
    " d.lease_until, d.delivered_at, d.last_error"
)


def _delivery(row: Row, notifier: str | None = None) -> Delivery:
    return Delivery(
        outbox_id=row["outbox_id"],
        escalation_id=row["escalation_id"],
        event=row["event"],
        notifier=row["notifier"] or notifier or "",
        attempts=row["attempts"] or 0,
        next_attempt_at=row["next_attempt_at"],
        lease_until=row["lease_until"],
        delivered_at=row["delivered_at"],
        last_error=row["last_error"],
    )


def current(conn: Conn, notifier: str) -> list[Delivery]:
    """For every pending escalation, its newest announcement and its state for ``notifier``.

    An announcement this notifier never tried comes back with ``attempts == 0`` and no
    times. Oldest first, so a backlog goes out in creation order. Read in a write (to claim
    them), announcements another server is claiming at that moment are left to it.
    """
    rows = conn.execute(
        f"SELECT {_DELIVERY_COLUMNS} FROM escalations e"  # noqa: S608 (constant column list)
        " JOIN notification_outbox o ON o.outbox_id = ("
        "   SELECT MAX(outbox_id) FROM notification_outbox WHERE escalation_id = e.escalation_id)"
        " LEFT JOIN notification_deliveries d ON d.outbox_id = o.outbox_id AND d.notifier = ?"
        f" WHERE e.status = 'pending' ORDER BY o.outbox_id{skip_locked(conn, 'o')}",
        (notifier,),
    ).fetchall()
    return [_delivery(row, notifier) for row in rows]


def claim(conn: Conn, delivery: Delivery, notifier: str, *, now: str, lease_until: str) -> bool:
    """Count an attempt and hold the delivery until ``lease_until`` (this process sends it),
    unless another process claimed it since it was read: True when this one did.

    The claim is a compare-and-set on the attempts read: of two servers that read the same
    due announcement, the second finds the count moved on and leaves it to the first.
    """
    claimed = conn.execute(
        "INSERT INTO notification_deliveries"
        " (outbox_id, notifier, attempts, next_attempt_at, lease_until, updated_at)"
        " VALUES (?, ?, 1, ?, ?, ?)"
        " ON CONFLICT (outbox_id, notifier) DO UPDATE SET attempts = notification_deliveries.attempts + 1,"
        " lease_until = excluded.lease_until, updated_at = excluded.updated_at"
        " WHERE notification_deliveries.attempts = ? AND notification_deliveries.delivered_at IS NULL"
        " RETURNING attempts",
        (delivery.outbox_id, notifier, now, lease_until, now, delivery.attempts),
    ).fetchone()
    return claimed is not None


def mark_delivered(conn: Conn, outbox_id: int, notifier: str, now: str) -> None:
    """The notifier accepted the announcement."""
    conn.execute(
        "UPDATE notification_deliveries SET delivered_at = ?, lease_until = NULL, updated_at = ?"
        " WHERE outbox_id = ? AND notifier = ?",
        (now, now, outbox_id, notifier),
    )


def mark_failed(
    conn: Conn, outbox_id: int, notifier: str, *, error: str, next_attempt_at: str, now: str
) -> None:
    """The attempt failed: keep the error, try again at ``next_attempt_at``."""
    conn.execute(
        "UPDATE notification_deliveries SET last_error = ?, next_attempt_at = ?,"
        " lease_until = NULL, updated_at = ? WHERE outbox_id = ? AND notifier = ?",
        (error, next_attempt_at, now, outbox_id, notifier),
    )


def release(conn: Conn, outbox_id: int, notifier: str, now: str) -> None:
    """An attempt this process could not finish (it is shutting down): due again at once."""
    conn.execute(
        "UPDATE notification_deliveries SET lease_until = NULL, next_attempt_at = ?,"
        " updated_at = ? WHERE outbox_id = ? AND notifier = ? AND delivered_at IS NULL",
        (now, now, outbox_id, notifier),
    )


def newest_announcements(conn: Conn) -> list[tuple[int, str]]:
    """(escalation_id, time of its newest announcement) for every pending escalation."""
    rows = conn.execute(
        "SELECT e.escalation_id, MAX(o.created_at) FROM escalations e"
        " JOIN notification_outbox o ON o.escalation_id = e.escalation_id"
        " WHERE e.status = 'pending' GROUP BY e.escalation_id ORDER BY e.escalation_id"
    ).fetchall()
    return [(int(row[0]), str(row[1])) for row in rows]


def announce(conn: Conn, escalation_id: int, event: str, now: str) -> int:
    """A new announcement of the escalation; returns its id."""
    cur = conn.execute(
        "INSERT INTO notification_outbox (escalation_id, event, created_at) VALUES (?, ?, ?)"
        " RETURNING outbox_id",
        (escalation_id, event, now),
    )
    return int(cur.fetchone()[0])


def deliveries(conn: Conn, escalation_id: int) -> list[Delivery]:
    """Every delivery attempt record of the escalation's announcements, oldest first."""
    rows = conn.execute(
        f"SELECT {_DELIVERY_COLUMNS} FROM notification_outbox o"  # noqa: S608 (constant column list)
        " JOIN notification_deliveries d ON d.outbox_id = o.outbox_id"
        " WHERE o.escalation_id = ? ORDER BY o.outbox_id, d.notifier",
        (escalation_id,),
    ).fetchall()
    return [_delivery(row) for row in rows]


def announcements(conn: Conn, escalation_id: int) -> list[tuple[int, str, str]]:
    """(outbox_id, event, created_at) of every announcement of the escalation."""
    rows = conn.execute(
        "SELECT outbox_id, event, created_at FROM notification_outbox"
        " WHERE escalation_id = ? ORDER BY outbox_id",
        (escalation_id,),
    ).fetchall()
    return [(int(row[0]), str(row[1]), str(row[2])) for row in rows]


# The tasks a scoped token's stats count, a JSON list of ids as each backend reads it
# (SQLite, PostgreSQL): one parameter, however many tasks the scope admits.
_TASKS_IN = (
    " JOIN notification_outbox o ON o.outbox_id = d.outbox_id"
    " JOIN escalations e ON e.escalation_id = o.escalation_id"
    " WHERE e.task_id IN (SELECT value FROM json_each(?))",
    " JOIN notification_outbox o ON o.outbox_id = d.outbox_id"
    " JOIN escalations e ON e.escalation_id = o.escalation_id"
    " WHERE e.task_id IN (SELECT jsonb_array_elements_text(CAST(? AS jsonb)))",
)


def notifier_stats(conn: Conn, tasks: Collection[str] | None = None) -> list[NotifierStats]:
    """Per notifier: delivered and waiting announcements, failed attempts, the latest error;
    of the escalations of ``tasks`` only (a scoped token's stats; None: every task's). The
    sums are the database's either way: one row per notifier, however many tasks."""
    kept, params = ("", ()) if tasks is None else (_TASKS_IN[is_postgres(conn)], (json.dumps(sorted(tasks)),))
    rows = conn.execute(
        "WITH kept AS (SELECT d.notifier, d.delivered_at, d.attempts, d.last_error, d.updated_at"  # noqa: S608 (constants)
        f" FROM notification_deliveries d{kept})"
        " SELECT notifier, COUNT(delivered_at) AS delivered,"
        " COUNT(*) - COUNT(delivered_at) AS waiting,"
        " SUM(attempts) - COUNT(delivered_at) AS failed_attempts,"
        " (SELECT x.last_error FROM kept x WHERE x.notifier = k.notifier"
        "   AND x.last_error IS NOT NULL ORDER BY x.updated_at DESC LIMIT 1) AS last_error"
        " FROM kept k GROUP BY notifier ORDER BY notifier",
        params,
    ).fetchall()
    return [
        NotifierStats(
            notifier=row["notifier"],
            delivered=int(row["delivered"] or 0),
            waiting=int(row["waiting"] or 0),
            failed_attempts=int(row["failed_attempts"] or 0),
            last_error=row["last_error"],
        )
        for row in rows
    ]
