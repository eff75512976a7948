"""A hook event's de-duplication claim and the record it guards commit together, or not at all.

The failure is injected the way a full disk or a damaged index shows itself: a trigger in
the store file makes one of the record's writes fail inside its transaction. Every process
that opens the store (the hook process, the relay's server) meets it, and nothing is mocked.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from conftest import make_settings
from hooks_support import PROJECT, PYTEST_FAIL, bash_failure, hook, pre_edit, snapshot
from mcp_server_escalation.hooks.dispatch import answer, prepare
from mcp_server_escalation.services.runtime import open_runtime

OFF = {"ESCALATION_HOOK_RELAY": "off"}  # the hook process does the work itself


async def _create(db: str) -> None:
    async with open_runtime(make_settings(db)):
        pass  # created and migrated


def _break(db: str, table: str, when: str = "1") -> None:
    """Make inserts into ``table`` (rows matching ``when``) fail, as a full disk would."""
    with sqlite3.connect(db) as conn:
        conn.execute(
            f"CREATE TRIGGER injected_failure BEFORE INSERT ON {table} WHEN {when}"
            " BEGIN SELECT RAISE(ABORT, 'injected: disk full'); END"
        )


def _mend(db: str) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute("DROP TRIGGER injected_failure")


def _count(db: str, query: str) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute(query).fetchone()[0])


async def _answer_in_process(db: str, payload: dict[str, Any]) -> str:
    """The hook's own path (``dispatch``), in this process, on a runtime of ``db``."""
    settings = make_settings(db)
    async with open_runtime(settings) as rt:
        event = prepare(json.dumps(payload).encode(), settings, {}, PROJECT)
        assert event is not None
        return await answer(rt, "claude-code", event, settings)


async def test_an_event_whose_record_failed_is_recorded_when_delivered_again(tmp_path: Path) -> None:
    db = str(tmp_path / "claim.db")
    failing_run = bash_failure("python -m pytest -q", PYTEST_FAIL, "toolu_lost1")
    await _create(db)
    _break(db, "progress_reports")  # the failure is written, then the test run's write fails
    with pytest.raises(sqlite3.IntegrityError, match="injected"):
        await _answer_in_process(db, failing_run)
    assert _count(db, "SELECT COUNT(*) FROM hook_events WHERE delivery_key = 'post:toolu_lost1'") == 0
    _mend(db)
    await _answer_in_process(db, failing_run)  # the host delivers it again
    await _answer_in_process(db, failing_run)  # and once more: now it is a duplicate
    stored = snapshot(db)
    assert [f["occurrence_count"] for f in stored["failures"]] == [1]
    assert len(stored["progress"]) == 1  # the failing test run, exactly once


async def test_a_hook_process_that_failed_to_record_leaves_the_event_to_a_redelivery(tmp_path: Path) -> None:
    db = str(tmp_path / "process.db")
    failing_run = bash_failure("python -m pytest -q", PYTEST_FAIL, "toolu_lost2")
    await _create(db)
    _break(db, "failure_occurrences")
    lost = await hook("claude-code", failing_run, db=db, tmp=tmp_path, **OFF)
    assert (lost.returncode, lost.stdout) == (0, "")  # the host is never broken...
    # ...and the failure is said, not swallowed: in words on stderr, whole in the log it names
    said, log = lost.stderr.rstrip("\n").rsplit("; the details are in ", 1)
    assert said == (
        "mcp-server-escalation hook: the hook could not record the event: its store failed"
        " (a database error, not a bug in the hook) and it made no decision, so the host goes on"
    )
    assert "sqlite3.IntegrityError: injected: disk full" in Path(log).read_text()
    _mend(db)
    again = await hook("claude-code", failing_run, db=db, tmp=tmp_path, **OFF)
    duplicate = await hook("claude-code", failing_run, db=db, tmp=tmp_path, **OFF)
    assert (again.returncode, again.stderr, duplicate.returncode, duplicate.stderr) == (0, "", 0, "")
    stored = snapshot(db)
    assert [f["occurrence_count"] for f in stored["failures"]] == [1]
    assert len(stored["progress"]) == 1


async def test_an_edit_whose_gate_failed_is_gated_when_delivered_again(tmp_path: Path) -> None:
    db = str(tmp_path / "gate.db")
    edit = pre_edit(f"{PROJECT}/src/calc.py", tool_use_id="toolu_gate1")
    await _create(db)
    _break(db, "actions", "NEW.kind = 'check_edit'")  # the gate's own record fails
    with pytest.raises(sqlite3.IntegrityError, match="injected"):
        await _answer_in_process(db, edit)
    _mend(db)
    await _answer_in_process(db, edit)
    await _answer_in_process(db, edit)
    assert _count(db, "SELECT COUNT(*) FROM actions WHERE kind = 'check_edit'") == 1
    assert [f["path"] for f in snapshot(db)["files"]] == ["src/calc.py"]
