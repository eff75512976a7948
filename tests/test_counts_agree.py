"""The same count said the same everywhere: a file limit reached by files the agent reported
modified counts them as modified (not "0 modified, 6 more proposed" beside tasks list's 6/3),
and the timeline counts the paths an edit check refused, not every path it checked."""

from __future__ import annotations

from pathlib import Path

from conftest import connect
from operator_support import flat, run_cli

SIX = [f"src/f{n}.py" for n in range(6)]


async def test_a_file_limit_reached_by_reported_files_counts_them_as_modified_everywhere(
    db_path: str, tmp_path: Path
) -> None:
    async with connect(db_path) as agent:
        await agent.call("start_task", title="Six", task_id="six", thresholds={"files_modified_exceeds": 3})
        reported = await agent.call("report_progress", task_id="six", files_modified=SIX)
        task = await agent.call("get_task", task_id="six")
    escalation = reported["escalation"]
    facts = escalation["context"]["evidence"]["file_limit"]
    assert (facts["modified_count"], facts["proposed_files"]) == (6, [])
    assert task["counters"]["files_modified"] == 6
    assert "would bring" not in escalation["triggers"][0]["summary"]  # they are modified already
    db = ("--db", db_path)
    _, shown, _ = await run_cli(*db, "escalations", "show", str(escalation["escalation_id"]), home=tmp_path)
    _, listed, _ = await run_cli(*db, "tasks", "list", home=tmp_path)
    assert "6 files modified so far, over the limit of 3" in flat(shown)
    assert "more proposed" not in shown
    assert "6/3" in listed
    # Approved without a number, the limit admits what was reported.
    code, _, err = await run_cli(
        *db, "escalations", "respond", str(escalation["escalation_id"]), "--approve", home=tmp_path
    )
    assert code == 0, err
    async with connect(db_path) as agent:
        after = await agent.call("get_task", task_id="six")
    assert after["thresholds"]["files_modified_exceeds"] == 6


async def test_the_timeline_counts_the_paths_an_edit_check_refused(db_path: str, tmp_path: Path) -> None:
    async with connect(db_path) as agent:
        await agent.call("start_task", title="Scope", task_id="scoped", scope=["src/**"])
        await agent.call("check_edit", task_id="scoped", paths=["src/a.py", "docs/b.md"])
    code, out, err = await run_cli("--db", db_path, "tasks", "timeline", "scoped", home=tmp_path)
    assert code == 0, err
    assert "1 of 2 paths refused" in out
    assert "2 paths refused" not in out.replace("1 of 2 paths refused", "")
