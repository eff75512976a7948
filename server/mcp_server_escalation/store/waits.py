"""Waits run as MCP tasks (migrations 16 and 19): one row per task, kept for
``WAIT_KEPT_SECONDS``, at most ``WAITS_PER_ESCALATION_MAX`` per escalation (migration 18
finds them)."""

from __future__ import annotations

import json
from typing import Any

from ..models.waits import Wait
from .sql import Conn, Row


def insert(conn: Conn, wait: Wait) -> None:
    """A new wait, working."""
    conn.execute(
        "INSERT INTO escalation_waits (wait_id, escalation_id, owner, asking, status, result_json,"
        " created_at, updated_at, ends_at, known_revision) VALUES (?, ?, ?, ?, 'working', NULL, ?, ?, ?, ?)",
        (
            wait.wait_id,
            wait.escalation_id,
            wait.owner,
            wait.asking,
            wait.created_at,
            wait.updated_at,
            wait.ends_at,
            wait.known_revision,
        ),
    )


def get(conn: Conn, wait_id: str) -> Wait | None:
    row = conn.execute(
        "SELECT wait_id, escalation_id, owner, asking, status, result_json, created_at, updated_at,"
        " ends_at, known_revision FROM escalation_waits WHERE wait_id = ?",
        (wait_id,),
    ).fetchone()
    return None if row is None else _wait(row)


def stop_asking(conn: Conn, wait_id: str, now: str) -> None:
    conn.execute(
        "UPDATE escalation_waits SET asking = 'no', updated_at = ? WHERE wait_id = ?", (now, wait_id)
    )


def complete(conn: Conn, wait_id: str, result: dict[str, Any], now: str) -> None:
    """The wait's result, once: a wait already ended keeps what it had."""
    conn.execute(
        "UPDATE escalation_waits SET status = 'completed', result_json = ?, updated_at = ?"
        " WHERE wait_id = ? AND status = 'working'",
        (json.dumps(result, ensure_ascii=False, separators=(",", ":")), now, wait_id),
    )


def cancel(conn: Conn, wait_id: str, now: str) -> None:
    conn.execute(
        "UPDATE escalation_waits SET status = 'cancelled', updated_at = ?"
        " WHERE wait_id = ? AND status = 'working'",
        (now, wait_id),
    )


def forget_before(conn: Conn, cutoff: str) -> None:
    """Waits created before ``cutoff`` are gone: the table holds a bounded window."""
    conn.execute("DELETE FROM escalation_waits WHERE created_at < ?", (cutoff,))


def keep_newest(conn: Conn, escalation_id: int, kept: int) -> None:
    """Only the escalation's ``kept`` newest waits stay (ties by id): the table holds a bounded
    number per escalation, however many waits a client starts on one."""
    conn.execute(
        "DELETE FROM escalation_waits WHERE escalation_id = ? AND wait_id NOT IN ("
        "SELECT wait_id FROM escalation_waits WHERE escalation_id = ?"
        " ORDER BY created_at DESC, wait_id DESC LIMIT ?)",
        (escalation_id, escalation_id, kept),
    )


def _wait(row: Row) -> Wait:
    return Wait(
        wait_id=row[0],
        escalation_id=row[1],
        owner=row[2],
        asking=row[3],
        status=row[4],
        result=None if row[5] is None else json.loads(row[5]),
        created_at=row[6],
        updated_at=row[7],
        ends_at=row[8],
        known_revision=row[9],
    )
