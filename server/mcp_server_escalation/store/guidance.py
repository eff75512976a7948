"""Candidate queries for guidance: exact matches, word statistics, lexical (bm25), recent.

Every query is bounded (``LIMIT``) and served by an index or the full-text index, so a
project with 100,000 records never reads them all into Python. A candidate is only what
ranking reads (``ranking.Candidate``, a tuple); the few rows of the answer are read in full
afterwards (``guidance_rows``).

The full-text index is FTS5's on SQLite, and on PostgreSQL a ``tsvector`` of each record's
FTS5 tokens under a GIN index, with bm25 computed in Python from the counts stored beside
it (``rules.guidance.fts``): the same matches and the same scores, so the same top-k
(docs/guidance.md).
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..models.guidance import Revision
from ..rules.guidance import fts
from ..rules.guidance.ranking import Candidate, Match, fts_query
from .postgres.connection import PgConn, placeholders
from .sql import Conn, is_postgres, tuples

CANDIDATES = 100
# Exact matches (the newest this many) all share the query's normalised words; k is at most 20.
EXACT_CANDIDATES = 50
# bm25 column weights, in the FTS5 column order of migration 7: the message matters most,
# then the error type, tool and class, then the advice.
BM25_WEIGHTS = (10.0, 5.0, 2.0, 2.0, 1.0)
# Candidate's fields, in order (the exact flag and the relevance are added per query).
_CANDIDATE = "f.seq, f.severity, f.last_seen_at, f.occurrence_count, f.helpful_count, f.harmful_count"
# What makes a record an exact match. A record written without a key (by a version before
# migration 6, into a migrated store) is keyed on the fly by the function store.db registers.
_EXACT_SQL = {
    "fingerprint": "f.fingerprint = ?",
    "message_key": "COALESCE(f.message_key, escalation_message_key(f.message)) = ?",
}
# PostgreSQL's records all have their key: its store began after migration 6.
_EXACT_SQL_POSTGRES = {"fingerprint": "f.fingerprint = ?", "message_key": "f.message_key = ?"}


@dataclass(frozen=True)
class Exact:
    """What an exact match shares with the query: the fingerprint, or the message key."""

    column: str  # "fingerprint" or "message_key" (fixed allow-list)
    value: str

    def __post_init__(self) -> None:
        if self.column not in _EXACT_SQL:
            raise ValueError(f"not an exact-match column: {self.column}")


def _candidates(conn: Conn, sql: str, params: Sequence[object]) -> list[Candidate]:
    rows = tuples(conn, sql, params)  # hundreds per call
    return [
        Candidate(seq, sev, seen, occ, helped, harmed, exact == 1, bm25)
        for seq, sev, seen, occ, helped, harmed, exact, bm25 in rows
    ]


@dataclass(frozen=True, slots=True)
class GuidanceRow:
    """What a guidance line shows of a record."""

    seq: int
    task_id: str
    step: str
    signal_type: str
    severity: str
    message: str
    error_type: str | None
    tool_name: str | None
    recommended_adjustment: str | None
    occurrence_count: int
    last_seen_at: str
    helpful_count: int
    harmful_count: int


@dataclass(frozen=True)
class Scope:
    """Which records count: one task's, or every task's of a project."""

    column: str  # "task_id" or "project" (fixed allow-list)
    value: str

    def __post_init__(self) -> None:
        if self.column not in ("task_id", "project"):
            raise ValueError(f"not a scope column: {self.column}")


@dataclass(frozen=True)
class Reference:
    """The failure a query-less call searches for: the step's latest."""

    fingerprint: str
    message: str


def latest_failure(conn: Conn, task_id: str, step: str | None) -> Reference | None:
    """The task's most recently seen failure (of ``step`` when given)."""
    if step is None:
        row = conn.execute(
            "SELECT fingerprint, message FROM failures WHERE task_id = ?"
            " ORDER BY last_seen_at DESC, seq DESC LIMIT 1",
            (task_id,),
        ).fetchone()
    else:
        row = conn.execute(
            "SELECT fingerprint, message FROM failures WHERE task_id = ? AND step = ?"
            " ORDER BY last_seen_at DESC, seq DESC LIMIT 1",
            (task_id, step),
        ).fetchone()
    return Reference(row[0], row[1]) if row else None


def exact_matches(conn: Conn, scope: Scope, exact: Exact) -> list[Candidate]:
    """The newest active records of the scope that match exactly (by index)."""
    return _candidates(
        conn,
        f"SELECT {_CANDIDATE}, 1, NULL FROM failures f"  # noqa: S608 (allow-listed)
        f" WHERE f.{scope.column} = ? AND f.{exact.column} = ? AND f.status = 'active'"
        " ORDER BY f.seq DESC LIMIT ?",
        (scope.value, exact.value, EXACT_CANDIDATES),
    )


def recent(conn: Conn, scope: Scope) -> list[Candidate]:
    """The scope's most recently seen active records."""
    return _candidates(
        conn,
        f"SELECT {_CANDIDATE}, 0, NULL FROM failures f"  # noqa: S608 (allow-listed)
        f" WHERE f.{scope.column} = ? AND f.status = 'active'"
        " ORDER BY f.last_seen_at DESC, f.seq LIMIT ?",
        (scope.value, CANDIDATES),
    )


@dataclass(frozen=True)
class WordStats:
    """How often the index holds each word, from bounded reads of its first entries."""

    words: Sequence[str]  # the words counted, in the order of the lists below
    sample: int  # the most entries read per word
    records: int  # the highest record id: the number of records (none is ever deleted)
    counts: list[int]  # per word: records holding it, counted up to the sample size
    last: list[int | None]  # per word: the highest record id among those counted
    ids: list[str | None]  # per word: those record ids, comma-separated (see ``records_of``)
    kept: SearchCounts | None = None  # PostgreSQL: the kept counts of these words, read with them

    def kept_counts(self, chosen: Sequence[str]) -> SearchCounts | None:
        """The kept counts of the ``chosen`` words (PostgreSQL), in their order; None when
        they were not read with these statistics."""
        if self.kept is None or not set(chosen) <= set(self.words):
            return None
        position = {word: i for i, word in enumerate(self.words)}
        holding = [self.kept.holding[position[word]] for word in chosen]
        return dataclasses.replace(self.kept, holding=holding)

    def records_of(self, chosen: Sequence[str]) -> list[set[int]] | None:
        """The records holding each of the ``chosen`` words, when every one was read whole
        (fewer than the sample); else None."""
        position = {word: i for i, word in enumerate(self.words)}
        held: list[set[int]] = []
        for word in chosen:
            i = position[word]
            ids = self.ids[i]
            if self.counts[i] >= self.sample or ids is None:
                return None
            held.append({int(seq) for seq in ids.split(",")})
        return held


def word_stats(conn: Conn, words: Sequence[str], sample: int) -> WordStats:
    """Per word, its first ``sample`` records in the full-text index: how many, how far they
    reach, and which. Each word reads at most ``sample`` entries of its index list, so a
    word in every record costs no more than a rare one."""
    kept: SearchCounts | None = None
    if is_postgres(conn):
        kept = search_counts(conn, [fts.lexeme(word) for word in words])
        rows = _word_stats_postgres(conn, words, sample, kept)
    else:
        rows = _word_stats_sqlite(conn, words, sample)
    total, *by_word = sorted(rows, key=lambda row: int(row[0]))
    return WordStats(
        words,
        sample,
        total[1],
        [row[1] for row in by_word],
        [row[2] for row in by_word],
        [row[3] for row in by_word],
        kept,
    )


def _word_stats_sqlite(conn: Conn, words: Sequence[str], sample: int) -> list[tuple[Any, ...]]:
    # The record count rides along as row -1: one statement either way.
    probe = (
        "SELECT {i}, count(*), max(rowid), group_concat(rowid) FROM (SELECT rowid FROM failures_fts"
        " WHERE failures_fts MATCH ?{n} ORDER BY rowid LIMIT {sample})"
    )
    sql = " UNION ALL ".join(
        [
            "SELECT -1, COALESCE(MAX(seq), 0), NULL, NULL FROM failures",
            *(probe.format(i=i, n=i + 1, sample=int(sample)) for i in range(len(words))),
        ]
    )
    try:
        return list(conn.execute(sql, [fts_query([w]) for w in words]).fetchall())
    except sqlite3.OperationalError as exc:
        # Each word is a quoted token: this is a bug, not bad input.
        raise RuntimeError(f"FTS5 rejected one of {list(words)!r}: {exc}") from exc


@dataclass(frozen=True)
class SearchCounts:
    """What PostgreSQL keeps of its search index: the records and their tokens, the highest
    record id (what the word statistics count records by, as on SQLite: the same ids give
    the same statistics, whatever gaps a store's ids have), and per word asked for, how
    many records hold it. Read in the read's one snapshot, as the matches are."""

    records: int
    tokens: int
    highest: int
    holding: list[int]


def search_counts(conn: PgConn, lexemes: Sequence[str]) -> SearchCounts:
    """The kept counts (one statement of primary-key reads, whatever the store holds)."""
    holding = "".join(
        ", COALESCE((SELECT records FROM failure_search_words WHERE lexeme = ?), 0)" for _ in lexemes
    )
    row = conn.execute(
        f"SELECT records, tokens, COALESCE((SELECT MAX(seq) FROM failures), 0){holding}"  # noqa: S608 (placeholders)
        " FROM failure_search_totals",
        tuple(lexemes),
    ).fetchone()
    records, tokens, highest, *counts = row
    return SearchCounts(int(records), int(tokens), int(highest), [int(n) for n in counts])


def _in_record_order(holding: int, wanted: int, records: int) -> bool:
    """Whether ``wanted`` of the ``holding`` matches among ``records`` are read more cheaply
    in record order, checking each record's words until enough match (about ``wanted *
    records / holding`` records), than through the GIN index, which yields every match to
    be sorted. The counts are exact, so the choice does not wait on the planner's
    statistics, which lag behind a store growing record by record (a plan made for the
    store of a minute ago joined every match with every record of the task)."""
    return holding * holding > wanted * records


def _matching(in_record_order: bool) -> str:
    """The match condition: the operator, which the GIN index serves, or its function,
    which no index serves, so the records are read in the order asked for."""
    return "ts_match_vq(search, CAST(? AS tsquery))" if in_record_order else "search @@ CAST(? AS tsquery)"


def _word_stats_postgres(
    conn: PgConn, words: Sequence[str], sample: int, counts: SearchCounts
) -> list[tuple[Any, ...]]:
    rows: list[tuple[Any, ...]] = [(-1, counts.highest, None, None)]
    probes, params = [], []
    for i, (word, holding) in enumerate(zip(words, counts.holding, strict=True)):
        if holding == 0:
            rows.append((i, 0, None, None))  # what the probe finds: no record
            continue
        condition = _matching(_in_record_order(holding, sample, counts.records))
        probes.append(
            f"SELECT {i}, count(*), max(seq), string_agg(CAST(seq AS TEXT), ',' ORDER BY seq) FROM"  # noqa: S608 (constants)
            f" (SELECT seq FROM failures WHERE {condition} ORDER BY seq LIMIT {int(sample)}) AS w{i}"
        )
        params.append(_tsquery(Match((word,))))
    if probes:
        rows.extend(_searched(conn, " UNION ALL ".join(probes), params))
    return rows


def _searched(conn: PgConn, sql: str, params: Sequence[object]) -> list[tuple[Any, ...]]:
    """The rows of a search, planned for its own words every time (never prepared). A
    prepared statement's generic plan cannot know whether a word is in most records or in
    none, and which order to read them in depends on that: the seq index, stopping at the
    first matches, for a common word; the GIN index and a sort of the few matches for a
    rare one."""
    with conn.raw.cursor() as cursor:
        cursor.execute(placeholders(sql), tuple(params), prepare=False)
        return cursor.fetchall()


def _tsquery(match: Match) -> str:
    """The match as a tsquery of quoted lexemes (no parser or dictionary runs on them)."""
    quoted = ("'" + fts.lexeme(t).replace("\\", "\\\\").replace("'", "''") + "'" for t in match.tokens)
    return (" & " if match.all_of else " | ").join(quoted)


def lexical(
    conn: Conn,
    scope: Scope,
    match: Match,
    *,
    newest: int,
    exact: Exact | None,
    scored: bool = True,
    stats: WordStats | None = None,
) -> list[Candidate]:
    """Active records of the scope matching ``match``, best bm25 first.

    Only the ``newest`` matches (by record id) are scored: FTS5 streams a doclist in rowid
    order and stops there, so a word that occurs in every record costs ``newest`` rows, not
    the whole index. Recent failures are the relevant ones anyway. Unscored (``scored``
    false), the candidates carry no relevance and come newest first: bm25 reads the whole
    index list of every word to weigh it, which for a common word is most of the query.
    ``stats``: the words' statistics read in this transaction, whose kept counts PostgreSQL
    reads again otherwise.
    """
    if is_postgres(conn):
        counts = stats.kept_counts(match.tokens) if stats is not None else None
        if counts is None:
            counts = search_counts(conn, [fts.lexeme(t) for t in match.tokens])
        return _lexical_postgres(conn, scope, match, counts, newest=newest, exact=exact, scored=scored)
    weights = ", ".join(str(w) for w in BM25_WEIGHTS)
    relevance, order = (
        (f"bm25(failures_fts, {weights})", "m.relevance, f.seq") if scored else ("NULL", "f.seq DESC")
    )
    flag, flag_params = (_EXACT_SQL[exact.column], (exact.value,)) if exact else ("0", ())
    expression = fts_query(match.tokens, all_of=match.all_of)
    try:
        return _candidates(
            conn,
            f"SELECT {_CANDIDATE}, {flag}, m.relevance FROM ("  # noqa: S608 (constants only)
            f"  SELECT rowid, {relevance} AS relevance FROM failures_fts"
            "   WHERE failures_fts MATCH ? ORDER BY rowid DESC LIMIT ?"
            ") m JOIN failures f ON f.seq = m.rowid"
            f" WHERE f.{scope.column} = ? AND f.status = 'active'"
            f" ORDER BY {order} LIMIT ?",
            (*flag_params, expression, newest, scope.value, CANDIDATES),
        )
    except sqlite3.OperationalError as exc:
        # The expression is built from quoted tokens only; this is a bug, not bad input.
        raise RuntimeError(f"FTS5 rejected {expression!r}: {exc}") from exc


def _lexical_postgres(
    conn: PgConn,
    scope: Scope,
    match: Match,
    counts: SearchCounts,
    *,
    newest: int,
    exact: Exact | None,
    scored: bool,
) -> list[Candidate]:
    """``lexical`` on PostgreSQL: the same newest matches, scored in Python as FTS5 scores
    them (``rules.guidance.fts.bm25``) from each record's stored counts and the index's kept
    totals and word counts.

    The newest matches are read in one pass over the records, the scope's kept among them
    (no join); in record order or through the GIN index, whichever reads fewer, from the
    exact counts of the words (``_in_record_order``)."""
    lexemes = [fts.lexeme(t) for t in match.tokens]
    matches = min(counts.holding) if match.all_of else sum(counts.holding)
    if matches == 0:
        return []  # no record holds the words
    flag, flag_params = (_EXACT_SQL_POSTGRES[exact.column], (exact.value,)) if exact else ("FALSE", ())
    weighed = lexemes if scored else []
    terms = "".join(", f.search_terms -> CAST(? AS TEXT)" for _ in weighed)
    # Unscored, the newest CANDIDATES of the scope are the answer: no more rows are sent.
    weights, kept = (", search_terms", "") if scored else ("", f" LIMIT {CANDIDATES}")
    condition = _matching(_in_record_order(matches, newest, counts.records))
    rows = _searched(
        conn,
        f"SELECT {_CANDIDATE}, {flag}, f.search_size{terms} FROM ("  # noqa: S608 (constants, placeholders)
        "  SELECT seq, severity, last_seen_at, occurrence_count, helpful_count, harmful_count,"
        f"   task_id, project, status, fingerprint, message_key, search_size{weights}"
        f"  FROM failures WHERE {condition} ORDER BY seq DESC LIMIT ?"
        f") AS f WHERE f.{scope.column} = ? AND f.status = 'active' ORDER BY f.seq DESC{kept}",
        (*flag_params, *weighed, _tsquery(match), newest, scope.value),
    )
    if not scored:
        return [_candidate(row, None) for row in rows]
    return _best_by_bm25(rows, counts)


def _best_by_bm25(rows: Sequence[Sequence[Any]], counts: SearchCounts) -> list[Candidate]:
    """The best ``CANDIDATES`` of the rows by bm25 (then record id). A row: the candidate's
    fields, its token count, then its counts of each word."""
    if not rows:
        return []
    idfs = [fts.idf(counts.records, n) for n in counts.holding]
    average_size = counts.tokens / max(counts.records, 1)
    words = len(counts.holding)
    relevant = sorted(
        (
            fts.bm25(
                [fts.frequency(c, BM25_WEIGHTS) for c in row[8 : 8 + words]], idfs, int(row[7]), average_size
            ),
            row[0],
            row,
        )
        for row in rows
    )
    return [_candidate(row, relevance) for relevance, _, row in relevant[:CANDIDATES]]


def _candidate(row: Sequence[Any], relevance: float | None) -> Candidate:
    seq, severity, seen, occurrences, helped, harmed, exact = row[:7]
    return Candidate(seq, severity, seen, occurrences, helped, harmed, bool(exact), relevance)


def guidance_rows(conn: Conn, seqs: Sequence[int]) -> dict[int, GuidanceRow]:
    """The records that make the answer, by id."""
    if not seqs:
        return {}
    marks = ", ".join("?" * len(seqs))
    rows = tuples(  # unpacked into the row type
        conn,
        "SELECT seq, task_id, step, signal_type, severity, message, error_type,"  # noqa: S608 (placeholders only)
        " tool_name, recommended_adjustment, occurrence_count, last_seen_at, helpful_count,"
        f" harmful_count FROM failures WHERE seq IN ({marks})",
        list(seqs),
    )
    return {row[0]: GuidanceRow(*row) for row in rows}


def add_revision(conn: Conn, seq: int, changes: dict[str, object], note: str | None, now: str) -> None:
    """Keep one audited change."""
    conn.execute(
        "INSERT INTO failure_revisions (failure_seq, changes_json, note, created_at) VALUES (?, ?, ?, ?)",
        (seq, json.dumps(changes, sort_keys=True), note, now),
    )


def revisions(conn: Conn, seq: int, limit: int) -> tuple[list[Revision], int]:
    """The record's latest ``limit`` changes, oldest first, and how many there are in all."""
    rows = conn.execute(
        "SELECT * FROM (SELECT * FROM failure_revisions WHERE failure_seq = ?"
        " ORDER BY revision_id DESC LIMIT ?) AS latest ORDER BY revision_id",
        (seq, limit),
    ).fetchall()
    counted = conn.execute("SELECT COUNT(*) FROM failure_revisions WHERE failure_seq = ?", (seq,)).fetchone()
    latest = [
        Revision(at=row["created_at"], changes=json.loads(row["changes_json"]), note=row["note"])
        for row in rows
    ]
    return latest, int(counted[0]) if counted else len(latest)


def update_record(
    conn: Conn, seq: int, *, status: str, superseded_by: int | None, helpful: int, harmful: int
) -> None:
    """Set the revisable fields of a record."""
    conn.execute(
        "UPDATE failures SET status = ?, superseded_by = ?, helpful_count = ?, harmful_count = ?"
        " WHERE seq = ?",
        (status, superseded_by, helpful, harmful, seq),
    )
