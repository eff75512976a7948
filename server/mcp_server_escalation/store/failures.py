"""Failure records (one per task and fingerprint) and their occurrences."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass

from ..models.failures import FailureRecord, FailureReport, Occurrence
from ..rules.guidance import fts
from ..rules.reading.fingerprint import message_key
from .search_tokens import record_terms
from .sql import Conn, Row, is_postgres

_ID = re.compile(r"^F-(\d{1,18})$")


def failure_id(seq: int) -> str:
    """The public id of the record stored at ``seq``."""
    return f"F-{seq}"


def parse_failure_id(value: str) -> int | None:
    """The row of a public failure id, or None when it is not one."""
    match = _ID.match(value.strip())
    return int(match.group(1)) if match else None


def record_from_row(row: Row) -> FailureRecord:
    """A failure record from its row."""
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


@dataclass(frozen=True, slots=True)
class NewFailure:
    """What record_failure stores about one occurrence: the report as decided (its signal
    type, severity and details chosen, its file relative to the project), and the task's
    hand it came from."""

    report: FailureReport
    project: str
    generation: int
    agent_id: str
    classified_by: str
    fingerprint: str


# A repeat of a record, in place. Only the columns a repeat changes are assigned: SQLite
# rewrites the index entries of every assigned column, changed or not, and each rewritten
# index page is one more page the commit writes. So the status (indexed) is set apart, in the
# rare case that a resolved record happens again, and the advice (indexed for search) only
# when new advice is given. Updating first, not an upsert, also leaves the AUTOINCREMENT
# counter alone, which an upsert rewrites on every repeat.
_REPEAT = """UPDATE failures SET
               occurrence_count = occurrence_count + 1,
               last_seen_at = ?,
               phase = COALESCE(?, phase),
               attempted_action = COALESCE(?, attempted_action),
               observed_outcome = COALESCE(?, observed_outcome),{advice}
               context_refs_json = CASE WHEN ? = '{{}}' THEN context_refs_json ELSE ? END,
               details_json = CASE WHEN ? = '{{}}' THEN details_json ELSE ? END,
               severity = CASE
                   WHEN {rank_new} > {rank_old} THEN ? ELSE severity END
           WHERE task_id = ? AND fingerprint = ?
           RETURNING seq, severity, occurrence_count, status"""
# A severity's rank, lowest first: a repeat raises the record's severity, never lowers it.
_RANK = "CASE {} WHEN 'low' THEN 1 WHEN 'medium' THEN 2 WHEN 'high' THEN 3 WHEN 'critical' THEN 4 END"
_REPEAT_KEEPING_ADVICE = _REPEAT.format(
    advice="", rank_new=_RANK.format("?"), rank_old=_RANK.format("severity")
)
_REPEAT_WITH_ADVICE = _REPEAT.format(
    advice="\n               recommended_adjustment = ?,",
    rank_new=_RANK.format("?"),
    rank_old=_RANK.format("severity"),
)


@dataclass(frozen=True, slots=True)
class Counted:
    """The record an occurrence was counted on, as ``record_failure`` answers with it."""

    seq: int
    severity: str
    occurrence_count: int
    status: str

    @property
    def failure_id(self) -> str:
        return failure_id(self.seq)


def _repeat(conn: Conn, new: NewFailure, now: str, refs: str, details: str) -> Counted | None:
    """Count one more occurrence of an existing record; None when there is none yet."""
    report = new.report
    advice = (report.recommended_adjustment,) if report.recommended_adjustment is not None else ()
    row = conn.execute(
        _REPEAT_WITH_ADVICE if advice else _REPEAT_KEEPING_ADVICE,
        (
            now,
            report.phase,
            report.attempted_action,
            report.observed_outcome,
            *advice,
            refs,
            refs,
            details,
            details,
            report.severity,
            report.severity,
            report.task_id,
            new.fingerprint,
        ),
    ).fetchone()
    if row is None:
        return None
    counted = Counted(*row)
    if advice and is_postgres(conn):
        _reindex(conn, counted.seq)
    if counted.status == "resolved":
        # It happened again: not resolved after all.
        conn.execute("UPDATE failures SET status = 'active' WHERE seq = ?", (counted.seq,))
        counted = dataclasses.replace(counted, status="active")
    return counted


def record_occurrence(conn: Conn, new: NewFailure, now: str) -> Counted:
    """Insert the record or count one more occurrence of it; keep the occurrence itself.

    A repeat keeps the record's first wording (each occurrence keeps its own message, and an
    unchanged record leaves the FTS index untouched: the hot path stays cheap), refreshes
    the advice when new advice is given, reactivates a resolved record (it happened again),
    and keeps the highest severity seen.
    """
    refs = json.dumps(new.report.context_refs, sort_keys=True)
    details = json.dumps(new.report.details, sort_keys=True)
    counted = _repeat(conn, new, now, refs, details) or _insert(conn, new, now, refs, details)
    _keep_occurrence(conn, counted, new, now, details)
    return counted


# A new record: its words go in with it on PostgreSQL (on SQLite FTS5's trigger indexes it).
_INSERT = """INSERT INTO failures (task_id, project, step, phase, signal_type, classified_by,
               severity, fingerprint, message, message_key, error_type, tool_name, error_code,
               attempted_action, observed_outcome, recommended_adjustment,
               context_refs_json, details_json, created_at, last_seen_at{columns})
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?{values})
           RETURNING seq, severity"""
_INSERT_SQLITE = _INSERT.format(columns="", values="")
_INSERT_POSTGRES = _INSERT.format(
    columns=", search, search_terms, search_size", values=", array_to_tsvector(?::text[]), ?::jsonb, ?"
)


def _insert(conn: Conn, new: NewFailure, now: str, refs: str, details: str) -> Counted:
    """The record of a failure the task has not had before, counted once."""
    report = new.report
    values = (
        report.task_id,
        new.project,
        report.step,
        report.phase,
        report.signal_type,
        new.classified_by,
        report.severity,
        new.fingerprint,
        report.message,
        message_key(report.message),
        report.error_type,
        report.tool_name,
        report.error_code,
        report.attempted_action,
        report.observed_outcome,
        report.recommended_adjustment,
        refs,
        details,
        now,
        now,
    )
    if not is_postgres(conn):
        row = conn.execute(_INSERT_SQLITE, values).fetchone()
        return Counted(row[0], row[1], 1, "active")
    # The report names its fields as the indexed columns are named.
    terms = record_terms([getattr(report, column) for column in fts.COLUMNS])
    row = conn.execute(_INSERT_POSTGRES, (*values, *_search_values(terms))).fetchone()
    _count_for_search(conn, records=1, tokens=terms.size, added=terms.counts.keys())
    return Counted(row[0], row[1], 1, "active")


# How many records hold each word, counted from the records' words (PostgreSQL's
# migration 8 and a reindex); kept from then on by ``_count_for_search``.
COUNT_SEARCH_WORDS = (
    "INSERT INTO failure_search_words (lexeme, records)"
    " SELECT lexeme, count(*) FROM failures, unnest(tsvector_to_array(search)) AS lexeme GROUP BY lexeme"
)

_SET_SEARCH = (
    "UPDATE failures SET search = array_to_tsvector(?::text[]), search_terms = ?::jsonb,"
    " search_size = ? WHERE seq = ?"
)


def _search_values(terms: fts.Terms) -> tuple[list[str], str, int]:
    """The search columns' values: the lexemes, their counts per column, the token count."""
    return list(terms.counts), json.dumps(terms.counts, separators=(",", ":")), terms.size


def _count_for_search(
    conn: Conn, *, records: int, tokens: int, added: Iterable[str] = (), removed: Iterable[str] = ()
) -> None:
    """Keep the index's totals and, per word, how many records hold it (PostgreSQL): the
    words ``added`` to a record and ``removed`` from it. The totals' row is locked first and
    until the writing transaction ends: new records of concurrent servers are counted one
    after another, and no two writers ever wait for each other's words."""
    conn.execute(
        "UPDATE failure_search_totals SET records = records + ?, tokens = tokens + ? WHERE id = 1",
        (records, tokens),
    )
    more, fewer = sorted(added), sorted(removed)
    if more:
        conn.execute(
            "INSERT INTO failure_search_words AS w (lexeme, records)"
            " SELECT lexeme, 1 FROM unnest(CAST(? AS TEXT[])) AS lexeme"
            " ON CONFLICT (lexeme) DO UPDATE SET records = w.records + 1",
            (more,),
        )
    if fewer:
        conn.execute(
            "UPDATE failure_search_words SET records = records - 1 WHERE lexeme = ANY(CAST(? AS TEXT[]))",
            (fewer,),
        )


def _reindex(conn: Conn, seq: int) -> None:
    """Index a record's words anew after its indexed text changed (PostgreSQL)."""
    indexed = ", ".join(fts.COLUMNS)
    row = conn.execute(
        f"SELECT {indexed}, search_size, tsvector_to_array(search) FROM failures WHERE seq = ?",  # noqa: S608 (constants)
        (seq,),
    ).fetchone()
    terms = record_terms([row[i] for i in range(len(fts.COLUMNS))])
    conn.execute(_SET_SEARCH, (*_search_values(terms), seq))
    before, after = set(row[len(fts.COLUMNS) + 1]), set(terms.counts)
    _count_for_search(
        conn,
        records=0,
        tokens=terms.size - int(row[len(fts.COLUMNS)]),
        added=after - before,
        removed=before - after,
    )


def reindex_search(conn: Conn) -> None:
    """Index every record's words anew and count the index's totals again, on PostgreSQL:
    for records written other than by ``record_occurrence``, as a copy of a store writes
    them. Nothing on SQLite, whose FTS5 index its triggers keep."""
    if not is_postgres(conn):
        return
    indexed = ", ".join(fts.COLUMNS)
    rows = conn.execute(f"SELECT seq, {indexed} FROM failures ORDER BY seq").fetchall()  # noqa: S608
    tokens = 0
    values = []
    for row in rows:
        terms = record_terms([row[column] for column in fts.COLUMNS])
        tokens += terms.size
        values.append((*_search_values(terms), row["seq"]))
    conn.executemany(_SET_SEARCH, values)
    conn.execute("UPDATE failure_search_totals SET records = ?, tokens = ? WHERE id = 1", (len(rows), tokens))
    conn.execute("DELETE FROM failure_search_words")
    conn.execute(COUNT_SEARCH_WORDS)


def _keep_occurrence(conn: Conn, counted: Counted, new: NewFailure, now: str, details: str) -> None:
    """The occurrence itself, with its own message, location and attempted action."""
    report = new.report
    conn.execute(
        """INSERT INTO failure_occurrences (failure_seq, task_id, generation, agent_id, step,
               message, file, line, attempted_action, details_json, created_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        (
            counted.seq,
            report.task_id,
            new.generation,
            new.agent_id,
            report.step,
            report.message,
            report.file,
            report.line,
            report.attempted_action,
            details,
            now,
        ),
    )


def get(conn: Conn, seq: int) -> FailureRecord | None:
    """The record, or None."""
    row = conn.execute("SELECT * FROM failures WHERE seq = ?", (seq,)).fetchone()
    return record_from_row(row) if row else None


def recent_occurrences(conn: Conn, failure_id_: str, limit: int) -> list[Occurrence]:
    """The latest ``limit`` occurrences of a record, oldest first."""
    seq = parse_failure_id(failure_id_)
    rows = conn.execute(
        "SELECT * FROM (SELECT * FROM failure_occurrences WHERE failure_seq = ?"
        " ORDER BY occurrence_id DESC LIMIT ?) AS latest ORDER BY occurrence_id",
        (seq, limit),
    ).fetchall()
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


def count_for_task(conn: Conn, task_id: str) -> tuple[int, int]:
    """(records, occurrences) of a task, as its triggers keep them (no row: none yet)."""
    row = conn.execute(
        "SELECT records, occurrences FROM task_failure_counts WHERE task_id = ?", (task_id,)
    ).fetchone()
    return (int(row[0]), int(row[1])) if row else (0, 0)


def first_seen_at(conn: Conn, seq: int) -> str | None:
    """When the record's first occurrence happened."""
    row = conn.execute("SELECT created_at FROM failures WHERE seq = ?", (seq,)).fetchone()
    return row[0] if row else None


def messages(conn: Conn, seqs: list[int]) -> dict[int, str]:
    """The stored message of each record in ``seqs`` (a page's worth), by its row."""
    if not seqs:
        return {}
    marks = ", ".join("?" for _ in seqs)
    rows = conn.execute(f"SELECT seq, message FROM failures WHERE seq IN ({marks})", tuple(seqs)).fetchall()  # noqa: S608 (only placeholders)
    return {int(row["seq"]): str(row["message"]) for row in rows}
