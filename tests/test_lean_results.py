"""Results the model reads leave out the triggers' own bookkeeping (the operation keys, the
run an error interrupted, a test command's own best rate): the store keeps it, and the rules
still read it there, so an interrupted run of errors is still counted across calls."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from conftest import connect

INTERNAL = (
    "last_failed_operation",
    "previous_fingerprint",
    "previous_count",
    "previous_operation",
    "last_test_operation",
    "test_operation_best",
    "changed_since_error",
    "changed_since_previous",
    "failed_command_files",
    "previous_command_files",
)


async def test_results_leave_out_internal_counters_the_store_keeps_and_the_rules_use(tmp_path: Path) -> None:
    db_path = str(tmp_path / "lean.db")  # a SQLite file: its row is read below as stored
    results = []
    async with connect(db_path) as agent:
        results.append(await agent.call("start_task", title="Lean", task_id="lean"))
        for message in ("KeyError: 'EUR'", "TypeError: bad operand", "KeyError: 'EUR'"):
            results.append(
                await agent.call("record_failure", task_id="lean", message=message, tool_name="pytest")
            )
        results.append(await agent.call("report_progress", task_id="lean", tests_passed=3, tests_failed=1))
        results.append(await agent.call("get_task", task_id="lean"))
        stored = sqlite3.connect(db_path)
        try:
            query = "SELECT json_extract(counters_json, '$.previous_fingerprint') FROM tasks WHERE task_id=?"
            row = stored.execute(query, ("lean",)).fetchone()
        finally:
            stored.close()
        third = await agent.call(
            "record_failure", task_id="lean", message="KeyError: 'EUR'", tool_name="pytest"
        )
    shown = json.dumps(results)
    assert [key for key in INTERNAL if f'"{key}"' in shown] == []
    assert row[0] is not None  # kept in the store: the run the TypeError interrupted
    # ... and read back by the rules: the same error a third time, one other between, escalates.
    assert third["escalation"]["type"] == "repeated_error", third["message"]
