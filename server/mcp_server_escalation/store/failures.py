"""Failure records (one per task and fingerprint) and their occurrences."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import aiosqlite

from ..models.failures import FailureRecord, Occurrence

_ID = re.compile(r"^F-(\d{1,18})$")


def failure_id(seq: int) -> str:
    """The public id of the record stored at ``seq``."""
    return f"F-{seq}"


def parse_failure_id(value: str) -> int | None:
    """The row of a public failure id, or None when it is not one."""
    match = _ID.match(value.strip())
    return int(match.group(1)) if match else None


def _record(row: aiosqlite.Row) -> FailureRecord:
    return FailureRecord(
        failure_id=failure_id(row["seq"]),
        task_id=row["task_id"],
        project=row["project"],
        step=row["step"],
        phase=row["phase"],
        signal_type=row["signal_type"],
        classified_by=row["classified_by"],
        severity=row["severity"],
        fingerprint=row["fingerprint"],
        message=row["message"],
        error_type=row["error_type"],
        tool_name=row["tool_name"],
        error_code=row["error_code"],
        attempted_action=row["attempted_action"],
        observed_outcome=row["observed_outcome"],
        recommended_adjustment=row["recommended_adjustment"],
        context_refs=json.loads(row["context_refs_json"]),
        details=json.loads(row["details_json"]),
        status=row["status"],
        superseded_by=failure_id(row["superseded_by"]) if row["superseded_by"] else None,
        occurrence_count=row["occurrence_count"],
        last_seen_at=row["last_seen_at"],
        helpful_count=row["helpful_count"],
        harmful_count=row["harmful_count"],
        created_at=row["created_at"],
    )


@dataclass(frozen=True)
class NewFailure:
    """What record_failure stores about one occurrence."""

    task_id: str
    project: str
    generation: int
    agent_id: str
    step: str
    phase: str | None
    signal_type: str
    classified_by: str
    severity: str
    fingerprint: str
    message: str
    error_type: str | None
    tool_name: str | None
    error_code: str | None
    attempted_action: str | None
    observed_outcome: str | None
    recommended_adjustment: str | None
    context_refs: dict[str, Any]
    details: dict[str, Any]
    file: str | None
    line: int | None


async def record_occurrence(conn: aiosqlite.Connection, new: NewFailure, now: str) -> FailureRecord:
    """Insert the record or count one more occurrence of it; keep the occurrence itself.

    A repeat refreshes the record's latest message and advice (the newest wording is the
    most useful), reactivates a resolved record (it happened again), and keeps the highest
    severity seen.
    """
    await conn.execute(
        """INSERT INTO failures (task_id, project, step, phase, signal_type, classified_by,
               severity, fingerprint, message, error_type, tool_name, error_code,
               attempted_action, observed_outcome, recommended_adjustment,
               context_refs_json, details_json, created_at, last_seen_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT (task_id, fingerprint) DO UPDATE SET
               occurrence_count = occurrence_count + 1,
               last_seen_at = excluded.last_seen_at,
               message = excluded.message,
               phase = COALESCE(excluded.phase, phase),
               attempted_action = COALESCE(excluded.attempted_action, attempted_action),
               observed_outcome = COALESCE(excluded.observed_outcome, observed_outcome),
               recommended_adjustment =
                   COALESCE(excluded.recommended_adjustment, recommended_adjustment),
               context_refs_json = CASE WHEN excluded.context_refs_json = '{}'
                   THEN context_refs_json ELSE excluded.context_refs_json END,
               details_json = CASE WHEN excluded.details_json = '{}'
                   THEN details_json ELSE excluded.details_json END,
               severity = CASE
                   WHEN instr('lowmediumhighcritical', excluded.severity)
                      > instr('lowmediumhighcritical', severity)
                   THEN excluded.severity ELSE severity END,
               status = CASE WHEN status = 'resolved' THEN 'active' ELSE status END""",
        (
            new.task_id,
            new.project,
            new.step,
            new.phase,
            new.signal_type,
            new.classified_by,
            new.severity,
            new.fingerprint,
            new.message,
            new.error_type,
            new.tool_name,
            new.error_code,
            new.attempted_action,
            new.observed_outcome,
            new.recommended_adjustment,
            json.dumps(new.context_refs, sort_keys=True),
            json.dumps(new.details, sort_keys=True),
            now,
            now,
        ),
    )
    async with conn.execute(
        "SELECT * FROM failures WHERE task_id = ? AND fingerprint = ?",
        (new.task_id, new.fingerprint),
    ) as cur:
        row = await cur.fetchone()
    if row is None:
        raise RuntimeError("failure record vanished inside its own transaction")
    await conn.execute(
        """INSERT INTO failure_occurrences (failure_seq, task_id, generation, agent_id, step,
               message, file, line, attempted_action, details_json, created_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        (
            row["seq"],
            new.task_id,
            new.generation,
            new.agent_id,
            new.step,
            new.message,
            new.file,
            new.line,
            new.attempted_action,
            json.dumps(new.details, sort_keys=True),
            now,
        ),
    )
    return _record(row)


async def get(conn: aiosqlite.Connection, seq: int) -> FailureRecord | None:
    """The record, or None."""
    async with conn.execute("SELECT * FROM failures WHERE seq = ?", (seq,)) as cur:
        row = await cur.fetchone()
    return _record(row) if row else None


async def recent_occurrences(conn: aiosqlite.Connection, failure_id_: str, limit: int) -> list[Occurrence]:
    """The latest ``limit`` occurrences of a record, oldest first."""
    seq = parse_failure_id(failure_id_)
    async with conn.execute(
        "SELECT * FROM (SELECT * FROM failure_occurrences WHERE failure_seq = ?"
        " ORDER BY occurrence_id DESC LIMIT ?) ORDER BY occurrence_id",
        (seq, limit),
    ) as cur:
        rows = await cur.fetchall()
    return [
        Occurrence(
            at=row["created_at"],
            agent_id=row["agent_id"],
            step=row["step"],
            message=row["message"],
            file=row["file"],
            line=row["line"],
            attempted_action=row["attempted_action"],
            details=json.loads(row["details_json"]),
        )
        for row in rows
    ]


async def count_for_task(conn: aiosqlite.Connection, task_id: str) -> tuple[int, int]:
    """(records, occurrences) of a task."""
    async with conn.execute(
        "SELECT COUNT(*), COALESCE(SUM(occurrence_count), 0) FROM failures WHERE task_id = ?",
        (task_id,),
    ) as cur:
        row = await cur.fetchone()
    return (int(row[0]), int(row[1])) if row else (0, 0)
