"""A task's counters as one JSON document: a store of the previous release migrates with
nothing lost, on both backends.

The store is built as that release left it: its migrations applied by hand (up to the one
before the counters moved), tasks written into its counter columns with values no default
has, then opened by the server, which migrates it. The counters the tools read afterwards
are those written, and they go on counting from there.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from conftest import connect, migrate_by_hand
from mcp_server_escalation.models.tasks import Counters
from mcp_server_escalation.models.thresholds import Thresholds
from mcp_server_escalation.store.postgres import migrations as pg_migrations

NOW = "2026-11-21T10:00:00.000Z"
# Every counter the previous release kept in a column, none at its default.
BUSY = {
    "consecutive_same_error": 2,
    "last_fingerprint": "fp-1a2b3c",
    "last_failed_operation": "python -m pytest",
    "previous_fingerprint": "fp-4d5e6f",
    "previous_count": 1,
    "previous_operation": "make build",
    "last_test_operation": "python -m pytest -q",
    "test_operation_best": 0.75,
    "verification_attempts": 4,
    "attempts_without_file_change": 3,
    "test_runs_without_improvement": 2,
    "tool_calls": 17,
    "failing_test_runs": 5,
    "budget_since": "2026-11-21T09:30:00.000Z",
}
OLD_TASK_COLUMNS = (
    "task_id",
    "title",
    "project",
    "agent_id",
    "status",
    "thresholds_json",
    "created_at",
    "updated_at",
)


def _old_rows() -> list[tuple[str, dict[str, Any]]]:
    """The busy task, and one whose counters are all as a new task's."""
    return [("busy", BUSY), ("quiet", {})]


def _insert_sql(counters: dict[str, Any], mark: str) -> str:
    columns = (*OLD_TASK_COLUMNS, *counters)
    marks = ", ".join([mark] * len(columns))
    return f"INSERT INTO tasks ({', '.join(columns)}) VALUES ({marks})"  # noqa: S608 (the test's own names)


def _values(task_id: str, counters: dict[str, Any]) -> tuple[Any, ...]:
    thresholds = Thresholds().model_dump_json()
    return (
        task_id,
        f"Task {task_id}",
        "/work/project",
        "agent",
        "active",
        thresholds,
        NOW,
        NOW,
        *counters.values(),
    )


def _sqlite_store_of_the_previous_release(path: str) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        migrate_by_hand(conn, upto=16)
        for task_id, counters in _old_rows():
            conn.execute(_insert_sql(counters, "?"), _values(task_id, counters))
        # files_modified is counted from these rows, on either side of the migration
        conn.execute(
            "INSERT INTO modified_files (task_id, generation, path, source, first_at)"
            " VALUES ('busy', 1, 'src/app.py', 'report_progress', ?)",
            (NOW,),
        )
    finally:
        conn.close()


def _pg_store_of_the_previous_release(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE schema_migrations"
            " (version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
        )
        previous = [m for m in pg_migrations.MIGRATIONS if m.version < 5]
        for migration in previous:
            for statement in migration.statements:
                conn.execute(statement)  # type: ignore[arg-type]  # DDL as the store runs it
            conn.execute(
                "INSERT INTO schema_migrations VALUES (%s, %s, %s)", (migration.version, migration.name, NOW)
            )
        for task_id, counters in _old_rows():
            conn.execute(_insert_sql(counters, "%s"), _values(task_id, counters))  # type: ignore[arg-type]
        conn.execute(
            "INSERT INTO modified_files (task_id, generation, path, source, first_at)"
            " VALUES ('busy', 1, 'src/app.py', 'report_progress', %s)",
            (NOW,),
        )


def _task_columns_sqlite(path: str) -> set[str]:
    conn = sqlite3.connect(path)
    try:
        return {row[1] for row in conn.execute("PRAGMA table_info(tasks)")}
    finally:
        conn.close()


def _task_columns_pg(url: str) -> set[str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'tasks'"
        ).fetchall()
    return {row[0] for row in rows}


def _stored_counters(location: str, task_id: str) -> dict[str, Any]:
    """The task's counters document as the store keeps it (the rules' bookkeeping too)."""
    query = "SELECT counters_json FROM tasks WHERE task_id = "
    if location.startswith("postgresql"):
        with psycopg.connect(location) as conn:
            row = conn.execute(query + "%s", (task_id,)).fetchone()
    else:
        conn = sqlite3.connect(location)
        try:
            row = conn.execute(query + "?", (task_id,)).fetchone()
        finally:
            conn.close()
    assert row is not None
    return dict(json.loads(row[0]))


def _shown(counters: dict[str, Any]) -> dict[str, Any]:
    """The counters a result shows: the rules' own bookkeeping is left out of results."""
    return {name: value for name, value in counters.items() if not Counters.model_fields[name].exclude}


@pytest.fixture(params=["sqlite", "postgresql"])
def previous_release(
    request: pytest.FixtureRequest, empty_path: str
) -> tuple[str, Callable[[str], set[str]]]:
    """A store of the previous release's schema with two tasks in it, and how to read its
    task columns."""
    if request.param == "sqlite":
        _sqlite_store_of_the_previous_release(empty_path)
        return empty_path, _task_columns_sqlite
    url: str = request.getfixturevalue("pg_url")
    _pg_store_of_the_previous_release(url)
    return url, _task_columns_pg


async def test_counters_written_by_the_previous_release_read_the_same_after_the_migration(
    previous_release: tuple[str, Callable[[str], set[str]]],
) -> None:
    location, task_columns = previous_release
    async with connect(location) as agent:
        busy = await agent.call("get_task", task_id="busy")
        quiet = await agent.call("get_task", task_id="quiet")

    assert busy["counters"] == {**_shown(BUSY), "files_modified": 1}
    assert quiet["counters"] == Counters().model_dump()
    stored = _stored_counters(location, "busy")
    assert {name: stored[name] for name in BUSY} == BUSY  # the bookkeeping too, kept as it was
    # A counter is a field of the document now, never a column of its own.
    assert "counters_json" in task_columns(location)
    assert not set(BUSY) & task_columns(location)


async def test_a_migrated_task_goes_on_counting_from_where_it_stood(
    previous_release: tuple[str, Callable[[str], set[str]]],
) -> None:
    location, _ = previous_release
    async with connect(location) as agent:
        await agent.call("report_progress", task_id="busy", step="retry", outcome="failure")
        after = await agent.call("get_task", task_id="busy")

    counters = {**after["counters"], **_stored_counters(location, "busy")}
    assert counters["attempts_without_file_change"] == BUSY["attempts_without_file_change"] + 1
    assert counters["tool_calls"] == BUSY["tool_calls"] + 1
    moved = ("attempts_without_file_change", "tool_calls")
    kept = {name: value for name, value in BUSY.items() if name not in moved}
    assert {name: counters[name] for name in kept} == kept
