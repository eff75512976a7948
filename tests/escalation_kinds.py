"""One escalation of every kind on a store, raised by a real agent's server the way agents raise
them, and what the model was told by each call that raised one (for the views' tests)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from conftest import Agent, connect

PYTEST_RUN = (
    "============ test session starts ============\ncollected 4 items\n\n"
    "tests/test_cart.py F\n\n    def test_total():\n>       assert total() == 10\n"
    "E       assert 9 == 10\n\ntests/test_cart.py:31: AssertionError\n"
    "============ 1 failed, 3 passed in 0.12s ============"
)


@dataclass
class Raised:
    """The escalations raised, by kind, and every message the model read on the way."""

    ids: dict[str, int] = field(default_factory=dict)
    told: list[str] = field(default_factory=list)

    def keep(self, kind: str, result: dict[str, Any]) -> None:
        """Remember what the call told the model, and the escalation it raised as ``kind``."""
        self.told.append(str(result.get("message") or ""))
        self.told += [str(reason) for reason in result.get("reasons") or []]
        escalation = result.get("escalation")
        assert escalation is not None, (kind, result)
        self.told += [trigger["summary"] for trigger in escalation["triggers"]]
        self.ids[kind] = int(escalation["escalation_id"])


async def _start(agent: Agent, task_id: str, **extra: Any) -> None:
    await agent.call("start_task", title=f"Work on {task_id}", task_id=task_id, project="shop", **extra)


async def _repeated_error(agent: Agent, raised: Raised) -> None:
    await _start(agent, "kinds-repeat")
    for line in (31, 31, 33):
        result = await agent.call(
            "record_failure",
            task_id="kinds-repeat",
            message=PYTEST_RUN,
            file="tests/test_cart.py",
            line=line,
            attempted_action="rounded the tax",
        )
    raised.keep("repeated_error", result)


async def _progress_kinds(agent: Agent, raised: Raised) -> None:
    await _start(agent, "kinds-idle", thresholds={"no_test_improvement_after": 1000})
    for n in range(5):
        result = await agent.call("report_progress", task_id="kinds-idle", note=f"read the logs again ({n})")
    raised.keep("no_file_progress", result)
    await _start(agent, "kinds-stall", baseline_pass_rate=0.6)
    for _ in range(5):  # no_test_improvement_after
        result = await agent.call("report_progress", task_id="kinds-stall", tests_passed=6, tests_failed=4)
    raised.keep("test_stall", result)
    await _start(agent, "kinds-verify")
    for n in range(1, 11):
        result = await agent.call(
            "report_progress",
            task_id="kinds-verify",
            tests_passed=n,
            tests_failed=11 - n,
            files_modified=[f"src/part{n}.py"],
        )
    raised.keep("verification_limit", result)


async def _edit_kinds(agent: Agent, raised: Raised) -> None:
    await _start(agent, "kinds-files", thresholds={"files_modified_exceeds": 3})
    for n in range(3):
        await agent.call("check_edit", task_id="kinds-files", paths=[f"src/cart{n}.py"])
    raised.keep("file_limit", await agent.call("check_edit", task_id="kinds-files", paths=["src/cart9.py"]))
    await _start(agent, "kinds-scope", scope=["web/auth/**"])
    result = await agent.call("check_edit", task_id="kinds-scope", paths=["web/payments/checkout.py"])
    raised.keep("scope_deviation", result)


async def _other_kinds(agent: Agent, raised: Raised) -> None:
    await _start(agent, "kinds-blocker", thresholds={"blocker_repeated": 1})
    result = await agent.call(
        "record_failure",
        task_id="kinds-blocker",
        message="npm install failed for a required package",
        signal_type="missing_dependency",
        details={"dependency": "lodash", "version": "4.17.21"},
        file="web/format.js",
        line=3,
    )
    raised.keep("external_blocker", result)
    await _start(agent, "kinds-budget", thresholds={"max_tool_calls": 2})
    for _ in range(2):
        result = await agent.call("report_progress", task_id="kinds-budget", files_modified=["src/app.py"])
    raised.keep("budget", result)
    await _start(agent, "kinds-question")
    result = await agent.call(
        "raise_escalation",
        task_id="kinds-question",
        reason="Which database should the reports use?",
        options=["SQLite", "PostgreSQL"],
    )
    raised.keep("ask_human", result)
    await _start(agent, "kinds-system")
    result = await agent.call(
        "raise_escalation", task_id="kinds-system", reason="The sandbox lost its network", kind="system_error"
    )
    raised.keep("system_error", result)


async def raise_every_kind(db_path: str) -> Raised:
    """One escalation of each kind an agent's work raises, on the store at ``db_path``."""
    raised = Raised()
    async with connect(db_path) as agent:
        for make in (_repeated_error, _progress_kinds, _edit_kinds, _other_kinds):
            await make(agent, raised)
        for escalation_id in raised.ids.values():
            told = await agent.call("get_escalation", escalation_id=escalation_id)
            raised.told.append(str(told.get("message") or ""))
    return raised
