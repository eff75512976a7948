"""The whole loop through hooks alone: no MCP tool call anywhere, not even start_task.

Three identical failing test runs -> a repeated_error escalation -> the next edit is denied
(the pause) -> the operator answers through the CLI -> the next call is denied once more,
carrying the answer, and the hook acknowledges it on the agent's behalf -> the edit is
allowed. Also: an operator's termination holds for the rest of the session.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from hooks_support import (
    PROJECT,
    PYTEST_FAIL,
    bash_failure,
    every_repeat,
    hook,
    hook_process,
    pre_edit,
    pre_tool,
    run_cli,
    snapshot,
    stop,
)
from mcp_server_escalation.datafiles import data_dir

TASK = "claude-code-abc123"  # the task the hooks create for session abc123
GUIDANCE = "Fix add() in src/calc.py; it drops the carry."


async def _escalation(db: str, tmp: Path, escalation_id: int) -> dict[str, object]:
    shown = await run_cli("--db", db, "escalations", "show", str(escalation_id), "--json", tmp=tmp)
    assert shown.returncode == 0, shown.stderr
    return json.loads(shown.stdout)  # type: ignore[no-any-return]


async def _fail_three_times(db: str, tmp: Path) -> str:
    context = ""
    for n in (1, 2, 3):
        run = await hook(
            "claude-code", bash_failure("python -m pytest -q", PYTEST_FAIL, f"toolu_run{n}"), db=db, tmp=tmp,
            ESCALATION_CONFIG=every_repeat(tmp),
        )  # fmt: skip
        assert run.returncode == 0
        context = run.json()["hookSpecificOutput"]["additionalContext"] if run.stdout else ""
        # The second one warns the model (no human yet), the third pauses.
        assert bool(context) is (n >= 2), f"run {n}: {run.stdout!r}"
        if n == 2:
            warned = "Warning: the same error 2 times (at most one other error between), 3 pages a human"
            assert warned in context
            assert "raised escalation" not in context
    return context


async def test_three_identical_failures_pause_the_agent_until_the_operator_answers(tmp_path: Path) -> None:
    db = str(tmp_path / "loop.db")
    context = await _fail_three_times(db, tmp_path)
    assert "escalation 1 (repeated error)" in context
    assert "get_escalation(1, wait_seconds=4)" in context
    state = snapshot(db)
    assert [t["task_id"] for t in state["tasks"]] == [TASK]
    assert state["tasks"][0]["status"] == "paused"
    assert state["triggers"] == [["repeated_error"]]
    assert [o["attempted_action"] for o in state["occurrences"]] == ["Bash: python -m pytest -q"] * 3

    # The pause: the next edit is denied, with what to do.
    edit = pre_edit(f"{PROJECT}/src/calc.py", "toolu_edit1")
    denied = await hook_process("claude-code", edit, db=db, tmp=tmp_path)  # as the host runs it
    assert "escalation 1 (repeated error)" in denied.deny_reason
    assert snapshot(db)["files"] == []

    # The operator answers from the CLI (in this process: another one than the hooks').
    answer = await run_cli("--db", db, "escalations", "respond", "1", "--guidance", GUIDANCE, tmp=tmp_path)
    assert answer.returncode == 0, answer.stderr
    assert (await _escalation(db, tmp_path, 1))["acknowledged_at"] is None

    # The next call is held back once to deliver the answer, which is then acknowledged.
    delivered = await hook_process(
        "claude-code", pre_edit(f"{PROJECT}/src/calc.py", "toolu_edit2"), db=db, tmp=tmp_path
    )
    reason = delivered.deny_reason
    assert GUIDANCE in reason
    assert "now acknowledged" in reason
    acknowledged = await _escalation(db, tmp_path, 1)
    assert acknowledged["acknowledged_at"] is not None
    assert acknowledged["delivered_at"] is not None
    assert snapshot(db)["tasks"][0]["status"] == "active"
    assert snapshot(db)["tasks"][0]["consecutive_same_error"] == 0  # a fresh allowance

    # After the acknowledgement the edit is allowed (no decision) and counted.
    allowed = await hook(
        "claude-code", pre_edit(f"{PROJECT}/src/calc.py", "toolu_edit3"), db=db, tmp=tmp_path
    )
    assert (allowed.returncode, allowed.stdout) == (0, "")
    assert snapshot(db)["files"] == [{"task_id": TASK, "path": "src/calc.py", "source": "check_edit"}]


async def test_an_agent_with_the_mcp_tools_acknowledges_itself_when_configured_so(tmp_path: Path) -> None:
    db = str(tmp_path / "strict.db")
    config = tmp_path / "config.toml"
    config.write_text("[hooks]\nacknowledge_on_delivery = false\n", encoding="utf-8")
    await _fail_three_times(db, tmp_path)
    await run_cli("--db", db, "escalations", "respond", "1", "--guidance", "Use Decimal.", tmp=tmp_path)
    for n in (1, 2):  # never delivered by the hook: denied until the agent acknowledges
        run = await hook(
            "claude-code", pre_edit(f"{PROJECT}/src/calc.py", f"toolu_s{n}"), db=db, tmp=tmp_path,
            ESCALATION_CONFIG=str(config),
        )  # fmt: skip
        assert "acknowledge_response(1)" in run.deny_reason
    own = pre_tool("mcp__escalation__acknowledge_response", {"escalation_id": 1})
    let_through = await hook("claude-code", own, db=db, tmp=tmp_path, ESCALATION_CONFIG=str(config))
    assert (let_through.returncode, let_through.stdout) == (0, "")
    assert (await _escalation(db, tmp_path, 1))["acknowledged_at"] is None


async def test_an_answer_waiting_at_stop_is_delivered_once(tmp_path: Path) -> None:
    db = str(tmp_path / "stop.db")
    await _fail_three_times(db, tmp_path)
    await run_cli(
        "--db", db, "escalations", "respond", "1", "--override", "Rewrite add() with Decimal.", tmp=tmp_path
    )
    blocked = await hook("claude-code", stop(), db=db, tmp=tmp_path)
    assert blocked.json()["decision"] == "block"
    assert "Rewrite add() with Decimal." in blocked.json()["reason"]
    assert (await _escalation(db, tmp_path, 1))["acknowledged_at"] is not None


async def test_a_termination_stops_the_session_for_good(tmp_path: Path) -> None:
    db = str(tmp_path / "terminate.db")
    await _fail_three_times(db, tmp_path)
    done = await run_cli(
        "--db", db, "escalations", "respond", "1", "--terminate", "Out of budget.", tmp=tmp_path
    )
    assert done.returncode == 0, done.stderr
    delivered = await hook(
        "claude-code", pre_tool("Bash", {"command": "npm test"}, "toolu_t1"), db=db, tmp=tmp_path
    )
    out = delivered.json()
    assert "Out of budget." in out["hookSpecificOutput"]["permissionDecisionReason"]
    assert out["continue"] is False  # the operator said stop: halt the agent
    assert "Out of budget." in out["stopReason"]
    # The task stays terminated for this session: no fresh task, every change refused.
    later = await hook("claude-code", pre_edit(f"{PROJECT}/src/calc.py", "toolu_t2"), db=db, tmp=tmp_path)
    assert "is terminated by a human" in later.deny_reason
    reading = await hook(
        "claude-code", pre_tool("Read", {"file_path": f"{PROJECT}/a"}, "toolu_t3"), db=db, tmp=tmp_path
    )
    assert reading.stdout == ""
    assert [t["task_id"] for t in snapshot(db)["tasks"]] == [TASK]
    assert (await hook("claude-code", stop(), db=db, tmp=tmp_path)).stdout == ""


async def test_a_terminated_task_is_refused_in_the_words_of_the_prompts_never_its_key(tmp_path: Path) -> None:
    # The refusal said the task "is terminated_by_human": the store's key reached the model.
    prompts = tmp_path / "prompts"
    shutil.copytree(data_dir("prompts"), prompts)
    directives = prompts / "directives.toml"
    said = "Task {task_id} was stopped by its operator: change nothing more in it."
    text = directives.read_text(encoding="utf-8")
    stop_template = "[templates.directive_stop_terminated_by_human]\ntext = "
    start = text.index(stop_template) + len(stop_template)
    end = text.index("\n", start)
    directives.write_text(text[:start] + json.dumps(said) + text[end:], encoding="utf-8")
    db = str(tmp_path / "terminate.db")
    await _fail_three_times(db, tmp_path)
    await run_cli("--db", db, "escalations", "respond", "1", "--terminate", "Out of budget.", tmp=tmp_path)
    words = {"ESCALATION_PROMPTS": str(prompts)}
    delivering = pre_tool("Bash", {"command": "npm test"}, "toolu_t1")
    await hook("claude-code", delivering, db=db, tmp=tmp_path, **words)
    later = await hook(
        "claude-code", pre_edit(f"{PROJECT}/src/calc.py", "toolu_t2"), db=db, tmp=tmp_path, **words
    )
    assert later.deny_reason.endswith(said.format(task_id=TASK))
    assert "terminated_by_human" not in later.deny_reason
