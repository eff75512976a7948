"""Claude Code's ``StopFailure``: the turn ended on an API error, an external blocker.

The documented payload carries ``error`` (the error type), ``error_details`` and
``last_assistant_message`` (the error text the conversation showed); the host ignores any
answer, so the hook only records it, as ``record_failure`` with ``api_unavailable``.
"""

from __future__ import annotations

from pathlib import Path

from conftest import connect
from hooks_support import claude, hook, pre_tool, snapshot
from mcp_server_escalation.hooks.protocol import parse_payload

TASK = "fix-adder"
RATE_LIMITED = claude(
    "StopFailure",
    error="rate_limit",
    error_details="429 Too Many Requests",
    last_assistant_message="API Error: Rate limit reached",
)


def test_a_stop_failure_is_read_with_its_error_type_and_text() -> None:
    event = parse_payload(RATE_LIMITED)
    assert (event.kind, event.failure_type) == ("stop_failure", "rate_limit")
    assert event.output == "API Error: Rate limit reached\n429 Too Many Requests"


async def test_an_api_error_ending_the_turn_escalates_as_an_external_blocker_with_the_error(
    tmp_path: Path,
) -> None:
    db = str(tmp_path / "hook.db")
    async with connect(db) as agent:
        await agent.call("start_task", title="Fix the adder", task_id=TASK, scope=["src/**"])
    run = await hook("claude-code", RATE_LIMITED, db=db, tmp=tmp_path)
    assert (run.returncode, run.stdout) == (0, "")  # the host reads no answer to this event
    held = snapshot(db)
    [failure] = held["failures"]
    assert (failure["signal_type"], failure["error_code"], failure["tool_name"]) == (
        "api_unavailable",
        "rate_limit",
        "claude-code API",
    )
    assert "429 Too Many Requests" in failure["message"]
    assert held["triggers"] == [["external_blocker"]]
    async with connect(db) as operator:
        shown = await operator.call("get_escalation", escalation_id=1)
    assert "API Error: Rate limit reached" in str(shown["escalation"]["context"])
    # The agent's next tool call after the failed turn waits for a human.
    held_back = await hook("claude-code", pre_tool("Bash", {"command": "make"}), db=db, tmp=tmp_path)
    assert "escalation 1" in held_back.deny_reason
