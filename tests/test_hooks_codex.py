"""``hook codex``: Codex's payloads read into events, and the console script end to end.

Codex sends Claude Code's event names with its own tools: ``Bash`` for every shell tool and
``apply_patch`` (the whole patch in ``tool_input.command``) for every edit, a string as
``tool_response``, no ``PostToolUseFailure``, and it rejects answer fields it does not
support (``continue``/``stopReason``/``additionalContext`` on ``PreToolUse``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conftest import connect
from hooks_support import (
    PROJECT,
    PYTEST_FAIL,
    codex,
    codex_patch,
    codex_post_bash,
    codex_post_patch,
    codex_pre_patch,
    hook,
    hook_process,
    snapshot,
)
from mcp_server_escalation.hooks import codex as codex_host
from mcp_server_escalation.hooks.events import Answer
from mcp_server_escalation.hooks.protocol import parse_payload

TASK = "fix-adder"
SCOPE = ["src/**", "tests/**"]
TWO_FILES = codex_patch(
    "*** Update File: src/calc.py",
    "@@ def add(a, b):",
    "-    return a - b",
    "+    return a + b",
    f"*** Add File: {PROJECT}/tests/test_calc.py",
    "+from src.calc import add",
)


@pytest.fixture
def db(tmp_path: Path) -> str:
    """The store the hook writes."""
    return str(tmp_path / "hook.db")


async def start(db: str, **extra: Any) -> None:
    """The task, started through the MCP tool."""
    async with connect(db) as agent:
        await agent.call("start_task", title="Fix the adder", task_id=TASK, scope=SCOPE, **extra)


# --- Reading Codex's payloads (pure) ------------------------------------------------------


def test_a_patch_names_each_file_it_adds_updates_moves_and_deletes_resolved_against_cwd() -> None:
    patch = codex_patch(
        "*** Update File: src/app.py",
        "*** Move to: src/main.py",
        "@@",
        "+x = 1",
        "*** Add File: /elsewhere/new.txt",
        "+hello",
        "*** Delete File: obsolete.txt",
        "*** Update File: src/app.py",
    )
    event = parse_payload(codex_pre_patch(patch), "codex")
    assert (event.host, event.kind, event.tool_name) == ("codex", "pre_tool", "apply_patch")
    assert event.paths == (
        f"{PROJECT}/src/app.py",
        f"{PROJECT}/src/main.py",
        "/elsewhere/new.txt",
        f"{PROJECT}/obsolete.txt",
    )
    assert event.file_path == f"{PROJECT}/src/app.py"
    assert event.command is None  # a patch is not a shell command


def test_a_shell_call_is_bash_with_its_command_and_the_summary_gives_the_exit_status() -> None:
    pre = parse_payload(
        codex("PreToolUse", tool_name="Bash", tool_input={"command": "npm test"}, tool_use_id="call_1"),
        "codex",
    )
    assert (pre.kind, pre.tool_name, pre.command, pre.tool_use_id) == (
        "pre_tool",
        "Bash",
        "npm test",
        "call_1",
    )
    summary = "Chunk ID: 4f1c\nWall time: 0.8 seconds\nProcess exited with code 2\nOutput:\nboom\n"
    post = parse_payload(codex_post_bash("npm test", summary), "codex")
    assert (post.kind, post.exit_code, post.output, post.outcome_unknown) == ("post_tool", 2, "boom\n", False)
    plain = parse_payload(codex_post_bash("npm test", "all good\n"), "codex")
    assert (plain.exit_code, plain.output, plain.outcome_unknown) == (None, "all good\n", True)


def test_stop_session_start_and_permission_request_are_read_with_their_fields() -> None:
    stopped = parse_payload(codex("Stop", stop_hook_active=True, last_assistant_message="Done."), "codex")
    assert (stopped.kind, stopped.stop_hook_active) == ("stop", True)
    started = parse_payload({**codex("SessionStart", source="startup"), "turn_id": None}, "codex")
    assert (started.kind, started.session_id) == ("session_start", "019a2c3e-codex-session")
    asked = parse_payload(
        codex(
            "PermissionRequest",
            tool_name="Bash",
            tool_input={"command": "rm -rf build", "description": "Clean the build folder"},
        ),
        "codex",
    )
    assert (asked.kind, asked.command, asked.description) == (
        "permission_request",
        "rm -rf build",
        "Clean the build folder",
    )
    assert asked.request_digest  # the same request asked again is recognised by it
    unknown = parse_payload(codex("UserPromptSubmit", prompt="hi"), "codex")
    assert unknown.kind == "unknown"


def test_a_pause_on_codex_denies_without_the_fields_codex_rejects_before_a_tool() -> None:
    event = parse_payload(
        codex("PreToolUse", tool_name="Bash", tool_input={"command": "make"}, tool_use_id="c"), "codex"
    )
    out = codex_host.encode(Answer(deny="wait for escalation 1", halt="answer escalation 1"), event)
    assert out == {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "wait for escalation 1",
        },
        "systemMessage": "answer escalation 1",
    }


# --- The console script ---------------------------------------------------------------------


async def test_a_patch_with_a_file_out_of_scope_is_denied_whole_in_codex_shape(
    db: str, tmp_path: Path
) -> None:
    await start(db)
    patch = codex_patch("*** Update File: src/calc.py", "@@", "+x = 1", "*** Add File: docs/notes.md", "+x")
    run = await hook_process("codex", codex_pre_patch(patch), db=db, tmp=tmp_path)  # as Codex runs it
    assert run.returncode == 0
    out = run.json()["hookSpecificOutput"]
    assert (out["hookEventName"], out["permissionDecision"]) == ("PreToolUse", "deny")
    assert "docs/notes.md" in out["permissionDecisionReason"]
    assert set(run.json()) == {"hookSpecificOutput"}
    assert snapshot(db)["triggers"] == [["scope_deviation"]]


async def test_a_patch_in_scope_is_gated_for_each_file_and_allowed(db: str, tmp_path: Path) -> None:
    await start(db)
    run = await hook("codex", codex_pre_patch(TWO_FILES), db=db, tmp=tmp_path)
    assert (run.returncode, run.stdout) == (0, "")
    assert [f["path"] for f in snapshot(db)["files"]] == ["src/calc.py", "tests/test_calc.py"]


async def test_a_finished_patch_reports_progress_with_every_file(db: str, tmp_path: Path) -> None:
    await start(db)
    run = await hook("codex", codex_post_patch(TWO_FILES), db=db, tmp=tmp_path)
    assert (run.returncode, run.stdout) == (0, "")
    held = snapshot(db)
    assert [(f["path"], f["source"]) for f in held["files"]] == [
        ("src/calc.py", "report_progress"),
        ("tests/test_calc.py", "report_progress"),
    ]
    assert held["progress"][0]["note"] == "apply_patch"


async def test_a_failing_test_run_without_an_exit_status_is_a_failure_and_a_test_run(
    db: str, tmp_path: Path
) -> None:
    await start(db)
    run = await hook("codex", codex_post_bash("python -m pytest -q", PYTEST_FAIL), db=db, tmp=tmp_path)
    assert run.returncode == 0
    held = snapshot(db)
    assert [(p["tests_passed"], p["tests_failed"], p["outcome"]) for p in held["progress"]] == [
        (2, 1, "failure")
    ]
    assert [(f["tool_name"], f["error_code"]) for f in held["failures"]] == [("Bash", None)]


async def test_a_command_whose_summary_says_it_failed_is_recorded_with_its_exit_status(
    db: str, tmp_path: Path
) -> None:
    await start(db)
    response = "Process exited with code 2\nOutput:\nmake: *** No rule to make target 'bild'.  Stop.\n"
    await hook("codex", codex_post_bash("make bild", response), db=db, tmp=tmp_path)
    [failure] = snapshot(db)["failures"]
    assert (failure["error_code"], failure["attempted_action"]) == ("exit 2", "Bash: make bild")
    assert "No rule to make target" in failure["message"]


async def test_a_command_of_unknown_outcome_is_not_taken_for_a_success(db: str, tmp_path: Path) -> None:
    await start(db)
    await hook("codex", codex_post_bash("make build", "gcc -o app main.c\n"), db=db, tmp=tmp_path)
    held = snapshot(db)
    assert (held["progress"], held["failures"]) == ([], [])


async def test_during_a_pause_codex_tools_are_denied_and_reads_let_through(db: str, tmp_path: Path) -> None:
    await start(db)
    await hook("codex", codex_pre_patch(codex_patch("*** Add File: docs/x.md", "+x")), db=db, tmp=tmp_path)
    config = tmp_path / "config.toml"
    config.write_text("[hooks]\nhalt_while_pending = true\n", encoding="utf-8")
    denied = await hook(
        "codex",
        codex("PreToolUse", tool_name="Bash", tool_input={"command": "npm install"}, tool_use_id="c2"),
        db=db,
        tmp=tmp_path,
        ESCALATION_CONFIG=str(config),
    )
    out = denied.json()
    assert "get_escalation(1, wait_seconds=4)" in out["hookSpecificOutput"]["permissionDecisionReason"]
    assert "continue" not in out  # Codex would reject the whole answer
    assert "stopReason" not in out
    assert "escalations show 1" in out["systemMessage"]
    passing = (
        ("Bash", {"command": "git diff"}),
        ("mcp__escalation__get_escalation", {}),
        ("tool_search", {"query": "get_escalation"}),
        ("list_mcp_resources", {}),
        ("read_mcp_resource", {"server": "escalation", "uri": "escalation://tasks"}),
    )
    for tool, tool_input in passing:
        allowed = await hook(
            "codex",
            codex("PreToolUse", tool_name=tool, tool_input=tool_input, tool_use_id="c3"),
            db=db,
            tmp=tmp_path,
        )
        assert (allowed.returncode, allowed.stdout) == (0, ""), tool


async def test_stop_is_blocked_once_while_the_tests_fail_and_a_session_gets_the_feedback(
    db: str, tmp_path: Path
) -> None:
    await start(db)
    await hook("codex", codex_post_bash("python -m pytest -q", PYTEST_FAIL), db=db, tmp=tmp_path)
    blocked = await hook("codex", codex("Stop", stop_hook_active=False), db=db, tmp=tmp_path)
    assert blocked.json()["decision"] == "block"
    assert "1 failing and 2 passing" in blocked.json()["reason"]
    again = await hook("codex", codex("Stop", stop_hook_active=True), db=db, tmp=tmp_path)
    assert (again.returncode, again.stdout) == (0, "")
    session = await hook("codex", codex("SessionStart", source="resume"), db=db, tmp=tmp_path)
    out = session.json()["hookSpecificOutput"]
    assert out["hookEventName"] == "SessionStart"
    assert f"task {TASK}" in out["additionalContext"]
