"""Malformed and hostile events never crash the hook, never block by accident, never write
garbage; a store that cannot be opened is no decision; the hook path never loads the SDK."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from bounds import HUNG_AFTER
from conftest import connect
from hooks_support import (
    PROJECT,
    bash_failure,
    claude,
    count,
    cursor,
    environment,
    hook,
    hook_process,
    post_bash,
    pre_edit,
    pre_tool,
    run_script,
    snapshot,
    stop,
)

HUGE = "A" * 2_000_000

NO_DECISION_PAYLOADS: list[tuple[str, bytes]] = [
    ("not json", b"this is not json"),
    ("empty", b""),
    ("a list", b"[1, 2, 3]"),
    ("a string", b'"PreToolUse"'),
    ("invalid utf-8", b"\xff\xfe{\x00}"),
    ("deep nesting", b"[" * 200_000 + b"]" * 200_000),
    ("no event name", json.dumps({"tool_name": "Edit"}).encode()),
    ("event name not a string", json.dumps({"hook_event_name": 5}).encode()),
    ("unknown event", json.dumps(claude("Notification", message="hi", notification_type="idle")).encode()),
    ("unknown cursor event", json.dumps(cursor("beforeTabFileRead", file_path="/x")).encode()),
    ("subagent stop", json.dumps(claude("SubagentStop", stop_hook_active=False)).encode()),
    (
        "tool name of the wrong type",
        json.dumps(claude("PreToolUse", tool_name=["Edit"], tool_input={"file_path": "/x"})).encode(),
    ),
    (
        "tool input a string",
        json.dumps(claude("PreToolUse", tool_name="Edit", tool_input="rm -rf /")).encode(),
    ),
    ("huge tool name", json.dumps(claude("PreToolUse", tool_name=HUGE, tool_input={})).encode()),
    (
        "edit outside the project",
        json.dumps(pre_edit(f"{PROJECT}/../../etc/passwd")).encode(),
    ),
    ("edit of a relative escape", json.dumps(pre_edit("../../../etc/shadow")).encode()),
    ("edit path with a NUL", json.dumps(pre_edit(f"{PROJECT}/src/a\u0000.py")).encode()),
    ("edit path too long", json.dumps(pre_edit(f"{PROJECT}/" + "d/" * 3000 + "x.py")).encode()),
    ("stop without fields", json.dumps({"hook_event_name": "Stop"}).encode()),
    ("stop_hook_active not a bool", json.dumps(claude("Stop", stop_hook_active="true")).encode()),
]


@pytest.mark.parametrize(("name", "raw"), NO_DECISION_PAYLOADS, ids=[n for n, _ in NO_DECISION_PAYLOADS])
async def test_a_malformed_or_hostile_event_gets_no_decision_and_writes_nothing(
    name: str, raw: bytes, tmp_path: Path
) -> None:
    db = str(tmp_path / "s.db")
    run = await hook("claude-code", raw, db=db, tmp=tmp_path)
    assert (run.returncode, run.stdout) == (0, ""), run.stderr
    assert len(run.stderr.strip().splitlines()) <= 1
    if await anyio.Path(db).exists():
        state = snapshot(db)
        assert (state["tasks"], state["failures"], state["progress"]) == ([], [], [])


async def test_hostile_values_in_a_recorded_event_are_clipped_never_stored_whole(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    command = "npm run build -- " + "x" * 500_000
    output = "\n".join(f"error line {i} " + "y" * 300 for i in range(20_000))
    run = await hook("claude-code", bash_failure(command, output, "toolu_huge"), db=db, tmp=tmp_path)
    assert (run.returncode, run.stdout) == (0, "")
    [failure] = snapshot(db)["failures"]
    assert len(failure["message"]) <= 4096
    assert len(failure["attempted_action"]) <= 1000
    assert failure["error_code"] == "exit 1"
    success = post_bash("make -j8 " + "z" * 100_000, "ok", "toolu_huge2")
    assert (await hook("claude-code", success, db=db, tmp=tmp_path)).returncode == 0
    assert all(len(p["note"] or "") <= 1000 for p in snapshot(db)["progress"])


async def test_an_absurd_exit_code_and_odd_types_do_not_crash_the_recording(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    odd = claude(
        "PostToolUseFailure",
        tool_name="Bash",
        tool_input={"command": "npm test"},
        tool_use_id="toolu_odd",
        error="Exit code 999999999999999999999999\nboom",
    )
    run = await hook("claude-code", odd, db=db, tmp=tmp_path)
    assert (run.returncode, run.stdout) == (0, "")
    [failure] = snapshot(db)["failures"]
    assert failure["error_code"] == "exit 999999999999999999999999"
    cursor_odd = cursor(
        "postToolUse",
        tool_name="Shell",
        tool_input={"command": "npm test"},
        tool_output='{"exitCode": "one", "stdout": 5}',
        tool_use_id="call_odd",
        loop_count=-3,
    )
    assert (await hook("cursor", cursor_odd, db=db, tmp=tmp_path)).returncode == 0


async def test_a_lone_surrogate_escape_in_an_event_is_recorded_as_valid_text(tmp_path: Path) -> None:
    """JSON may escape half a surrogate pair ("\\udc80": a tool printed bytes no encoding
    reads); the event is recorded with that character made U+FFFD, in a Claude Code error and
    inside a Cursor tool_output that is itself a JSON string."""
    db = str(tmp_path / "s.db")
    output = "Error: cannot decode \udc80 in build.log"
    run = await hook("claude-code", bash_failure("make \ud800", output, "toolu_lone"), db=db, tmp=tmp_path)
    assert (run.returncode, run.stdout, run.stderr) == (0, "", "")
    nested = cursor(
        "postToolUse",
        tool_name="Shell",
        tool_input={"command": "make"},
        tool_output=json.dumps({"exitCode": 2, "stdout": "fatal: \udfff broke"}),
        tool_use_id="call_lone",
    )
    run = await hook("cursor", nested, db=db, tmp=tmp_path)
    assert (run.returncode, run.stderr) == (0, "")
    first, second = snapshot(db)["failures"]
    assert "cannot decode \ufffd in build.log" in first["message"]
    assert first["attempted_action"] == "Bash: make \ufffd"
    assert "fatal: \ufffd broke" in second["message"]


async def test_edits_outside_the_project_are_gated_only_when_configured(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    plan_file = pre_edit("/home/user/.claude/plans/plan.md", tool="Write")
    assert (await hook("claude-code", plan_file, db=db, tmp=tmp_path)).stdout == ""
    config = tmp_path / "config.toml"
    config.write_text('[hooks]\noutside_project = "gate"\n', encoding="utf-8")
    gated = await hook("claude-code", plan_file, db=db, tmp=tmp_path, ESCALATION_CONFIG=str(config))
    assert "outside the project root" in gated.deny_reason


async def test_a_store_that_cannot_be_opened_is_no_decision_with_one_line_on_stderr(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")
    for db in (str(blocker / "store.db"), str(blocker)):  # under a file; a file that is no database
        run = await hook_process("claude-code", pre_edit(f"{PROJECT}/src/a.py"), db=db, tmp=tmp_path)
        assert (run.returncode, run.stdout) == (0, "")
        assert len(run.stderr.strip().splitlines()) == 1, run.stderr
        assert run.stderr.startswith("mcp-server-escalation hook: ")


async def test_a_broken_config_or_hook_command_line_never_blocks(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    config = tmp_path / "config.toml"
    config.write_text("[hooks]\nno_such_switch = true\n", encoding="utf-8")
    run = await hook(
        "claude-code", pre_edit(f"{PROJECT}/src/a.py"), db=db, tmp=tmp_path, ESCALATION_CONFIG=str(config)
    )
    assert (run.returncode, run.stdout) == (0, "")
    assert "no_such_switch" in run.stderr
    # Exit 2 means "deny" to the hosts: a typo in the hook command must not be one.
    # (Processes of the installed script: the exit status is what the host reads.)
    typo = await run_script("--db", db, "hook", "claude-cod", stdin=b"{}", tmp=tmp_path)
    bad_flag = await run_script("--db", db, "hook", "cursor", "--bogus", stdin=b"{}", tmp=tmp_path)
    assert (typo.returncode, typo.stdout, bad_flag.returncode, bad_flag.stdout) == (0, "", 0, "")


async def test_the_pause_is_never_a_side_effect_of_garbage(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    async with connect(db) as agent:
        await agent.call("start_task", title="t", task_id="t1")
    for raw in (b"{", json.dumps(stop()).encode(), json.dumps(pre_tool("Bash", {"command": HUGE})).encode()):
        run = await hook("claude-code", raw, db=db, tmp=tmp_path)
        assert (run.returncode, run.stdout) == (0, "")
    assert snapshot(db)["tasks"][0]["status"] == "active"
    assert count(db, "escalations") == 0


async def test_the_hook_path_never_imports_the_mcp_sdk(tmp_path: Path) -> None:
    """Run main() in a fresh interpreter on a real event, then look at sys.modules."""
    db = str(tmp_path / "s.db")
    payload: dict[str, Any] = bash_failure("python -m pytest -q", "1 failed, 2 passed in 0.13s", "toolu_sdk")
    probe = (
        "import sys\n"
        "from mcp_server_escalation.cli import main\n"
        f"code = main(['--db', {db!r}, 'hook', 'claude-code'])\n"
        "loaded = sorted(m for m in sys.modules if m == 'mcp' or m.startswith('mcp.'))\n"
        "sys.stderr.write('LOADED=' + ','.join(loaded) + '\\n')\n"
        "sys.exit(code)\n"
    )
    with anyio.fail_after(HUNG_AFTER):
        done = await anyio.run_process(
            [sys.executable, "-c", probe], input=json.dumps(payload).encode(), check=False,
            env=environment(tmp_path),
        )  # fmt: skip
    stderr = done.stderr.decode()
    assert done.returncode == 0, stderr
    assert "LOADED=\n" in stderr, stderr
    assert count(db, "failure_occurrences") == 1  # the path really ran
