"""``hook claude-code`` as a real subprocess, one recorded event at a time.

Each test runs the console script on one store and the equivalent MCP tool calls (the real
server through the SDK's in-memory client) on another, and compares what the two stores
hold: the hook must write exactly what the tools write. stdout must be the documented answer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conftest import connect
from hooks_support import (
    PROJECT,
    PYTEST_FAIL,
    PYTEST_PASS,
    RUNNERS,
    bash_failure,
    claude,
    every_repeat,
    hook,
    post_bash,
    post_edit,
    pre_edit,
    pre_tool,
    run_cli,
    session_start,
    snapshot,
    stop,
)
from mcp_server_escalation.rules.reading.shell_output import digest, parse_summary

TASK = "fix-adder"
SCOPE = ["src/**", "tests/**"]


@pytest.fixture
def stores(tmp_path: Path) -> tuple[str, str]:
    """(the store the hook writes, the store the MCP tools write)."""
    return str(tmp_path / "hook.db"), str(tmp_path / "tools.db")


# A blocker read off the output pauses at its first occurrence (the default waits for a repeat).
AT_ONCE = {"blocker_repeated": 1}


async def start(*dbs: str, **extra: Any) -> None:
    """The same task, started through the MCP tool, in each store."""
    for db in dbs:
        async with connect(db) as agent:
            await agent.call("start_task", title="Fix the adder", task_id=TASK, scope=SCOPE, **extra)


async def tools(db: str, *calls: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The MCP tool calls, in order, on ``db``."""
    async with connect(db) as agent:
        return [await agent.call(name, **arguments) for name, arguments in calls]


async def test_an_edit_in_scope_is_gated_like_check_edit_and_allowed(
    stores: tuple[str, str], tmp_path: Path
) -> None:
    hooked, tooled = stores
    await start(hooked, tooled)
    run = await hook("claude-code", pre_edit(f"{PROJECT}/src/calc.py"), db=hooked, tmp=tmp_path)
    await tools(tooled, ("check_edit", {"task_id": TASK, "paths": [f"{PROJECT}/src/calc.py"]}))
    assert (run.returncode, run.stdout) == (0, "")  # no decision: the host's own rules apply
    assert snapshot(hooked) == snapshot(tooled)
    assert snapshot(hooked)["files"] == [{"task_id": TASK, "path": "src/calc.py", "source": "check_edit"}]


async def test_an_edit_out_of_scope_is_denied_and_escalates_like_check_edit(
    stores: tuple[str, str], tmp_path: Path
) -> None:
    hooked, tooled = stores
    await start(hooked, tooled)
    run = await hook(
        "claude-code", pre_edit(f"{PROJECT}/docs/notes.md", tool="Write"), db=hooked, tmp=tmp_path
    )
    [checked] = await tools(tooled, ("check_edit", {"task_id": TASK, "paths": [f"{PROJECT}/docs/notes.md"]}))
    assert run.returncode == 0
    reason = run.deny_reason
    assert checked["reasons"][0] in reason  # the check_edit reason the tool would return
    assert checked["message"] in reason  # and its directive: wait for escalation 1
    assert "docs/notes.md" in reason
    assert snapshot(hooked) == snapshot(tooled)
    assert snapshot(hooked)["triggers"] == [["scope_deviation"]]


async def test_a_finished_edit_reports_progress_with_the_file(
    stores: tuple[str, str], tmp_path: Path
) -> None:
    hooked, tooled = stores
    await start(hooked, tooled)
    path = f"{PROJECT}/src/calc.py"
    run = await hook("claude-code", post_edit(path), db=hooked, tmp=tmp_path)
    await tools(tooled, ("report_progress", {"task_id": TASK, "files_modified": [path], "note": "Edit"}))
    assert (run.returncode, run.stdout) == (0, "")
    assert snapshot(hooked) == snapshot(tooled)


async def test_a_failed_bash_command_is_recorded_like_record_failure(
    stores: tuple[str, str], tmp_path: Path
) -> None:
    hooked, tooled = stores
    await start(hooked, tooled, thresholds=AT_ONCE)
    event = bash_failure("npm test", "Error: Cannot find module 'express'")
    run = await hook("claude-code", event, db=hooked, tmp=tmp_path)
    [recorded] = await tools(
        tooled,
        (
            "record_failure",
            {
                "task_id": TASK,
                "message": "Error: Cannot find module 'express'",
                "tool_name": "Bash",
                "error_code": "exit 1",
                "attempted_action": "Bash: npm test",
            },
        ),
    )
    assert snapshot(hooked) == snapshot(tooled)
    # A missing dependency is an external blocker: the model hears at once (by default only
    # once it repeats: test_scenarios_response.py).
    context = run.json()["hookSpecificOutput"]
    assert context["hookEventName"] == "PostToolUseFailure"
    assert "escalation 1 (external blocker)" in context["additionalContext"]
    assert recorded["message"] in context["additionalContext"]


@pytest.mark.parametrize("runner", sorted(RUNNERS))
async def test_a_failing_test_run_is_a_failure_and_a_test_run_for_each_runner(
    runner: str, stores: tuple[str, str], tmp_path: Path
) -> None:
    hooked, tooled = stores
    await start(hooked, tooled)
    command, output, passed, failed = RUNNERS[runner]
    run = await hook("claude-code", bash_failure(command, output), db=hooked, tmp=tmp_path)
    summary = parse_summary(output)
    assert summary is not None
    await tools(
        tooled,
        (
            "record_failure",
            {
                "task_id": TASK,
                "message": digest(output),
                "tool_name": "Bash",
                "error_code": "exit 1",
                "attempted_action": f"Bash: {command}",
            },
        ),
        (
            "report_progress",
            {
                "task_id": TASK,
                "tests_passed": passed,
                "tests_failed": failed,
                "outcome": "failure",
                "note": f"{runner}: {summary.line}",
            },
        ),
    )
    assert (run.returncode, run.stdout) == (0, "")
    assert snapshot(hooked) == snapshot(tooled)
    assert [(p["tests_passed"], p["tests_failed"]) for p in snapshot(hooked)["progress"]] == [
        (passed, failed)
    ]


async def test_a_passing_test_run_is_a_successful_test_run(stores: tuple[str, str], tmp_path: Path) -> None:
    hooked, tooled = stores
    await start(hooked, tooled)
    run = await hook("claude-code", post_bash("python -m pytest -q", PYTEST_PASS), db=hooked, tmp=tmp_path)
    await tools(
        tooled,
        (
            "report_progress",
            {
                "task_id": TASK,
                "tests_passed": 3,
                "tests_failed": 0,
                "outcome": "success",
                "note": "pytest: 3 passed in 0.04s",
            },
        ),
    )
    assert (run.returncode, run.stdout) == (0, "")
    assert snapshot(hooked) == snapshot(tooled)


async def test_a_successful_command_is_a_successful_operation_and_counts_when_configured(
    stores: tuple[str, str], tmp_path: Path
) -> None:
    hooked, tooled = stores
    await start(hooked, tooled)
    config = tmp_path / "config.toml"
    config.write_text('[hooks]\nattempts = ["test_run", "command"]\n', encoding="utf-8")
    run = await hook(
        "claude-code", post_bash("npm run build", "built in 2.1s"), db=hooked, tmp=tmp_path,
        ESCALATION_CONFIG=str(config),
    )  # fmt: skip
    await tools(tooled, ("report_progress", {"task_id": TASK, "outcome": "success", "note": "npm run build"}))
    assert (run.returncode, run.stdout) == (0, "")
    assert snapshot(hooked) == snapshot(tooled)


async def test_only_the_failing_command_succeeding_ends_an_error_run_and_no_success_counts_an_attempt(
    stores: tuple[str, str], tmp_path: Path
) -> None:
    hooked, _ = stores
    await start(hooked)
    counting = {"ESCALATION_CONFIG": every_repeat(tmp_path)}  # the same command failing twice counts
    for n in (1, 2):
        await hook(
            "claude-code",
            bash_failure("npm run lint", PYTEST_FAIL, f"toolu_f{n}"),
            db=hooked,
            tmp=tmp_path,
            **counting,
        )
    before = snapshot(hooked)["tasks"][0]
    assert before["consecutive_same_error"] == 2
    for n in range(6):  # other commands: an agent edits and looks around between its tries
        await hook(
            "claude-code",
            post_bash("npm run build", "ok", f"toolu_b{n}"),
            db=hooked,
            tmp=tmp_path,
            **counting,
        )
    between = snapshot(hooked)["tasks"][0]
    # The failing command again, with what does not change what it runs (cd, 2>&1, | tail).
    await hook(
        "claude-code",
        post_bash("cd /work && npm run lint 2>&1 | tail -5", "ok", "toolu_ok"),
        db=hooked,
        tmp=tmp_path,
        **counting,
    )
    after = snapshot(hooked)
    assert (between["consecutive_same_error"], between["attempts_without_file_change"]) == (2, 0)
    assert (
        after["tasks"][0]["consecutive_same_error"],
        after["tasks"][0]["attempts_without_file_change"],
    ) == (0, 0)
    assert after["escalations"] == []


async def test_files_a_successful_shell_command_writes_in_the_project_are_progress(
    stores: tuple[str, str], tmp_path: Path
) -> None:
    hooked, _ = stores
    await start(hooked)
    command = "sed -i 's/a - b/a + b/' src/calc.py && cat <<'EOF' > /tmp/scratch.py\nprint(1)\nEOF"
    await hook("claude-code", post_bash(command, "", "toolu_sed"), db=hooked, tmp=tmp_path)
    state = snapshot(hooked)
    assert [f["path"] for f in state["files"]] == ["src/calc.py"]


async def test_reading_and_searching_are_never_recorded(stores: tuple[str, str], tmp_path: Path) -> None:
    hooked, _ = stores
    await start(hooked)
    before = snapshot(hooked)
    reading = [
        claude("PostToolUse", tool_name="Read", tool_input={"file_path": f"{PROJECT}/src/calc.py"},
               tool_response={"type": "text"}, tool_use_id="toolu_r1"),
        claude("PostToolUse", tool_name="Grep", tool_input={"pattern": "def add"}, tool_use_id="toolu_r2"),
        post_bash("grep -rn 'def add' src", "src/calc.py:1:def add(a, b):", "toolu_r3"),
        post_bash("git status && git diff", "nothing to commit", "toolu_r4"),
        post_bash("cat src/calc.py | head -20", "def add(a, b):", "toolu_r5"),
        bash_failure("cat src/missing.py", "cat: src/missing.py: No such file or directory", "toolu_r6"),
        claude("PostToolUseFailure", tool_name="Read", tool_input={"file_path": "/nope"},
               error="File does not exist.", tool_use_id="toolu_r7"),
        claude("PostToolUse", tool_name="mcp__escalation__get_task", tool_input={"task_id": TASK},
               tool_use_id="toolu_r8"),
    ]  # fmt: skip
    for event in reading:
        run = await hook("claude-code", event, db=hooked, tmp=tmp_path)
        assert (run.returncode, run.stdout) == (0, "")
    assert snapshot(hooked) == before


async def test_a_failed_edit_is_recorded_with_its_file(stores: tuple[str, str], tmp_path: Path) -> None:
    hooked, tooled = stores
    await start(hooked, tooled)
    path = f"{PROJECT}/src/calc.py"
    event = claude(
        "PostToolUseFailure",
        tool_name="Edit",
        tool_input={"file_path": path, "old_string": "x = 1", "new_string": "x = 2"},
        tool_use_id="toolu_ed1",
        error="String to replace not found in file.\nString: x = 1",
        is_interrupt=False,
    )
    run = await hook("claude-code", event, db=hooked, tmp=tmp_path)
    await tools(
        tooled,
        (
            "record_failure",
            {
                "task_id": TASK,
                "message": "String to replace not found in file.\nString: x = 1",
                "tool_name": "Edit",
                "file": path,
                "attempted_action": f"Edit {path}",
            },
        ),
    )
    assert (run.returncode, run.stdout) == (0, "")
    assert snapshot(hooked) == snapshot(tooled)
    assert snapshot(hooked)["occurrences"][0]["file"] == "src/calc.py"


async def test_a_new_session_starts_with_the_tasks_feedback(stores: tuple[str, str], tmp_path: Path) -> None:
    hooked, _ = stores
    await start(hooked)
    async with connect(hooked) as agent:
        raised = await agent.call("raise_escalation", task_id=TASK, reason="Which rounding mode?")
    escalation_id = raised["escalation"]["escalation_id"]
    answer = await run_cli(
        "--db", hooked, "escalations", "respond", str(escalation_id), "--guidance", "Round half to even.",
        tmp=tmp_path,
    )  # fmt: skip
    assert answer.returncode == 0, answer.stderr
    async with connect(hooked) as agent:
        await agent.call("acknowledge_response", escalation_id=escalation_id)
        feedback = await agent.call("get_feedback", task_id=TASK, max_chars=8000)
    run = await hook("claude-code", session_start(), db=hooked, tmp=tmp_path)
    out = run.json()["hookSpecificOutput"]
    assert out["hookEventName"] == "SessionStart"
    assert feedback["rendered"] in out["additionalContext"]
    assert "Round half to even." in out["additionalContext"]
    assert f"task {TASK}" in out["additionalContext"]


async def test_a_session_in_a_project_without_a_task_gets_no_context(tmp_path: Path) -> None:
    db = str(tmp_path / "empty.db")
    run = await hook("claude-code", session_start(), db=db, tmp=tmp_path)
    assert (run.returncode, run.stdout) == (0, "")
    assert snapshot(db)["tasks"] == []  # reading events never create a task


async def test_stop_is_blocked_once_while_the_latest_test_run_fails(
    stores: tuple[str, str], tmp_path: Path
) -> None:
    hooked, _ = stores
    await start(hooked)
    assert (await hook("claude-code", stop(), db=hooked, tmp=tmp_path)).stdout == ""  # nothing ran yet
    await hook("claude-code", bash_failure("python -m pytest -q", PYTEST_FAIL), db=hooked, tmp=tmp_path)
    blocked = await hook("claude-code", stop(), db=hooked, tmp=tmp_path)
    assert blocked.json()["decision"] == "block"
    assert "1 failing and 2 passing" in blocked.json()["reason"]
    # Claude continues because of us and tries to stop again: never a second block.
    again = await hook("claude-code", stop(active=True), db=hooked, tmp=tmp_path)
    assert (again.returncode, again.stdout) == (0, "")
    await hook(
        "claude-code", post_bash("python -m pytest -q", PYTEST_PASS, "toolu_pass"), db=hooked, tmp=tmp_path
    )
    assert (await hook("claude-code", stop(), db=hooked, tmp=tmp_path)).stdout == ""


async def test_stop_while_an_escalation_is_pending_tells_the_user_and_lets_the_agent_stop(
    stores: tuple[str, str], tmp_path: Path
) -> None:
    hooked, _ = stores
    await start(hooked, thresholds=AT_ONCE)
    await hook(
        "claude-code",
        bash_failure("npm test", "Error: Cannot find module 'express'"),
        db=hooked,
        tmp=tmp_path,
    )
    run = await hook("claude-code", stop(), db=hooked, tmp=tmp_path)
    out = run.json()
    assert "decision" not in out
    assert "escalations respond 1" in out["systemMessage"]


async def test_stop_can_be_switched_off(stores: tuple[str, str], tmp_path: Path) -> None:
    hooked, _ = stores
    await start(hooked)
    await hook("claude-code", bash_failure("python -m pytest -q", PYTEST_FAIL), db=hooked, tmp=tmp_path)
    config = tmp_path / "config.toml"
    config.write_text("[hooks]\nstop = false\n", encoding="utf-8")
    run = await hook("claude-code", stop(), db=hooked, tmp=tmp_path, ESCALATION_CONFIG=str(config))
    assert (run.returncode, run.stdout) == (0, "")


async def test_a_read_during_a_pause_is_allowed_and_any_other_tool_denied(
    stores: tuple[str, str], tmp_path: Path
) -> None:
    hooked, _ = stores
    await start(hooked, thresholds=AT_ONCE)
    await hook(
        "claude-code",
        bash_failure("npm test", "Error: Cannot find module 'express'"),
        db=hooked,
        tmp=tmp_path,
    )
    allowed = [
        pre_tool("Read", {"file_path": f"{PROJECT}/src/calc.py"}),
        pre_tool("Grep", {"pattern": "add"}),
        pre_tool("Bash", {"command": "git diff"}),
        pre_tool("mcp__escalation__get_escalation", {"escalation_id": 1, "wait_seconds": 30}),
        pre_tool("mcp__escalation__acknowledge_response", {"escalation_id": 1}),
    ]
    for event in allowed:
        run = await hook("claude-code", event, db=hooked, tmp=tmp_path)
        assert (run.returncode, run.stdout) == (0, ""), event["tool_name"]
    denied = [
        pre_tool("Bash", {"command": "npm install express"}),
        pre_tool("Bash", {"command": "mcp-server-escalation escalations respond 1 --approve"}),
        pre_tool("mcp__github__create_pull_request", {"title": "x"}),
        pre_tool("Agent", {"prompt": "fix it"}),
        pre_edit(f"{PROJECT}/src/calc.py"),
    ]
    for event in denied:
        run = await hook("claude-code", event, db=hooked, tmp=tmp_path)
        assert "get_escalation(1, wait_seconds=4)" in run.deny_reason, event["tool_name"]
    assert snapshot(hooked)["files"] == []  # the denied edit was never counted


async def test_the_hosts_own_tool_search_and_resource_tools_pass_during_a_pause(
    stores: tuple[str, str], tmp_path: Path
) -> None:
    # Claude Code defers MCP tools behind ToolSearch: denied, an agent cannot load
    # get_escalation to wait for the answer.
    hooked, _ = stores
    await start(hooked, thresholds=AT_ONCE)
    await hook(
        "claude-code",
        bash_failure("npm test", "Error: Cannot find module 'express'"),
        db=hooked,
        tmp=tmp_path,
    )
    before = snapshot(hooked)
    assert before["escalations"], "the failure should have paused the task"
    for event in (
        pre_tool("ToolSearch", {"query": "select:mcp__escalation__get_escalation", "max_results": 1}),
        pre_tool("ListMcpResourcesTool", {}),
        pre_tool("ReadMcpResourceTool", {"server": "escalation", "uri": "escalation://tasks"}),
        claude("PostToolUseFailure", tool_name="ToolSearch", tool_input={"query": "x"}, error="no match"),
    ):
        run = await hook("claude-code", event, db=hooked, tmp=tmp_path)
        assert (run.returncode, run.stdout) == (0, ""), event["tool_name"]
    assert snapshot(hooked) == before  # let through, and nothing recorded
