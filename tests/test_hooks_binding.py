"""Which task a hook event belongs to (services/hooks.py): the documented rule, end to end."""

from __future__ import annotations

from pathlib import Path

from conftest import connect
from hooks_support import PROJECT, PYTEST_FAIL, bash_failure, claude, hook, snapshot
from mcp_server_escalation.services.hooks import project_candidates


def test_the_project_is_the_events_folder_then_its_parents_up_to_the_root() -> None:
    assert project_candidates("/repo", "/repo/pkg/sub") == ["/repo/pkg/sub", "/repo/pkg", "/repo"]
    assert project_candidates("/repo", "/repo") == ["/repo"]
    assert project_candidates("/repo", "/elsewhere") == ["/repo"]
    assert project_candidates("/repo", "/repository") == ["/repo"]
    assert project_candidates("/repo/", None) == ["/repo"]


def _failures_by_task(db: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for occurrence in snapshot(db)["occurrences"]:
        counts[occurrence["task_id"]] = counts.get(occurrence["task_id"], 0) + 1
    return counts


async def test_the_projects_live_task_is_used_and_other_projects_are_not(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    async with connect(db) as agent:
        await agent.call("start_task", title="here", task_id="here", project=PROJECT)
        await agent.call("start_task", title="elsewhere", task_id="elsewhere", project="/work/other")
        await agent.call("start_task", title="sub", task_id="sub", project=f"{PROJECT}/pkg")
    await hook("claude-code", bash_failure("npm test", "boom", "toolu_1"), db=db, tmp=tmp_path)
    inside = {**bash_failure("npm test", "boom", "toolu_2"), "cwd": f"{PROJECT}/pkg/src"}
    await hook("claude-code", inside, db=db, tmp=tmp_path, CLAUDE_PROJECT_DIR=PROJECT)
    assert _failures_by_task(db) == {"here": 1, "sub": 1}


async def test_escalation_task_overrides_the_rule_and_is_created_if_missing(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    async with connect(db) as agent:
        await agent.call("start_task", title="here", task_id="here", project=PROJECT)
    event = bash_failure("npm test", "boom", "toolu_1")
    await hook("claude-code", event, db=db, tmp=tmp_path, ESCALATION_TASK="agent-2/refactor")
    assert _failures_by_task(db) == {"agent-2/refactor": 1}
    bad = await hook("claude-code", bash_failure("npm test", "boom", "toolu_2"), db=db, tmp=tmp_path,
                     ESCALATION_TASK="no spaces allowed")  # fmt: skip
    assert (bad.returncode, bad.stdout) == (0, "")
    assert "ESCALATION_TASK" in bad.stderr


async def test_a_session_gets_a_fresh_task_after_its_own_one_was_completed(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    passing = claude(
        "PostToolUse",
        tool_name="Bash",
        tool_input={"command": "pytest -q"},
        tool_response={"stdout": "3 passed in 0.02s", "stderr": ""},
        tool_use_id="toolu_pass",
    )
    await hook("claude-code", passing, db=db, tmp=tmp_path)
    async with connect(db) as agent:
        await agent.call("end_task", task_id="claude-code-abc123", outcome="completed")
    await hook("claude-code", bash_failure("pytest -q", PYTEST_FAIL, "toolu_after"), db=db, tmp=tmp_path)
    tasks = {t["task_id"]: t["status"] for t in snapshot(db)["tasks"]}
    assert tasks == {"claude-code-abc123": "completed", "claude-code-abc123-2": "active"}
