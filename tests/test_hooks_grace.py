"""The hooks' grace for repeated errors (``[hooks] repeat_grace_calls``, off by default): among
a task's first recorded tool calls an error repeated to its threshold warns the model instead
of pausing; its next repeat after them pauses. ``record_failure`` called by an agent has no
grace. (How the hooks count repeats by default: test_hooks_repeats.py.)"""

from __future__ import annotations

from pathlib import Path

from conftest import connect
from hooks_support import PYTEST_FAIL, bash_failure, hook, post_bash, snapshot
from mcp_server_escalation.models.failures import FailureReport
from mcp_server_escalation.models.hook_config import HooksConfig
from mcp_server_escalation.models.tasks import Counters
from mcp_server_escalation.models.thresholds import Thresholds
from mcp_server_escalation.rules.decide.failures import Classified, decide

FAILED_RUN = "python -m pytest -q"


def _grace(tmp_path: Path, calls: int) -> str:
    config = tmp_path / "grace.toml"
    # every repeat counts here, as the grace was first measured with
    config.write_text(
        f"[hooks]\nrepeat_grace_calls = {calls}\nrepeats_need_a_change = false\n", encoding="utf-8"
    )
    return str(config)


async def test_an_early_repeat_warns_and_the_next_repeat_after_the_grace_pauses(tmp_path: Path) -> None:
    db, config = str(tmp_path / "grace.db"), _grace(tmp_path, 5)
    said = []
    for n in (1, 2, 3):
        failed = bash_failure(FAILED_RUN, PYTEST_FAIL, f"toolu_g{n}")
        run = await hook("claude-code", failed, db=db, tmp=tmp_path, ESCALATION_CONFIG=config)
        said.append(run.json()["hookSpecificOutput"]["additionalContext"] if run.stdout else "")
    assert "the same error 3 times" in said[2]
    assert "Once this task has made 5 recorded tool calls, the next repeat pages a human" in said[2]
    assert snapshot(db)["triggers"] == []  # calls 1-3: within the grace, no human yet
    # Another command succeeding (call 4) leaves the run going; its next repeat (call 5) pages.
    await hook("claude-code", post_bash("make build", "built\n", "toolu_g4"), db=db, tmp=tmp_path,
               ESCALATION_CONFIG=config)  # fmt: skip
    fifth = await hook("claude-code", bash_failure(FAILED_RUN, PYTEST_FAIL, "toolu_g5"), db=db, tmp=tmp_path,
                       ESCALATION_CONFIG=config)  # fmt: skip
    assert "escalation 1 (repeated error)" in fifth.json()["hookSpecificOutput"]["additionalContext"]
    state = snapshot(db)
    assert state["triggers"] == [["repeated_error"]]
    assert state["tasks"][0]["status"] == "paused"


def test_there_is_no_grace_by_default() -> None:
    assert HooksConfig().repeat_grace_calls == 0


async def test_an_agents_own_reports_have_every_repeat(tmp_path: Path) -> None:
    async with connect(str(tmp_path / "tool.db")) as agent:
        await agent.call("start_task", title="Fix the adder", task_id="t1")
        for _ in range(3):
            result = await agent.call("record_failure", task_id="t1", message="TypeError: bad operand")
    assert result["escalation"]["type"] == "repeated_error"
    assert result["directive"] == "pause"


def test_the_rule_holds_a_page_back_only_while_the_task_is_within_its_grace() -> None:
    report = FailureReport(task_id="t1", message="TypeError: bad operand")
    failure = Classified("runtime_error", "default", "medium", {}, "fp-1")
    before = Counters(consecutive_same_error=2, last_fingerprint="fp-1", tool_calls=3)
    graced = decide(report, failure, occurrences=3, counters=before, thresholds=Thresholds(), grace_calls=5)
    assert graced.repeated is None
    assert graced.warning is not None
    assert graced.warning.grace == 5
    late = before.model_copy(update={"tool_calls": 4})  # this call is the fifth
    paged = decide(report, failure, occurrences=3, counters=late, thresholds=Thresholds(), grace_calls=5)
    assert paged.repeated is not None
    assert paged.warning is None
    none = decide(report, failure, occurrences=3, counters=before, thresholds=Thresholds())
    assert none.repeated is not None
