"""``hook claude-code --wake-minutes N`` as a process: Claude Code's asyncRewake Stop hook.

It exits 2 with the operator's answer on stderr once one is given (Claude Code then wakes
the model with it), and 0 at once when nothing waits for an answer or none came in time.
The real host's side is ``tests/test_host_claude_code_wake.py``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import anyio

from conftest import connect
from hooks_support import bash_failure, hook, run_cli, run_script, stop

GUIDANCE = "pin express in package.json first"


async def paused(db: str, tmp: Path) -> None:
    """A task of the hooks' project paused by escalation 1 (a blocker, at its first sight)."""
    async with connect(db) as agent:
        await agent.call(
            "start_task", title="Fix the adder", task_id="fix-adder", thresholds={"blocker_repeated": 1}
        )
    await hook("claude-code", bash_failure("npm test", "Error: Cannot find module 'express'"), db=db, tmp=tmp)


async def wake(db: str, tmp: Path, minutes: str) -> tuple[int, str, float]:
    """The wake hook on a Stop: its exit status, its stderr and how long it took."""
    started = time.monotonic()
    run = await run_script(
        "--db",
        db,
        "hook",
        "claude-code",
        "--wake-minutes",
        minutes,
        stdin=json.dumps(stop()).encode(),
        tmp=tmp,
    )
    return run.returncode, run.stderr, time.monotonic() - started


async def test_nothing_waiting_ends_at_once_without_a_word(tmp_path: Path) -> None:
    db = str(tmp_path / "hook.db")
    async with connect(db) as agent:
        await agent.call("start_task", title="Fix the adder", task_id="fix-adder")
    code, err, _ = await wake(db, tmp_path, "5")
    assert (code, err) == (0, "")


async def test_an_answer_given_during_the_wait_is_delivered_acknowledged_with_exit_2(tmp_path: Path) -> None:
    db = str(tmp_path / "hook.db")
    await paused(db, tmp_path)
    async with anyio.create_task_group() as group:
        result: list[tuple[int, str, float]] = []

        async def waiting() -> None:
            result.append(await wake(db, tmp_path, "1"))

        group.start_soon(waiting)
        await anyio.sleep(2)  # the hook is waiting
        assert not result, "the hook ended before the answer"
        answered = await run_cli(
            "--db", db, "escalations", "respond", "1", "--guidance", GUIDANCE, tmp=tmp_path
        )
        assert answered.returncode == 0, answered.stderr
    ((code, err, _),) = result
    assert code == 2
    assert "the operator answered escalation 1" in err
    assert GUIDANCE in err
    shown = await run_cli("--db", db, "escalations", "show", "1", "--json", tmp=tmp_path)
    assert json.loads(shown.stdout)["status"] == "resolved"  # acknowledged on delivery


async def test_no_answer_in_time_ends_with_exit_0_and_the_escalation_still_waits(tmp_path: Path) -> None:
    db = str(tmp_path / "hook.db")
    await paused(db, tmp_path)
    code, err, took = await wake(db, tmp_path, "0.02")  # 1.2 s
    assert (code, err) == (0, "")
    assert took >= 1.2
    shown = await run_cli("--db", db, "escalations", "show", "1", "--json", tmp=tmp_path)
    assert json.loads(shown.stdout)["status"] == "pending"


async def test_a_wait_that_is_no_number_of_minutes_is_refused_with_exit_0(tmp_path: Path) -> None:
    db = str(tmp_path / "hook.db")
    for given in ("0", "-1", "1441", "soon"):
        code, err, _ = await wake(db, tmp_path, given)
        assert code == 0, given
        assert "--wake-minutes" in err
        assert "above 0 and at" in err, err
