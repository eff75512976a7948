"""One failure report carries every field from where it is reported to what is stored.

The agent reports through ``record_failure``'s flat arguments, a host's hook through the
failed tool call it saw; both become one ``FailureReport`` that the service and the store
read. Whatever is reported must come back from ``failure://``, field by field.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import PROJECT, connect, make_settings
from hooks_support import claude
from mcp_server_escalation.hooks.dispatch import answer, prepare
from mcp_server_escalation.services import guidance
from mcp_server_escalation.services.runtime import open_runtime

pytestmark = pytest.mark.both_backends

EVERY_FIELD: dict[str, Any] = {
    "task_id": "report",
    "message": "ModuleNotFoundError: No module named 'express'",
    "signal_type": "missing_dependency",
    "severity": "critical",
    "step": "build",
    "phase": "install",
    "error_type": "ModuleNotFoundError",
    "tool_name": "Bash",
    "error_code": "exit 1",
    "file": f"{PROJECT}/src/server.py",
    "line": 42,
    "attempted_action": "pip install -r requirements.txt",
    "observed_outcome": "the import still fails",
    "recommended_adjustment": "add express to the lock file",
    "context_refs": [{"kind": "artifact_ids", "ref": "a-1"}, {"kind": "query_id", "ref": "q-7"}],
    "details": {"dependency": "express", "version": "4.19"},
}
# Where the stored record keeps what the occurrence alone holds.
OCCURRENCE_FIELDS = ("file", "line", "attempted_action", "step", "message")


async def _shown(agent: Any, failure_id: str) -> dict[str, Any]:
    view = await agent.client.read_resource(f"failure://{failure_id}")
    shown: dict[str, Any] = json.loads(view.contents[0].text)
    return shown


async def test_every_field_of_record_failure_reaches_the_stored_record(db_path: str) -> None:
    async with connect(db_path) as agent:
        await agent.call("start_task", title="report", task_id="report")
        result = await agent.call("record_failure", **EVERY_FIELD)
        shown = await _shown(agent, result["failure"]["failure_id"])
    record, [occurrence] = shown["failure"], shown["occurrences"]
    stored = {name: record[name] for name in EVERY_FIELD if name in record}
    stored |= {name: occurrence[name] for name in OCCURRENCE_FIELDS}
    # The file is kept relative to the task's project; every other field as reported.
    # Pointers are kept by kind: kind -> its refs.
    refs = {"artifact_ids": ["a-1"], "query_id": ["q-7"]}
    assert stored == {**EVERY_FIELD, "file": "src/server.py", "context_refs": refs}
    assert record["classified_by"] == "caller"


def _edit_failure(path: str) -> dict[str, Any]:
    return claude(
        "PostToolUseFailure",
        tool_name="Edit",
        tool_input={"file_path": path, "old_string": "a", "new_string": "b"},
        tool_use_id="toolu_01EDITFAIL",
        error="String to replace not found in file.\nString: a",
        is_interrupt=False,
    )


async def test_a_hook_events_failure_is_stored_as_record_failure_stores_the_same_report(
    tmp_path: Path,
) -> None:
    path = f"{PROJECT}/src/calc.py"
    hooked = str(tmp_path / "hooked.db")
    settings = make_settings(hooked)
    async with open_runtime(settings) as rt:
        event = prepare(json.dumps(_edit_failure(path)).encode(), settings, {}, PROJECT)
        assert event is not None
        await answer(rt, "claude-code", event, settings)
        from_hook = (await guidance.show_failure(rt, "F-1")).model_dump()
    reported = {
        "task_id": from_hook["failure"]["task_id"],
        "message": "String to replace not found in file.\nString: a",
        "tool_name": "Edit",
        "file": path,
        "attempted_action": f"Edit {path}",
    }
    async with connect(str(tmp_path / "tooled.db")) as agent:
        await agent.call("start_task", title="same", task_id=reported["task_id"], agent_id="claude-code")
        await agent.call("record_failure", **reported)
        from_tool = await _shown(agent, "F-1")
    # The same fields, stored alike; only when it happened differs.
    for kept in (from_hook, from_tool):
        for moment in ("created_at", "last_seen_at"):
            kept["failure"].pop(moment)
        for occurrence in kept["occurrences"]:
            occurrence.pop("at")
    assert from_hook["failure"] == from_tool["failure"]
    assert from_hook["occurrences"] == from_tool["occurrences"]
    assert from_hook["occurrences"][0]["file"] == "src/calc.py"
    assert from_hook["failure"]["tool_name"] == "Edit"
