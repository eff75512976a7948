"""Candidate queries for guidance: exact fingerprint, lexical (FTS5 bm25), recent.

Every query is bounded (``LIMIT``) and served by an index or the FTS5 index, so a project
with 100,000 records never reads them all into Python.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass

from ..models.failures import FailureRecord
from ..models.guidance import Revision
from .db import Conn
from .failures import record_from_row

CANDIDATES = 200
# bm25 column weights, in the FTS5 column order of migration 3: the message matters most,
# then the error type, tool and class, then the advice and the attempted action.
BM25_WEIGHTS = (10.0, 5.0, 2.0, 2.0, 1.0, 1.0)


@dataclass(frozen=True)
class Hit:
    """A candidate row: just what ranking reads; the full record is built for the few kept."""

    seq: int
    fingerprint: str
    message: str
    severity: str
    last_seen_at: str
    occurrence_count: int
    helpful_count: int
    harmful_count: int
    relevance: float | None
    row: sqlite3.Row

    def record(self) -> FailureRecord:
        """The full failure record."""
        return record_from_row(self.row)


def _hit(row: sqlite3.Row, relevance: float | None = None) -> Hit:
    return Hit(
        seq=row["seq"],
        fingerprint=row["fingerprint"],
        message=row["message"],
        severity=row["severity"],
        last_seen_at=row["last_seen_at"],
        occurrence_count=row["occurrence_count"],
        helpful_count=row["helpful_count"],
        harmful_count=row["harmful_count"],
        relevance=relevance,
        row=row,
    )


@dataclass(frozen=True)
class Scope:
    """Which records count: one task's, or every task's of a project."""

    column: str  # "task_id" or "project" (fixed allow-list)
    value: str

    def __post_init__(self) -> None:
        if self.column not in ("task_id", "project"):
            raise ValueError(f"not a scope column: {self.column}")


def latest_failure(conn: Conn, task_id: str, step: str | None) -> FailureRecord | None:
    """The task's most recently seen failure (of ``step`` when given)."""
    if step is None:
        row = conn.execute(
            "SELECT * FROM failures WHERE task_id = ? ORDER BY last_seen_at DESC, seq DESC LIMIT 1",
            (task_id,),
        ).fetchone()
    else:
        row = conn.execute(
            "SELECT * FROM failures WHERE task_id = ? AND step = ?"
            " ORDER BY last_seen_at DESC, seq DESC LIMIT 1",
            (task_id, step),
        ).fetchone()
    return record_from_row(row) if row else None


def by_fingerprint(conn: Conn, scope: Scope, fingerprint: str) -> list[Hit]:
    """Active records of the scope with this fingerprint."""
    rows = conn.execute(
        f"SELECT * FROM failures WHERE {scope.column} = ? AND status = 'active'"  # noqa: S608 (allow-listed)
        " AND fingerprint = ? ORDER BY seq LIMIT ?",
        (scope.value, fingerprint, CANDIDATES),
    ).fetchall()
    return [_hit(row) for row in rows]


def recent(conn: Conn, scope: Scope) -> list[Hit]:
    """The scope's most recently seen active records."""
    rows = conn.execute(
        f"SELECT * FROM failures WHERE {scope.column} = ? AND status = 'active'"  # noqa: S608 (allow-listed)
        " ORDER BY last_seen_at DESC, seq LIMIT ?",
        (scope.value, CANDIDATES),
    ).fetchall()
    return [_hit(row) for row in rows]


def lexical(conn: Conn, scope: Scope, match: str, *, newest: int) -> list[Hit]:
    """Active records of the scope matching the FTS5 expression, best bm25 first.

    Only the ``newest`` matches (by record id) are scored: FTS5 streams a doclist in rowid
    order and stops there, so a word that occurs in every record costs ``newest`` rows, not
    the whole index. Recent failures are the relevant ones anyway.
    """
    weights = ", ".join(str(w) for w in BM25_WEIGHTS)
    try:
        rows = conn.execute(
            "SELECT f.*, m.relevance FROM ("  # noqa: S608 (constants only)
            f"  SELECT rowid, bm25(failures_fts, {weights}) AS relevance FROM failures_fts"
            "   WHERE failures_fts MATCH ? ORDER BY rowid DESC LIMIT ?"
            ") m JOIN failures f ON f.seq = m.rowid"
            f" WHERE f.{scope.column} = ? AND f.status = 'active'"
            " ORDER BY m.relevance, f.seq LIMIT ?",
            (match, newest, scope.value, CANDIDATES),
        ).fetchall()
    except sqlite3.OperationalError as exc:
        # The expression is built from quoted tokens only; this is a bug, not bad input.
        raise RuntimeError(f"FTS5 rejected {match!r}: {exc}") from exc
    return [_hit(row, float(row["relevance"])) for row in rows]


def add_revision(conn: Conn, seq: int, changes: dict[str, object], note: str | None, now: str) -> None:
    """Keep one audited change."""
    conn.execute(
        "INSERT INTO failure_revisions (failure_seq, changes_json, note, created_at) VALUES (?, ?, ?, ?)",
        (seq, json.dumps(changes, sort_keys=True), note, now),
    )


def revisions(conn: Conn, seq: int) -> list[Revision]:
    """The record's change history, oldest first."""
    rows = conn.execute(
        "SELECT * FROM failure_revisions WHERE failure_seq = ? ORDER BY revision_id", (seq,)
    ).fetchall()
    return [
        Revision(at=row["created_at"], changes=json.loads(row["changes_json"]), note=row["note"])
        for row in rows
    ]


def update_record(
    conn: Conn, seq: int, *, status: str, superseded_by: int | None, helpful: int, harmful: int
) -> None:
    """Set the revisable fields of a record."""
    conn.execute(
        "UPDATE failures SET status = ?, superseded_by = ?, helpful_count = ?, harmful_count = ?"
        " WHERE seq = ?",
        (status, superseded_by, helpful, harmful, seq),
    )
