"""How the hooks count a repeated error: again only after a change the agent made.

The hooks see every call an agent makes, its reproductions of a bug too. An error counts
again when the agent changed a file in between that the failing command does not name (it
tried a remedy and the same error came back); running the same check again with nothing
changed, or after editing only the script the command runs, reproduces the error and does
not count. A tool's refusal counts every time. Nothing depends on how many calls the task
has made: a loop is caught from the task's first call. An agent's own ``record_failure``
reports count every time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import connect
from hooks_support import PROJECT, PYTEST_FAIL, bash_failure, claude, hook, hook_process, pre_edit, snapshot
from mcp_server_escalation.models.hook_config import HooksConfig
from mcp_server_escalation.models.tasks import Counters
from mcp_server_escalation.rules.decide import triggers
from mcp_server_escalation.rules.reading.shell_work import named_files

SOURCE = f"{PROJECT}/src/calc.py"
REPRO = f"{PROJECT}/reproduce.py"
RUN_REPRO = "python reproduce.py"
RUN_TESTS = "python -m pytest -q"
REPRO_FAILS = """Traceback (most recent call last):
  File "/work/project/reproduce.py", line 3, in <module>
    print(add(1, "2"))
  File "/work/project/src/calc.py", line 2, in add
    return a + b
TypeError: unsupported operand type(s) for +: 'int' and 'str'
"""
LINT_REFUSAL = """Your proposed edit has introduced new syntax error(s). Please read this error message \
carefully and then retry editing the file.

ERRORS:
- E999 IndentationError: unexpected indent

This is how your edit would have looked if applied
-------------------------------------------------
[File: /work/project/src/calc.py (3 lines total)]
1:def add(a, b):
2:        return a + b
-------------------------------------------------
Your changes have NOT been applied. Please fix your edit command and try again.
You either need to 1) Specify the correct start/end line arguments or 2) Correct your edit code.
DO NOT re-run the same failed edit command. Running it again will lead to the same error.
"""


def edit(path: str, old: str, new: str, n: int) -> dict[str, Any]:
    """PostToolUse of an Edit of ``path`` that went through."""
    return claude(
        "PostToolUse",
        tool_name="Edit",
        tool_input={"file_path": path, "old_string": old, "new_string": new, "replace_all": False},
        tool_response={"filePath": path, "oldString": old, "newString": new, "replaceAll": False},
        tool_use_id=f"toolu_edit{n}",
    )


def refused_edit(path: str, n: int) -> dict[str, Any]:
    """PostToolUseFailure of an Edit the agent's editor refused (its lint guard)."""
    return claude(
        "PostToolUseFailure",
        tool_name="Edit",
        tool_input={"file_path": path, "old_string": "", "new_string": "        return a + b"},
        tool_use_id=f"toolu_refused{n}",
        error=LINT_REFUSAL,
        is_interrupt=False,
    )


def context(run: Any) -> str:
    return run.json()["hookSpecificOutput"]["additionalContext"] if run.stdout.strip() else ""


def paused(db: str) -> bool:
    return snapshot(db)["tasks"][0]["status"] == "paused"


async def test_a_fix_that_fails_the_same_way_after_each_edit_pauses_at_its_third_occurrence(
    tmp_path: Path,
) -> None:
    db, said = str(tmp_path / "loop.db"), []
    for n in (1, 2, 3):
        if n > 1:
            await hook("claude-code", edit(SOURCE, f"v{n - 1}", f"v{n}", n), db=db, tmp=tmp_path)
        said.append(
            context(
                await hook(
                    "claude-code", bash_failure(RUN_TESTS, PYTEST_FAIL, f"toolu_t{n}"), db=db, tmp=tmp_path
                )
            )
        )
        assert paused(db) == (n == 3), f"occurrence {n}"
    assert said[0] == ""
    assert "Warning: the same error 2 times, each after a change of yours" in said[1]
    assert "at 3 a human is paged" in said[1]
    assert "escalation 1 (repeated error)" in said[2]
    denied = await hook("claude-code", pre_edit(SOURCE, "toolu_next"), db=db, tmp=tmp_path)
    assert denied.json()["hookSpecificOutput"]["permissionDecision"] == "deny"


async def test_the_installed_hook_process_counts_the_same_way(tmp_path: Path) -> None:
    db = str(tmp_path / "process.db")
    for n in (1, 2, 3):
        if n > 1:
            await hook_process("claude-code", edit(SOURCE, f"v{n - 1}", f"v{n}", n), db=db, tmp=tmp_path)
        await hook_process(
            "claude-code", bash_failure(RUN_TESTS, PYTEST_FAIL, f"toolu_p{n}"), db=db, tmp=tmp_path
        )
    assert snapshot(db)["triggers"] == [["repeated_error"]]
    assert paused(db)


async def test_reproducing_a_bug_again_and_again_before_editing_never_pages(tmp_path: Path) -> None:
    db = str(tmp_path / "explore.db")
    # A long exploration: the bug reproduced six times, the script itself edited twice
    # (the command names it: a change of the check, not of the code).
    for n in range(1, 7):
        if n in (3, 5):
            await hook("claude-code", edit(REPRO, f"r{n}", f"r{n + 1}", n), db=db, tmp=tmp_path)
        said = context(
            await hook(
                "claude-code", bash_failure(RUN_REPRO, REPRO_FAILS, f"toolu_r{n}"), db=db, tmp=tmp_path
            )
        )
        assert said == "", f"reproduction {n} warned: {said}"
    state = snapshot(db)
    assert state["triggers"] == []
    assert state["tasks"][0]["consecutive_same_error"] == 1
    # Then a change of the code, and the same error: the first remedy that failed.
    await hook("claude-code", edit(SOURCE, "a + b", "a + int(b)", 9), db=db, tmp=tmp_path)
    after = context(
        await hook("claude-code", bash_failure(RUN_REPRO, REPRO_FAILS, "toolu_r9"), db=db, tmp=tmp_path)
    )
    assert "the same error 2 times, each after a change of yours" in after
    assert not paused(db)


async def test_the_same_refused_edit_again_and_again_pauses_at_its_fourth_refusal(tmp_path: Path) -> None:
    db, said = str(tmp_path / "refused.db"), []
    for n in (1, 2, 3, 4):
        said.append(context(await hook("claude-code", refused_edit(SOURCE, n), db=db, tmp=tmp_path)))
        assert paused(db) == (n == 4), f"refusal {n}"
    assert "Warning: the same error 3 times" in said[2]
    assert "E999 IndentationError: unexpected indent" in said[2]
    assert "escalation 1 (repeated error)" in said[3]
    assert "E999 IndentationError: unexpected indent" in said[3]
    assert "DO NOT re-run" not in said[3].split("\n")[0]


async def test_a_loop_that_puts_the_file_back_each_time_pauses(tmp_path: Path) -> None:
    db = str(tmp_path / "revert.db")
    changes = [("a + b", "a + int(b)"), ("a + int(b)", "a + b"), ("a + b", "a + int(b)")]
    for n, (old, new) in enumerate(changes, start=1):
        await hook("claude-code", edit(SOURCE, old, new, n), db=db, tmp=tmp_path)
        await hook("claude-code", bash_failure(RUN_REPRO, REPRO_FAILS, f"toolu_v{n}"), db=db, tmp=tmp_path)
    assert snapshot(db)["triggers"] == [["repeated_error"]]
    assert paused(db)


async def test_an_agents_own_reports_count_every_time_after_edits_or_not(tmp_path: Path) -> None:
    async with connect(str(tmp_path / "tool.db")) as agent:
        await agent.call("start_task", title="Fix the adder", task_id="t1")
        for n in range(3):
            if n:
                await agent.call("report_progress", task_id="t1", files_modified=["src/calc.py"])
            result = await agent.call("record_failure", task_id="t1", message="TypeError: bad operand")
    assert result["escalation"]["type"] == "repeated_error"
    assert result["directive"] == "pause"


def test_repeats_need_a_change_by_default_and_no_call_count_decides() -> None:
    assert HooksConfig().repeats_need_a_change is True
    assert HooksConfig().repeat_grace_calls == 0


def test_a_repeat_with_nothing_changed_keeps_the_run_and_a_change_lets_the_next_count() -> None:
    names = ("reproduce.py",)
    started = triggers.after_failure(Counters(), "fp-1", "op-1", needs_change=True, names=names)
    again = triggers.after_failure(started, "fp-1", "op-1", needs_change=True, names=names)
    assert again.consecutive_same_error == 1
    probed = triggers.after_change(again, ["/work/project/reproduce.py"])
    assert not probed.changed_since_error  # the command names the file: a change of the check
    remedied = triggers.after_change(probed, ["/work/project/src/calc.py"])
    assert remedied.changed_since_error
    counted = triggers.after_failure(remedied, "fp-1", "op-1", needs_change=True, names=names)
    assert counted.consecutive_same_error == 2
    assert not counted.changed_since_error  # the next occurrence needs a change of its own


def test_an_interrupted_run_counts_a_change_made_while_it_was_interrupted() -> None:
    a = triggers.after_failure(Counters(), "fp-a", "pytest", needs_change=True)
    b = triggers.after_failure(a, "fp-b", "python other.py", needs_change=True)
    changed = triggers.after_change(b, ["/work/project/src/calc.py"])
    back = triggers.after_failure(changed, "fp-a", "pytest", needs_change=True)
    assert back.last_fingerprint == "fp-a"
    assert back.consecutive_same_error == 2


def test_the_files_a_command_names_are_read_from_its_words_even_when_a_quote_is_unclosed() -> None:
    assert named_files("Bash: cd /work && python reproduce.py 2>&1 | tail") == ("reproduce.py",)
    assert named_files("Bash: python -m pytest tests/test_calc.py::test_add -q") == ("test_calc.py",)
    assert named_files("Bash: pytest -q") == ()
    assert named_files("Bash: python reproduce.py --name 'unclosed") == ("reproduce.py",)


def test_a_new_script_written_and_then_run_is_a_change_of_the_check_not_a_remedy() -> None:
    first = triggers.after_failure(Counters(), "fp-1", "op-a", needs_change=True, names=("reproduce.py",))
    wrote = triggers.after_change(first, ["/work/project/check_path.py"])
    assert wrote.changed_since_error == ["check_path.py"]  # the first command does not name it
    again = triggers.after_failure(wrote, "fp-1", "op-b", needs_change=True, names=("check_path.py",))
    assert again.consecutive_same_error == 1  # the command that fails next runs that very file
