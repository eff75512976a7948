"""``hook cursor`` and Cursor-shaped events anywhere, as real subprocesses; de-duplication.

Cursor runs its own ``hooks.json`` and, by default, Claude Code's ``.claude/settings.json``
hooks too, with Cursor-shaped payloads: one tool call can reach us twice, and through two
kinds of event (``postToolUse`` and ``afterShellExecution``). It must count once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conftest import connect
from hooks_support import (
    JEST_FAIL,
    PROJECT,
    PYTEST_FAIL,
    PYTEST_PASS,
    bash_failure,
    count,
    cursor,
    every_repeat,
    hook,
    hook_process,
    snapshot,
)
from mcp_server_escalation.rules.reading.shell_output import digest

TASK = "fix-adder"
TSC_ERROR = "tsc: error TS2322: Type 'string' is not assignable to type 'number'."


@pytest.fixture
def stores(tmp_path: Path) -> tuple[str, str]:
    """(the store the hook writes, the store the MCP tools write)."""
    return str(tmp_path / "hook.db"), str(tmp_path / "tools.db")


async def start(*dbs: str) -> None:
    """The same task, started through the MCP tool, in each store."""
    for db in dbs:
        async with connect(db) as agent:
            await agent.call("start_task", title="Fix the adder", task_id=TASK, scope=["src/**"])


async def tools(db: str, *calls: tuple[str, dict[str, Any]]) -> None:
    """The MCP tool calls, in order, on ``db``."""
    async with connect(db) as agent:
        for name, arguments in calls:
            await agent.call(name, **arguments)


def shell_post(
    command: str, stdout: str, exit_code: int, tool_use_id: str = "call_1", **extra: Any
) -> dict[str, Any]:
    """Cursor's postToolUse of a shell command (tool_output is a JSON string)."""
    import json

    return cursor(
        "postToolUse",
        tool_name="Shell",
        tool_input={"command": command, "working_directory": PROJECT},
        tool_output=json.dumps({"exitCode": exit_code, "stdout": stdout}),
        tool_use_id=tool_use_id,
        cwd=PROJECT,
        duration=812,
        **extra,
    )


async def test_an_out_of_scope_write_is_denied_in_cursors_shape(
    stores: tuple[str, str], tmp_path: Path
) -> None:
    hooked, tooled = stores
    await start(hooked, tooled)
    event = cursor(
        "preToolUse",
        tool_name="Write",
        tool_input={"file_path": f"{PROJECT}/docs/notes.md", "contents": "x"},
        tool_use_id="call_w1",
        cwd=PROJECT,
        agent_message="Writing notes",
    )
    # As Cursor runs it: a process of the installed script.
    run = await hook_process("cursor", event, db=hooked, tmp=tmp_path)
    await tools(tooled, ("check_edit", {"task_id": TASK, "paths": [f"{PROJECT}/docs/notes.md"]}))
    out = run.json()
    assert out["permission"] == "deny"
    assert "outside the task's scope" in out["agent_message"]
    assert out["user_message"] == out["agent_message"]
    assert snapshot(hooked) == snapshot(tooled)


async def test_a_failing_shell_run_with_an_exit_code_is_a_failure_and_a_test_run(
    stores: tuple[str, str], tmp_path: Path
) -> None:
    hooked, tooled = stores
    await start(hooked, tooled)
    run = await hook("cursor", shell_post("npx jest", JEST_FAIL, 1), db=hooked, tmp=tmp_path)
    await tools(
        tooled,
        ("record_failure", {"task_id": TASK, "message": digest(JEST_FAIL), "tool_name": "Shell",
                            "error_code": "exit 1", "attempted_action": "Shell: npx jest"}),
        ("report_progress", {"task_id": TASK, "tests_passed": 4, "tests_failed": 1, "outcome": "failure",
                             "note": "jest: Tests:       1 failed, 1 skipped, 4 passed, 6 total"}),
    )  # fmt: skip
    assert (run.returncode, run.stdout) == (0, "")
    assert snapshot(hooked) == snapshot(tooled)


async def test_post_tool_use_failure_and_after_file_edit_are_recorded(
    stores: tuple[str, str], tmp_path: Path
) -> None:
    hooked, tooled = stores
    await start(hooked, tooled)
    failure = cursor(
        "postToolUseFailure",
        tool_name="Shell",
        tool_input={"command": "npm run build"},
        tool_use_id="call_f1",
        cwd=PROJECT,
        error_message=TSC_ERROR,
        failure_type="error",
        duration=2100,
        is_interrupt=False,
    )
    edit = cursor(
        "afterFileEdit", file_path=f"{PROJECT}/src/calc.ts", edits=[{"old_string": "a", "new_string": "b"}]
    )
    for event in (failure, edit):
        run = await hook("cursor", event, db=hooked, tmp=tmp_path)
        assert (run.returncode, run.stdout) == (0, "")
    await tools(
        tooled,
        ("record_failure", {"task_id": TASK, "tool_name": "Shell", "attempted_action": "Shell: npm run build",
                            "message": TSC_ERROR}),
        ("report_progress", {"task_id": TASK, "files_modified": [f"{PROJECT}/src/calc.ts"], "note": "Write"}),
    )  # fmt: skip
    assert snapshot(hooked) == snapshot(tooled)


async def test_after_shell_execution_gives_test_runs_only(stores: tuple[str, str], tmp_path: Path) -> None:
    hooked, _ = stores
    await start(hooked)
    plain = cursor("afterShellExecution", command="npm run build", output="done", duration=30, sandbox=False)
    tests = cursor(
        "afterShellExecution", command="pytest -q", output=PYTEST_PASS, duration=900, sandbox=False
    )
    for event in (plain, tests):
        assert (await hook("cursor", event, db=hooked, tmp=tmp_path)).stdout == ""
    progress = snapshot(hooked)["progress"]
    assert [(p["tests_passed"], p["tests_failed"], p["outcome"]) for p in progress] == [(3, 0, "success")]


async def test_the_pause_denies_shell_commands_and_stop_follows_up_once(
    stores: tuple[str, str], tmp_path: Path
) -> None:
    hooked, _ = stores
    await start(hooked)
    for n in (1, 2, 3):
        failed = shell_post("pytest -q", PYTEST_FAIL, 1, f"call_p{n}")
        await hook("cursor", failed, db=hooked, tmp=tmp_path, ESCALATION_CONFIG=every_repeat(tmp_path))
    before = cursor("beforeShellExecution", command="pip install requests", cwd=PROJECT, sandbox=False)
    denied = (await hook("cursor", before, db=hooked, tmp=tmp_path)).json()
    assert denied["permission"] == "deny"
    assert "escalation 1" in denied["agent_message"]
    reading = cursor("beforeShellExecution", command="git diff", cwd=PROJECT, sandbox=False)
    assert (await hook("cursor", reading, db=hooked, tmp=tmp_path)).stdout == ""
    # Stop: the escalation is pending, so the agent may stop (nothing to follow up).
    assert (
        await hook("cursor", cursor("stop", status="completed", loop_count=0), db=hooked, tmp=tmp_path)
    ).stdout == ""


async def test_stop_follows_up_on_failing_tests_only_on_the_first_loop(
    stores: tuple[str, str], tmp_path: Path
) -> None:
    hooked, _ = stores
    await start(hooked)
    await hook("cursor", shell_post("pytest -q", PYTEST_FAIL, 1), db=hooked, tmp=tmp_path)
    first = await hook("cursor", cursor("stop", status="completed", loop_count=0), db=hooked, tmp=tmp_path)
    assert "1 failing" in first.json()["followup_message"]
    looped = await hook("cursor", cursor("stop", status="completed", loop_count=1), db=hooked, tmp=tmp_path)
    aborted = await hook("cursor", cursor("stop", status="aborted", loop_count=0), db=hooked, tmp=tmp_path)
    assert (looped.stdout, aborted.stdout) == ("", "")


async def test_session_start_gives_additional_context(stores: tuple[str, str], tmp_path: Path) -> None:
    hooked, _ = stores
    await start(hooked)
    event = cursor("sessionStart", session_id="conv-new", is_background_agent=False, composer_mode="agent")
    out = (await hook("cursor", event, db=hooked, tmp=tmp_path)).json()
    assert set(out) == {"additional_context"}
    assert f"task {TASK}" in out["additional_context"]


async def test_a_cursor_payload_at_the_claude_code_entry_is_recognised_and_answered_both_ways(
    stores: tuple[str, str], tmp_path: Path
) -> None:
    hooked, _ = stores
    await start(hooked)
    # What Cursor sends to a .claude/settings.json hook: its own shape, maybe Claude's names.
    event = cursor(
        "PreToolUse",
        tool_name="Write",
        tool_input={"file_path": f"{PROJECT}/README.md"},
        tool_use_id="call_w2",
        cwd=PROJECT,
    )
    out = (await hook("claude-code", event, db=hooked, tmp=tmp_path)).json()
    assert out["permission"] == "deny"
    assert out["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert out["agent_message"] == out["hookSpecificOutput"]["permissionDecisionReason"]
    [task] = snapshot(hooked)["tasks"]
    assert task["status"] == "paused"  # the same check_edit refusal, the same escalation


async def test_one_tool_call_delivered_twice_counts_once(stores: tuple[str, str], tmp_path: Path) -> None:
    hooked, _ = stores
    await start(hooked)
    # Cursor runs both its hooks.json entry and the .claude/settings.json entry.
    post = shell_post("pytest -q", PYTEST_FAIL, 1, "call_dup")
    for entry in ("cursor", "claude-code"):
        run = await hook(entry, post, db=hooked, tmp=tmp_path)
        assert run.returncode == 0
    # The same tool call seen again through afterShellExecution (no tool_use_id).
    after = cursor(
        "afterShellExecution", command="pytest -q", output=PYTEST_FAIL, duration=812, sandbox=False
    )
    await hook("cursor", after, db=hooked, tmp=tmp_path)
    # Claude Code delivering one failure twice (hook in user and project settings).
    claude_event = bash_failure("python -m pytest -q", PYTEST_FAIL, "toolu_01DUP")
    for _ in (1, 2):
        await hook("claude-code", claude_event, db=hooked, tmp=tmp_path)
    state = snapshot(hooked)
    # Two tool calls (Cursor's Shell, Claude Code's Bash: two fingerprints), one record each.
    assert [(f["tool_name"], f["occurrence_count"]) for f in state["failures"]] == [("Shell", 1), ("Bash", 1)]
    assert len(state["occurrences"]) == 2
    assert len(state["progress"]) == 2
    # Distinct deliveries are kept (the afterShellExecution one uncounted); repeats are not.
    assert count(hooked, "hook_events") == 3


async def test_the_same_command_run_again_in_one_generation_counts_again(
    stores: tuple[str, str], tmp_path: Path
) -> None:
    hooked, _ = stores
    await start(hooked)
    for n, duration in ((1, 812), (2, 790)):
        await hook(
            "cursor", shell_post("pytest -q", PYTEST_FAIL, 1, f"call_again{n}"), db=hooked, tmp=tmp_path
        )
        after = cursor("afterShellExecution", command="pytest -q", output=PYTEST_FAIL, duration=duration)
        await hook("cursor", after, db=hooked, tmp=tmp_path)
    state = snapshot(hooked)
    assert state["failures"][0]["occurrence_count"] == 2
    assert len(state["progress"]) == 2
