"""``db copy``: a SQLite store moved into PostgreSQL and back, row for row, ids kept."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import psycopg
import pytest

from conftest import connect
from mcp_server_escalation.store.copying import TABLES
from operator_support import run_cli


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


async def _fill(db_path: str, home: Path) -> None:
    """A store with a row in every table: failures repeated until an escalation fires (and is
    answered and acknowledged), one superseding another, rejected attempts, progress, an edit
    refused, a question, a review finding."""
    async with connect(db_path) as agent:
        await agent.call("start_task", title="Copy me", task_id="c-1", scope=["src/**"])
        for _ in range(3):
            fired = await agent.call(
                "record_failure", task_id="c-1", step="test", message="ImportError: cannot import name 'x'"
            )
        escalation_id = fired["escalation"]["escalation_id"]
        other = await agent.call("record_failure", task_id="c-1", step="test", message="KeyError: 'k'")
        first = fired["failure"]["failure_id"]
        await agent.call("update_failure", failure_id=first, superseded_by=other["failure"]["failure_id"])
        await agent.call("record_attempt", task_id="c-1", step="gen", status="rejected", feedback="too long")
        await agent.call("record_attempt", task_id="c-1", step="gen", status="rejected", feedback="too long")
        await agent.call(
            "report_progress", task_id="c-1", files_modified=["src/a.py"], tests_passed=2, tests_failed=1
        )
        await agent.call("check_edit", task_id="c-1", paths=["docs/outside.md"])
        await agent.call("report_review", task_id="c-1", stage="lint", status="fail", failure_reason="E501")
        code, _, err = await run_cli(
            "--db", db_path, "escalations", "respond", str(escalation_id), "--guidance", "Pin lib", home=home
        )
        assert code == 0, err
        await agent.call("acknowledge_response", escalation_id=escalation_id)
        await agent.call("raise_escalation", task_id="c-1", reason="Which version?")


def _rows(conn: Any, table: str, key: str, columns: list[str]) -> list[tuple[Any, ...]]:
    names = ", ".join(columns)
    query = f"SELECT {names} FROM {table} ORDER BY {key}"  # noqa: S608 (the schema's names)
    return [tuple(row) for row in conn.execute(query).fetchall()]


def _sqlite_tables(path: str) -> dict[str, list[tuple[Any, ...]]]:
    with sqlite3.connect(path) as conn:
        return {
            table: _rows(conn, table, key, [c[1] for c in conn.execute(f"PRAGMA table_info({table})")])
            for table, key in TABLES
        }


def _columns_of(tables: dict[str, list[tuple[Any, ...]]], path: str) -> dict[str, list[str]]:
    with sqlite3.connect(path) as conn:
        return {t: [c[1] for c in conn.execute(f"PRAGMA table_info({t})")] for t in tables}


def _pg_tables(url: str, columns: dict[str, list[str]]) -> dict[str, list[tuple[Any, ...]]]:
    with psycopg.connect(url) as conn:
        return {table: _rows(conn, table, key, columns[table]) for table, key in TABLES}


async def test_a_sqlite_store_copied_into_postgresql_and_back_keeps_every_row_and_id(
    tmp_path: Path, home: Path, pg_url: str
) -> None:
    source = str(tmp_path / "source.db")
    await _fill(source, home)
    back = str(tmp_path / "back.db")

    into = await run_cli("db", "copy", source, pg_url, "--json", home=home)
    out_again = await run_cli("db", "copy", pg_url, back, home=home)

    assert into[0] == 0, into[2]
    report = json.loads(into[1])
    before = _sqlite_tables(source)
    assert report["rows"] == {table: len(rows) for table, rows in before.items()}
    assert all(
        report["rows"][table] > 0
        for table in (
            "tasks",
            "failures",
            "escalations",
            "retry_entries",
            "escalation_changes",
            "notification_outbox",
        )
    )
    columns = _columns_of(before, source)
    assert _pg_tables(pg_url, columns) == before
    assert out_again[0] == 0, out_again[2]
    assert "each table's count checked" in out_again[1]
    assert _sqlite_tables(back) == before


async def test_a_copy_goes_on_numbering_after_the_copied_ids(tmp_path: Path, home: Path, pg_url: str) -> None:
    source = str(tmp_path / "source.db")
    async with connect(source) as agent:
        await agent.call("start_task", title="Numbered", task_id="n-1")
        for n in range(3):
            await agent.call("raise_escalation", task_id="n-1", reason=f"Question {n}?")
    assert (await run_cli("db", "copy", source, pg_url, home=home))[0] == 0

    async with connect(pg_url) as agent:
        raised = await agent.call("raise_escalation", task_id="n-1", reason="One more?")
        listed = await agent.call("get_task", task_id="n-1")

    assert raised["escalation"]["escalation_id"] == 4
    assert listed["task"]["title"] == "Numbered"


async def test_a_copy_into_a_store_that_holds_rows_is_refused_and_writes_nothing(
    tmp_path: Path, home: Path, pg_url: str
) -> None:
    source = str(tmp_path / "source.db")
    async with connect(source) as agent:
        await agent.call("start_task", title="Mine", task_id="s-1")
    async with connect(pg_url) as agent:
        await agent.call("start_task", title="Theirs", task_id="t-1")

    code, out, err = await run_cli("db", "copy", source, pg_url, home=home)
    missing = await run_cli("db", "copy", str(tmp_path / "nope.db"), pg_url, home=home)

    assert code == 1
    assert out == ""
    assert "already holds 1 rows" in err or "already holds" in err
    assert "nothing was written" in err
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT task_id FROM tasks").fetchall() == [("t-1",)]
    assert missing[0] == 1
    assert "no store at" in missing[2]
