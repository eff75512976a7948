"""Claude Code's ``StopFailure``: the turn ended on an API error of the host's provider.

The documented payload carries ``error`` (the error type), ``error_details`` and
``last_assistant_message`` (the error text the conversation showed); the host ignores any
answer, so the hook only records it (``rules/reading/host_errors.py``): a passing error is recorded
and never pages unless it persists; authentication and billing are a non-blocking notice.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio

from conftest import connect
from hooks_support import claude, hook, pre_edit, pre_tool, snapshot
from mcp_server_escalation.hooks.protocol import parse_payload
from mcp_server_escalation.rules.reading.host_errors import persisted

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


LOGGED_OUT = claude(
    "StopFailure",
    error="authentication_failed",
    last_assistant_message="Invalid API key · Please run /login",
)


async def _started(db: str) -> None:
    async with connect(db) as agent:
        await agent.call("start_task", title="Fix the adder", task_id=TASK, scope=["src/**"])


async def test_a_rate_limit_is_recorded_with_its_type_and_never_pages_or_holds_the_agent(
    tmp_path: Path,
) -> None:
    db = str(tmp_path / "hook.db")
    await _started(db)
    for _ in range(4):  # more than any repeat threshold
        run = await hook("claude-code", RATE_LIMITED, db=db, tmp=tmp_path)
        assert (run.returncode, run.stdout) == (0, "")  # the host reads no answer to this event
    held = snapshot(db)
    [failure] = held["failures"]
    assert (failure["signal_type"], failure["error_code"], failure["tool_name"]) == (
        "api_unavailable",
        "rate_limit",
        "claude-code API",
    )
    assert failure["occurrence_count"] == 4
    assert "429 Too Many Requests" in failure["message"]
    assert held["triggers"] == []
    # Not the agent's error: its run of identical errors is untouched.
    assert held["tasks"][0]["consecutive_same_error"] == 0
    assert held["tasks"][0]["status"] == "active"
    goes_on = await hook("claude-code", pre_tool("Bash", {"command": "make"}), db=db, tmp=tmp_path)
    assert goes_on.stdout == ""


async def test_a_failed_login_is_a_notice_with_its_type_that_never_gates_an_edit(tmp_path: Path) -> None:
    db = str(tmp_path / "hook.db")
    await _started(db)
    for _ in range(2):
        await hook("claude-code", LOGGED_OUT, db=db, tmp=tmp_path)
    held = snapshot(db)
    assert held["triggers"] == [["external_blocker"]]  # one notice, however often it comes
    async with connect(db, "operator") as operator:
        shown = await operator.call("get_escalation", escalation_id=1)
    escalation = shown["escalation"]
    assert (escalation["blocking"], escalation["priority"]) == (False, "normal")
    assert "authentication_failed" in escalation["triggers"][0]["summary"]
    assert "Invalid API key" in escalation["triggers"][0]["summary"]
    assert held["tasks"][0]["status"] == "active"
    edit = await hook("claude-code", pre_edit(str(tmp_path / "src" / "a.py")), db=db, tmp=tmp_path)
    assert edit.stdout == ""  # allowed: nothing the agent does is wrong


async def test_a_rate_limit_that_persists_holds_the_task_as_a_blocker(tmp_path: Path) -> None:
    db = str(tmp_path / "hook.db")
    config = tmp_path / "config.toml"
    # 1.8 s: five errors 0.5 s apart span 2 s, and a gap stays under it unless one hook run
    # takes 1.3 s (a 0.6 s window with 0.4 s pauses failed when a run took 0.2 s, at a load of 8).
    config.write_text("[hooks]\napi_error_minutes = 0.03\n", encoding="utf-8")
    await _started(db)
    for _ in range(5):
        await hook("claude-code", RATE_LIMITED, db=db, tmp=tmp_path, ESCALATION_CONFIG=str(config))
        await anyio.sleep(0.5)
    held = snapshot(db)
    assert held["triggers"] == [["external_blocker"]]
    assert held["tasks"][0]["status"] == "paused"
    held_back = await hook("claude-code", pre_tool("Bash", {"command": "make"}), db=db, tmp=tmp_path)
    assert "escalation 1" in held_back.deny_reason


def test_an_error_persists_only_when_it_keeps_coming_back_for_the_whole_time() -> None:
    now = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
    ago = [now - timedelta(minutes=m) for m in (5, 12, 19, 26, 31)]
    assert persisted(ago, now, 30)  # never quiet for 30 minutes, for 31
    assert not persisted(ago[:4], now, 30)  # 26 minutes so far
    assert not persisted([now - timedelta(minutes=m) for m in (40, 75)], now, 30)  # quiet 40 minutes
    assert not persisted([], now, 30)
