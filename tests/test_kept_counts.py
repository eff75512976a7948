"""A task's counts and the guidance search's word counts are kept as the rows arrive, not
counted per read: they stay exact under concurrent writers on one store (SQLite file and
PostgreSQL), when rows are deleted, and a store of the previous release migrates with
every count as its rows say.

What is compared is always the count read from the rows themselves (``COUNT(*)``, and on
PostgreSQL ``count(*) ... WHERE search @@ word``, what each search counted before) with
what the store keeps and what ``get_task`` answers.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import psycopg
import pytest

from conftest import connect, migrate_by_hand
from mcp_server_escalation.models.thresholds import Thresholds
from mcp_server_escalation.store.postgres import migrations as pg_migrations
from operator_support import run_cli

pytestmark = pytest.mark.both_backends

NOW = "2026-11-21T10:00:00.000Z"
QUIET = {
    "same_error_repeated": 1_000_000,
    "total_verification_attempts": 1_000_000,
    "no_file_changes_after_attempts": 1_000_000,
    "no_test_improvement_after": 1_000_000,
    "files_modified_exceeds": 1_000_000,
}
WRITERS = 4
CALLS = 12
ERRORS = ("KeyError: 'user'", "TimeoutError: connect", "ValueError: bad row")


@contextmanager
def _reading(location: str) -> Iterator[Any]:
    """A plain connection to the store (not the server's), with ``?`` placeholders."""
    if location.startswith("postgresql"):
        with psycopg.connect(location) as conn:
            yield _Pg(conn)
    else:
        conn = sqlite3.connect(location)
        try:
            yield conn
        finally:
            conn.close()


class _Pg:
    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        return self.conn.execute(sql.replace("?", "%s"), params)  # type: ignore[arg-type]


def _counted(location: str) -> dict[str, Any]:
    """The counts as the rows say them, and as the store keeps them."""
    with _reading(location) as conn:
        failures = conn.execute(
            "SELECT task_id, COUNT(*), SUM(occurrence_count) FROM failures GROUP BY task_id"
        ).fetchall()
        kept_failures = conn.execute(
            "SELECT task_id, records, occurrences FROM task_failure_counts WHERE records > 0"
        ).fetchall()
        files = conn.execute(
            "SELECT task_id, generation, COUNT(*) FROM modified_files GROUP BY task_id, generation"
        ).fetchall()
        kept_files = conn.execute(
            "SELECT task_id, generation, files FROM modified_file_counts WHERE files > 0"
        ).fetchall()
    return {
        "failures": sorted(tuple(r) for r in failures),
        "kept_failures": sorted(tuple(r) for r in kept_failures),
        "files": sorted(tuple(r) for r in files),
        "kept_files": sorted(tuple(r) for r in kept_files),
    }


def _word_counts(url: str) -> tuple[dict[str, int], dict[str, int]]:
    """PostgreSQL: per word, the records holding it as the search index finds them, and as kept."""
    with psycopg.connect(url) as conn:
        words = [
            r[0]
            for r in conn.execute(
                "SELECT DISTINCT lexeme FROM failures, unnest(tsvector_to_array(search)) AS lexeme"
            ).fetchall()
        ]
        found = {
            word: int(
                conn.execute(
                    "SELECT count(*) FROM failures WHERE search @@ CAST(%s AS tsquery)",
                    ("'" + word.replace("\\", "\\\\").replace("'", "''") + "'",),
                ).fetchone()[0]  # type: ignore[index]
            )
            for word in words
        }
        kept = {
            r[0]: int(r[1])
            for r in conn.execute(
                "SELECT lexeme, records FROM failure_search_words WHERE records > 0"
            ).fetchall()
        }
    return found, kept


def _assert_exact(location: str) -> None:
    counted = _counted(location)
    assert counted["kept_failures"] == counted["failures"]
    assert counted["kept_files"] == counted["files"]
    if location.startswith("postgresql"):
        found, kept = _word_counts(location)
        assert kept == found


def _spelt(n: int) -> str:
    """``n`` in letters: a fingerprint drops numbers, and each of these messages is its own."""
    return "".join(chr(ord("a") + int(digit)) for digit in str(n))


async def _writer(location: str, number: int) -> None:
    """One server of its own (its own connections and store thread) writing a shared task
    and a task of its own: new failures, repeats, advice that changes indexed words, files."""
    async with connect(location) as agent:
        own = f"own-{number}"
        await agent.call("start_task", title="Own", task_id=own, thresholds=QUIET)
        await agent.call("start_task", title="Shared", task_id="shared", thresholds=QUIET)
        for call in range(CALLS):
            for task_id in (own, "shared"):
                error = ERRORS[call % len(ERRORS)]
                advice = {"recommended_adjustment": f"try plan {number} {call}"} if call % 4 == 0 else {}
                await agent.call("record_failure", task_id=task_id, message=error, **advice)
                await agent.call(
                    "record_failure",
                    task_id=task_id,
                    message=f"RuntimeError: writer {_spelt(number)} call {_spelt(call)} failed",
                )
                await agent.call(
                    "report_progress",
                    task_id=task_id,
                    files_modified=[f"src/w{number}_{call}.py", "src/common.py"],
                    tests_passed=call + 1,
                )


async def test_the_kept_counts_stay_exact_under_concurrent_writers(db_path: str) -> None:
    async with connect(db_path) as agent:
        await agent.call("start_task", title="Shared", task_id="shared", thresholds=QUIET)
    async with anyio.create_task_group() as writers:
        for number in range(WRITERS):
            writers.start_soon(_writer, db_path, number)

    _assert_exact(db_path)
    async with connect(db_path) as agent:
        shared = await agent.call("get_task", task_id="shared")
    counted = _counted(db_path)
    records, occurrences = next((r[1], r[2]) for r in counted["failures"] if r[0] == "shared")
    assert (shared["failure_records"], shared["failure_occurrences"]) == (records, occurrences)
    # Each writer's errors once (three shapes are shared), and one record per unique message.
    assert records == len(ERRORS) + WRITERS * CALLS
    assert occurrences == 2 * WRITERS * CALLS
    assert shared["modified_count"] == shared["counters"]["files_modified"] == WRITERS * CALLS + 1


async def test_a_new_generation_counts_its_own_files(db_path: str) -> None:
    async with connect(db_path) as agent:
        await agent.call("start_task", title="T", task_id="t", agent_id="first", thresholds=QUIET)
        await agent.call("report_progress", task_id="t", files_modified=["a.py", "b.py", "a.py"])
        before = await agent.call("get_task", task_id="t")
        await agent.call("start_task", title="T", task_id="t", agent_id="second")
        taken_over = await agent.call("get_task", task_id="t")
        await agent.call("report_progress", task_id="t", files_modified=["c.py"])
        after = await agent.call("get_task", task_id="t")

    assert (before["modified_count"], before["counters"]["files_modified"]) == (2, 2)
    assert (taken_over["modified_count"], taken_over["modified_files"]) == (0, [])
    assert (after["modified_count"], after["modified_files"]) == (1, ["c.py"])
    _assert_exact(db_path)


async def test_the_counts_follow_rows_deleted_from_the_store(db_path: str) -> None:
    """The store prunes none of these rows itself; an operator's hand may, and the kept
    counts follow it (and a search's word counts on PostgreSQL are counted again by
    ``db copy``'s reindex, as its totals are)."""
    async with connect(db_path) as agent:
        await agent.call("start_task", title="T", task_id="t", thresholds=QUIET)
        for n in range(3):
            await agent.call("record_failure", task_id="t", message=f"KeyError: key{'x' * n}")
            await agent.call("record_failure", task_id="t", message=f"KeyError: key{'x' * n}")
        await agent.call("report_progress", task_id="t", files_modified=["a.py", "b.py"])
    with _reading(db_path) as conn:
        seq = conn.execute("SELECT MIN(seq) FROM failures").fetchone()[0]
        conn.execute("DELETE FROM failure_occurrences WHERE failure_seq = ?", (seq,))
        conn.execute("DELETE FROM failures WHERE seq = ?", (seq,))
        conn.execute("DELETE FROM modified_files WHERE path = 'a.py'")
        if isinstance(conn, sqlite3.Connection):
            conn.commit()
        else:
            conn.conn.commit()

    async with connect(db_path) as agent:
        task = await agent.call("get_task", task_id="t")
    assert (task["failure_records"], task["failure_occurrences"], task["modified_count"]) == (2, 4, 1)
    counted = _counted(db_path)
    assert counted["kept_failures"] == counted["failures"]
    assert counted["kept_files"] == counted["files"]


# A store of the previous release: its migrations applied by hand, rows written as it wrote
# them (no kept counts), then opened by this server, which migrates it.
_TASK = (
    "INSERT INTO tasks (task_id, title, project, agent_id, status, thresholds_json, created_at,"
    " updated_at) VALUES (?, ?, '/work/project', 'agent', 'active', ?, ?, ?)"
)
_FAILURE = (
    "INSERT INTO failures (task_id, project, step, signal_type, classified_by, severity,"
    " fingerprint, message, message_key, created_at, last_seen_at, occurrence_count{columns})"
    " VALUES (?, '/work/project', 'main', 'error', 'agent', 'medium', ?, ?, ?, ?, ?, ?{values})"
)
_FILE = (
    "INSERT INTO modified_files (task_id, generation, path, source, first_at)"
    " VALUES (?, ?, ?, 'report_progress', ?)"
)
OLD_FAILURES = (
    ("busy", "KeyError: user", 3),
    ("busy", "TimeoutError: connect db", 2),
    ("other", "KeyError: id", 1),
)
OLD_FILES = (("busy", 1, "a.py"), ("busy", 1, "b.py"), ("busy", 2, "c.py"), ("other", 1, "d.py"))


def _old_rows(conn: Any, mark: str, search: bool) -> None:
    def sql(text: str) -> str:
        return text.replace("?", mark)

    thresholds = Thresholds().model_dump_json()
    for task_id in ("busy", "other"):
        conn.execute(sql(_TASK), (task_id, f"Task {task_id}", thresholds, NOW, NOW))
    conn.execute(sql("UPDATE tasks SET generation = 2 WHERE task_id = 'busy'"))
    for n, (task_id, message, occurrences) in enumerate(OLD_FAILURES):
        values: tuple[Any, ...] = (task_id, f"fp-{n}", message, f"key-{n}", NOW, NOW, occurrences)
        if search:
            words = [w.lower().strip(":") for w in message.split()]
            counts = "{" + ", ".join(f'"{w}": [1, 0, 0, 0, 0]' for w in words) + "}"
            values = (*values, words, counts, len(words))
            statement = _FAILURE.format(
                columns=", search, search_terms, search_size",
                values=", array_to_tsvector(?::text[]), ?::jsonb, ?",
            )
        else:
            statement = _FAILURE.format(columns="", values="")
        conn.execute(sql(statement), values)
    if search:
        tokens = sum(len(m.split()) for _, m, _ in OLD_FAILURES)
        conn.execute(
            sql("UPDATE failure_search_totals SET records = ?, tokens = ?"), (len(OLD_FAILURES), tokens)
        )
    for task_id, generation, path in OLD_FILES:
        conn.execute(sql(_FILE), (task_id, generation, path, NOW))


def _sqlite_store_of_the_previous_release(path: str) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        migrate_by_hand(conn, upto=19)
        _old_rows(conn, "?", search=False)
    finally:
        conn.close()


def _pg_store_of_the_previous_release(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE schema_migrations"
            " (version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
        )
        for migration in (m for m in pg_migrations.MIGRATIONS if m.version < 8):
            for statement in migration.statements:
                conn.execute(statement)  # type: ignore[arg-type]  # DDL as the store runs it
            conn.execute(
                "INSERT INTO schema_migrations VALUES (%s, %s, %s)", (migration.version, migration.name, NOW)
            )
        _old_rows(conn, "%s", search=True)


@pytest.mark.parametrize("backend_name", ["sqlite", "postgresql"])
async def test_a_store_of_the_previous_release_migrates_with_every_count_as_its_rows_say(
    backend_name: str, empty_path: str, request: pytest.FixtureRequest
) -> None:
    if backend_name == "sqlite":
        location = empty_path
        _sqlite_store_of_the_previous_release(location)
    else:
        location = request.getfixturevalue("pg_url")
        _pg_store_of_the_previous_release(location)

    async with connect(location) as agent:
        busy = await agent.call("get_task", task_id="busy")
        other = await agent.call("get_task", task_id="other")
        await agent.call("record_failure", task_id="busy", message="KeyError: user")
        await agent.call("record_failure", task_id="busy", message="OSError: disk full")
        await agent.call("report_progress", task_id="busy", files_modified=["c.py", "e.py"])
        grown = await agent.call("get_task", task_id="busy")
        guidance = await agent.call("get_guidance", task_id="busy", query="disk full user")

    assert (busy["failure_records"], busy["failure_occurrences"]) == (2, 5)
    assert (busy["modified_count"], busy["modified_files"]) == (1, ["c.py"])  # generation 2's
    assert (other["failure_records"], other["failure_occurrences"], other["modified_count"]) == (1, 1, 1)
    # "KeyError: user" again is a record of its own: the hand-written fingerprints are not the rules'.
    assert (grown["failure_records"], grown["failure_occurrences"], grown["modified_count"]) == (4, 7, 2)
    assert guidance["items"]
    _assert_exact(location)


@pytest.mark.sqlite_only
async def test_a_store_copied_into_postgresql_and_back_keeps_its_counts_exact(
    db_path: str, pg_url: str, tmp_path: Path
) -> None:
    """``db copy`` writes the rows; the target's triggers count them, and the search's word
    counts are counted again with its index."""
    async with connect(db_path) as agent:
        await agent.call("start_task", title="T", task_id="t", thresholds=QUIET)
        for error in (*ERRORS, ERRORS[0]):
            await agent.call("record_failure", task_id="t", message=error)
        await agent.call("report_progress", task_id="t", files_modified=["a.py", "b.py"])
    home = tmp_path / "home"
    home.mkdir()
    back = str(tmp_path / "back.db")
    assert (await run_cli("db", "copy", db_path, pg_url, home=home))[0] == 0
    assert (await run_cli("db", "copy", pg_url, back, home=home))[0] == 0

    for location in (pg_url, back):
        _assert_exact(location)
        assert _counted(location)["kept_failures"] == [("t", len(ERRORS), len(ERRORS) + 1)]
        async with connect(location) as agent:
            task = await agent.call("get_task", task_id="t")
        assert (task["failure_records"], task["failure_occurrences"], task["modified_count"]) == (3, 4, 2)
