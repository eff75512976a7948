"""The failure records' search index over a long run: never damaged by our writes, rebuilt
when found damaged (a tool call never fails for it), checked and repaired by ``db check``.

Everything runs on real store files with this machine's SQLite; the index is damaged the
way SQLite finds it damaged (its structure record overwritten), by a separate connection.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path

import pytest

from conftest import connect
from mcp_server_escalation.models.failures import FailureReport
from mcp_server_escalation.services.failures import record_failure
from mcp_server_escalation.services.runtime import open_runtime
from mcp_server_escalation.services.tasks import start_task
from mcp_server_escalation.settings import Settings
from mcp_server_escalation.store.db import MINIMUM_SQLITE
from operator_support import run_cli

LONG_RUN = 3_000


def _both_checks(db_path: str) -> tuple[list[str], str]:
    """(PRAGMA integrity_check, FTS5 integrity-check against the records) of a store."""
    conn = sqlite3.connect(db_path)
    try:
        try:
            file_check = [str(row[0]) for row in conn.execute("PRAGMA integrity_check")]
        except sqlite3.DatabaseError as exc:
            file_check = [str(exc)]
        try:
            conn.execute("INSERT INTO failures_fts (failures_fts, rank) VALUES ('integrity-check', 1)")
            index_check = "ok"
        except sqlite3.DatabaseError as exc:
            index_check = str(exc)
    finally:
        conn.close()
    return file_check, index_check


# Ways an index is found damaged: each surfaces differently ("vtable constructor failed" on
# every statement, "malformed", or a failed constraint of the index's own tables on a write).
DAMAGE = {
    "unreadable structure": "UPDATE failures_fts_data SET block = X'FFFFFFFFFFFFFFFF' WHERE id = 10",
    "zeroed structure": "UPDATE failures_fts_data SET block = zeroblob(16) WHERE id = 10",
    "lost pages": "DELETE FROM failures_fts_data WHERE id > 10",
}


def _damage_index(db_path: str, kind: str = "unreadable structure") -> None:
    """Damage the index the way a bad page would leave it, from another connection."""
    conn = sqlite3.connect(db_path, isolation_level=None)
    try:
        conn.execute(DAMAGE[kind])
    finally:
        conn.close()
    assert _both_checks(db_path)[1] != "ok"


def _damage_page_of(db_path: str, table: str) -> None:
    """Overwrite the start of a table's root page in the file itself."""
    conn = sqlite3.connect(db_path, isolation_level=None)
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    with Path(db_path).open("r+b") as raw:
        raw.seek((root - 1) * page_size)
        raw.write(b"\xff" * 64)


def _word(n: int) -> str:
    letters = "abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, rest = divmod(n, 26)
        out += letters[rest]
        if n == 0:
            return out


def test_this_machine_runs_a_supported_sqlite() -> None:
    assert sqlite3.sqlite_version_info >= MINIMUM_SQLITE


async def test_three_thousand_distinct_failures_leave_the_store_and_its_index_whole(
    db_path: str, caplog: pytest.LogCaptureFixture
) -> None:
    # Recorded one by one, each in its own transaction, as a long session's tool calls are
    # (the service the tool calls, without the protocol around it): on SQLite 3.40 the
    # negative merge earlier versions ran after each new record broke every write from
    # about the 1,077th record on. The index must stay whole, not merely be rebuilt.
    caplog.set_level(logging.WARNING)
    async with open_runtime(Settings(db_path=db_path, project_root="/p")) as rt:
        await start_task(rt, title="long run", task_id="long")
        for n in range(LONG_RUN):
            message = f"ImportError: module {_word(n)} failed to import {_word(n + 7)}"
            await record_failure(rt, FailureReport(task_id="long", message=message))
    async with connect(db_path) as agent:
        found = await agent.call("get_guidance", task_id="long", query=f"module {_word(2999)} import")
    assert found["items"][0]["failure_id"] == f"F-{LONG_RUN}"
    assert _both_checks(db_path) == (["ok"], "ok")
    assert not [r.getMessage() for r in caplog.records if "search index" in r.getMessage()]


@pytest.mark.parametrize("kind", sorted(DAMAGE))
async def test_a_damaged_index_is_rebuilt_and_the_tool_calls_that_met_it_succeed(
    db_path: str, caplog: pytest.LogCaptureFixture, kind: str
) -> None:
    async with connect(db_path) as agent:
        await agent.call("start_task", title="t", task_id="t1")
        for n in range(20):
            message = f"module {_word(n + 700)} failed to import"
            await agent.call("record_failure", task_id="t1", message=message)
    _damage_index(db_path, kind)
    with caplog.at_level(logging.WARNING):
        async with connect(db_path) as agent:
            # A new record writes to the index; the search reads it.
            written = await agent.call("record_failure", task_id="t1", message="ValueError: bad quux")
            found = await agent.call("get_guidance", task_id="t1", query=f"module {_word(702)} import")
    assert written["failure"]["occurrence_count"] == 1
    assert found["items"][0]["failure_id"] == "F-3"
    assert any("search index was damaged" in record.getMessage() for record in caplog.records)
    assert _both_checks(db_path) == (["ok"], "ok")


async def test_a_damaged_index_met_by_a_search_first_is_rebuilt_too(db_path: str) -> None:
    async with connect(db_path) as agent:
        await agent.call("start_task", title="t", task_id="t1")
        await agent.call("record_failure", task_id="t1", message="KeyError: 'next_url'")
    _damage_index(db_path)
    async with connect(db_path) as agent:
        found = await agent.call("get_guidance", task_id="t1", query="KeyError: 'next_url'")
    assert len(found["items"]) == 1
    assert _both_checks(db_path)[1] == "ok"


async def test_damage_outside_the_index_is_not_hidden(db_path: str) -> None:
    # Only the derived index is ours to rebuild: the same error from the records' own
    # table reaches the caller.
    async with connect(db_path) as agent:
        await agent.call("start_task", title="t", task_id="t1")
        await agent.call("record_failure", task_id="t1", message="KeyError: 'a'")
    _damage_page_of(db_path, "failure_occurrences")
    async with connect(db_path) as agent:
        result = await agent.client.call_tool("record_failure", {"task_id": "t1", "message": "KeyError: 'a'"})
        assert result.is_error
        # The server stays up for what does not touch the damaged table.
        assert (await agent.call("get_task", task_id="t1"))["task"]["task_id"] == "t1"
    file_check, index_check = _both_checks(db_path)
    assert file_check != ["ok"]
    assert index_check == "ok"  # the index was whole: nothing was rebuilt


async def test_db_check_reports_a_whole_store(db_path: str, tmp_path: Path) -> None:
    async with connect(db_path) as agent:
        await agent.call("start_task", title="t", task_id="t1")
        await agent.call("record_failure", task_id="t1", message="KeyError: 'a'")
    code, out, _err = await run_cli("db", "check", "--db", db_path, home=tmp_path)
    assert code == 0
    assert "PRAGMA integrity_check): ok" in out
    assert "FTS5 integrity-check): ok" in out


async def test_db_check_finds_a_damaged_index_changes_nothing_and_repair_rebuilds_it(
    db_path: str, tmp_path: Path
) -> None:
    async with connect(db_path) as agent:
        await agent.call("start_task", title="t", task_id="t1")
        for n in range(5):
            await agent.call("record_failure", task_id="t1", message=f"module {_word(n + 700)} failed")
    _damage_index(db_path)

    code, out, _err = await run_cli("db", "check", "--db", db_path, "--json", home=tmp_path)
    report = json.loads(out)
    assert code == 1
    assert report["search_index"] == "damaged"
    assert report["search_index_problem"] == "vtable constructor failed: failures_fts"
    assert report["failure_records"] == 5
    assert _both_checks(db_path)[1] != "ok"  # a check without --repair leaves it as it was

    code, out, _err = await run_cli("db", "check", "--db", db_path, "--repair", home=tmp_path)
    assert code == 0
    assert "rebuilt from the failure records" in out
    assert _both_checks(db_path) == (["ok"], "ok")


async def test_db_check_refuses_a_store_that_does_not_exist_and_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-folder" / "escalations.db"
    code, _out, err = await run_cli("db", "check", "--db", str(missing), home=tmp_path)
    assert code == 1
    assert str(missing) in err
    assert not missing.parent.exists()
