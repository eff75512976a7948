"""A host's permission request as an approval escalation (``[hooks] permission_requests``).

Claude Code's ``PermissionRequest`` (and Codex's, the same shape without ``tool_use_id``)
fires when the host is about to ask the user whether a tool may run. With
``permission_requests = "ask"`` the operator decides through an ``ask_human`` escalation;
by default the hook says nothing and the user answers in the host.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conftest import connect
from hooks_support import claude, codex, hook, pre_tool, run_cli, snapshot

TASK = "fix-adder"
RM = {"command": "rm -rf build", "description": "Clean the build folder"}


@pytest.fixture
def db(tmp_path: Path) -> str:
    """The store the hook writes."""
    return str(tmp_path / "hook.db")


@pytest.fixture
def ask(tmp_path: Path) -> str:
    """A config that sends permission requests to the operator."""
    config = tmp_path / "ask.toml"
    config.write_text('[hooks]\npermission_requests = "ask"\n', encoding="utf-8")
    return str(config)


async def start(db: str) -> None:
    """The task, started through the MCP tool."""
    async with connect(db) as agent:
        await agent.call("start_task", title="Fix the adder", task_id=TASK, scope=["src/**"])


def claude_request(tool_input: dict[str, Any] = RM) -> dict[str, Any]:
    """Claude Code's PermissionRequest for a Bash command (documented shape)."""
    suggestion = {
        "type": "addRules",
        "rules": [{"toolName": "Bash", "ruleContent": tool_input.get("command", "")}],
        "behavior": "allow",
        "destination": "localSettings",
    }
    return claude(
        "PermissionRequest", tool_name="Bash", tool_input=tool_input, permission_suggestions=[suggestion]
    )


def decision(run: Any) -> dict[str, Any]:
    """The PermissionRequest decision a hook printed."""
    out = run.json()["hookSpecificOutput"]
    assert out["hookEventName"] == "PermissionRequest", out
    return dict(out["decision"])


async def respond(db: str, tmp: Path, *args: str) -> None:
    """The operator answers through the CLI."""
    done = await run_cli("--db", db, "escalations", "respond", *args, tmp=tmp)
    assert done.returncode == 0, done.stderr


async def test_by_default_a_permission_request_is_left_to_the_user(db: str, tmp_path: Path) -> None:
    await start(db)
    run = await hook("claude-code", claude_request(), db=db, tmp=tmp_path)
    assert (run.returncode, run.stdout) == (0, "")
    assert snapshot(db)["escalations"] == []


async def test_an_asked_permission_waits_for_the_operator_then_is_allowed_once_approved(
    db: str, ask: str, tmp_path: Path
) -> None:
    await start(db)
    first = await hook("claude-code", claude_request(), db=db, tmp=tmp_path, ESCALATION_CONFIG=ask)
    refused = decision(first)
    assert refused["behavior"] == "deny"
    assert "escalation 1" in refused["message"]
    assert "make the same call again" in refused["message"]
    [escalation] = snapshot(db)["escalations"]
    assert (escalation["type"], escalation["status"]) == ("ask_human", "pending")
    async with connect(db) as operator:
        shown = await operator.call("get_escalation", escalation_id=1)
    assert "rm -rf build" in shown["escalation"]["question"]
    assert "approve" in shown["escalation"]["response_options"]
    # The task is paused meanwhile: other tool calls are held, and asking again raises nothing new.
    held = await hook("claude-code", pre_tool("Bash", {"command": "make"}), db=db, tmp=tmp_path)
    assert "escalation 1" in held.deny_reason
    again = await hook("claude-code", claude_request(), db=db, tmp=tmp_path, ESCALATION_CONFIG=ask)
    assert decision(again)["behavior"] == "deny"
    assert len(snapshot(db)["escalations"]) == 1

    await respond(db, tmp_path, "1", "--approve")
    allowed = await hook("claude-code", claude_request(), db=db, tmp=tmp_path, ESCALATION_CONFIG=ask)
    assert allowed.json() == {
        "hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}
    }
    [answered] = snapshot(db)["escalations"]
    assert (answered["status"], answered["acknowledged"]) == ("resolved_with_approval", 1)
    after = await hook("claude-code", pre_tool("Bash", {"command": "make"}), db=db, tmp=tmp_path)
    assert (after.returncode, after.stdout) == (0, "")  # the task runs again
    # The approval holds for that request; another request is a new question.
    same = await hook("claude-code", claude_request(), db=db, tmp=tmp_path, ESCALATION_CONFIG=ask)
    assert decision(same) == {"behavior": "allow"}
    other = await hook(
        "claude-code",
        claude_request({"command": "git push --force"}),
        db=db,
        tmp=tmp_path,
        ESCALATION_CONFIG=ask,
    )
    assert decision(other)["behavior"] == "deny"
    assert len(snapshot(db)["escalations"]) == 2


async def test_a_refused_permission_carries_the_operators_words_and_a_termination_stops_claude(
    db: str, ask: str, tmp_path: Path
) -> None:
    await start(db)
    await hook("claude-code", claude_request(), db=db, tmp=tmp_path, ESCALATION_CONFIG=ask)
    await respond(db, tmp_path, "1", "--guidance", "Keep the build folder; run make clean instead.")
    refused = decision(
        await hook("claude-code", claude_request(), db=db, tmp=tmp_path, ESCALATION_CONFIG=ask)
    )
    assert refused["behavior"] == "deny"
    assert "Keep the build folder; run make clean instead." in refused["message"]
    assert "interrupt" not in refused
    assert snapshot(db)["escalations"][0]["acknowledged"] == 1
    # Asked again after that answer: a new question to the operator, which it terminates.
    await hook("claude-code", claude_request(), db=db, tmp=tmp_path, ESCALATION_CONFIG=ask)
    await respond(db, tmp_path, "2", "--terminate", "Stop touching the build.")
    stopped = decision(
        await hook("claude-code", claude_request(), db=db, tmp=tmp_path, ESCALATION_CONFIG=ask)
    )
    assert stopped["behavior"] == "deny"
    assert "Stop touching the build." in stopped["message"]
    assert stopped["interrupt"] is True


async def test_codex_permission_requests_get_the_operators_decision_in_codex_shape(
    db: str, ask: str, tmp_path: Path
) -> None:
    await start(db)
    request = codex("PermissionRequest", tool_name="Bash", tool_input=RM)
    first = await hook("codex", request, db=db, tmp=tmp_path, ESCALATION_CONFIG=ask)
    out = first.json()
    assert set(out) == {"hookSpecificOutput"}  # Codex rejects continue/stopReason here
    assert out["hookSpecificOutput"]["decision"]["behavior"] == "deny"
    await respond(db, tmp_path, "1", "--approve")
    allowed = await hook(
        "codex", {**request, "turn_id": "turn-2"}, db=db, tmp=tmp_path, ESCALATION_CONFIG=ask
    )
    assert allowed.json() == {
        "hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}
    }
