"""A stuck agent over a long run: it repeats one error a thousand times, edits and
polls while paused. Every result stays small, evidence appears once, a repeat costs the same
at the thousandth time as at the hundredth, and waiting for a human costs little context."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import connect, make_settings
from mcp_server_escalation.models.failures import FailureReport
from mcp_server_escalation.models.limits import POLL_MAX_BYTES, RESULT_MAX_BYTES
from mcp_server_escalation.services import failures, tasks
from mcp_server_escalation.services.runtime import Runtime, open_runtime
from mcp_server_escalation.store.sql import Conn

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from bench_longrun import RESOURCES, TOOLS, every_call_at_its_limits  # benchmarks/ is not a package

pytestmark = pytest.mark.both_backends

# What a stuck agent sends: a pytest failure with its traceback tail, as agents paste it.
MESSAGE = (
    "FAILED tests/test_checkout.py::test_total_includes_tax - AssertionError: assert 107.0 == 107.5\n"
    "    def test_total_includes_tax():\n"
    "        cart = Cart(items=[Item('book', 100.0)], region='DE')\n"
    ">       assert cart.total() == 107.5\n"
    "E       AssertionError: assert 107.0 == 107.5\n"
    "E        +  where 107.0 = <bound method Cart.total of Cart(items=1)>()\n"
    "tests/test_checkout.py:42: AssertionError"
)


def size(result: dict[str, Any]) -> int:
    """Bytes of the result as the model reads it (compact JSON, as the tools send it)."""
    return len(json.dumps(result, ensure_ascii=False, separators=(",", ":")).encode())


def failure_args(task_id: str, i: int) -> dict[str, Any]:
    return {
        "task_id": task_id,
        "message": MESSAGE,
        "file": "tests/test_checkout.py",
        "line": 42,
        "attempted_action": f"rerun pytest after tweak {i}",
    }


async def test_a_thousand_repeats_of_one_error_keep_every_result_small_with_the_evidence_once(
    db_path: str,
) -> None:
    async with connect(db_path) as agent:
        await agent.call("start_task", title="stuck", task_id="stuck")
        largest = 0
        for i in range(1000):
            result = await agent.call("record_failure", **failure_args("stuck", i))
            largest = max(largest, size(result))
            assert size(result) < RESULT_MAX_BYTES, f"repeat {i + 1}: {size(result)} bytes"
        holding = result["holding"]
        edit = await agent.call("check_edit", task_id="stuck", paths=["src/cart.py"])
        view = await agent.call("get_task", task_id="stuck")
        read = await agent.call("get_escalation", escalation_id=holding["escalation_id"])
        record = json.loads((await agent.client.read_resource("failure://F-1")).contents[0].text)  # type: ignore[union-attr]
    for name, answer in (("check_edit", edit), ("get_task", view), ("get_escalation", read)):
        assert size(answer) < RESULT_MAX_BYTES, f"{name}: {size(answer)} bytes"
    assert (result["directive"], holding["type"], holding["status"]) == ("pause", "repeated_error", "pending")
    # A repeat names the escalation; the whole record came once, with the call that fired it.
    assert result["escalation"] is None
    escalation = read["escalation"]
    [trigger] = escalation["triggers"]
    assert "evidence" not in trigger
    assert list(escalation["context"]["evidence"]) == [trigger["key"]]
    facts = escalation["context"]["evidence"][trigger["key"]]
    assert (facts["failure_id"], facts["occurrence_count"]) == ("F-1", 1000)
    assert facts["all_occurrences"] == "failure://F-1"
    run = facts["occurrences"]
    assert (run["count"], run["count_at_firing"], run["omitted"]) == (1000, 3, 994)
    tweaks = [
        [o["attempted_action"][len("rerun pytest after tweak ") :] for o in run[part]]
        for part in ("at_firing", "latest")
    ]
    assert tweaks == [["0", "1", "2"], ["997", "998", "999"]]
    # The history stays in the store, and its resource says how much of it it shows.
    assert record["failure"]["occurrence_count"] == 1000
    assert (len(record["occurrences"]), record["occurrences_omitted"]) == (20, 980)
    assert record["occurrences"][-1]["attempted_action"] == "rerun pytest after tweak 999"


class VmSteps:
    """Counts SQLite virtual-machine steps (in blocks): the work a call asks of the store."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self) -> int:
        self.count += 1
        return 0  # go on


async def _steps_and_row_of_one_repeat(rt: Runtime, steps: VmSteps, i: int) -> tuple[int, int]:
    before = steps.count
    await failures.record_failure(rt, FailureReport(**failure_args("flat", i)))
    used = steps.count - before

    def row_bytes(conn: Conn) -> int:
        row = conn.execute(
            "SELECT length(triggers_json) + length(context_json) FROM escalations WHERE task_id = 'flat'"
        ).fetchone()
        return int(row[0])

    return used, await rt.db.read(row_bytes)


@pytest.mark.sqlite_only  # counts SQLite's own virtual-machine steps
async def test_a_repeat_while_paused_reads_and_writes_as_much_at_the_thousandth_time_as_at_the_hundredth(
    db_path: str,
) -> None:
    steps = VmSteps()
    async with open_runtime(make_settings(db_path)) as rt:
        await tasks.start_task(rt, title="flat", task_id="flat")

        def count_steps(conn: Conn) -> None:
            conn.set_progress_handler(steps, 10)

        await rt.db.write(count_steps)
        measured: dict[int, tuple[int, int]] = {}
        for i in range(1000):
            if i + 1 in (100, 1000):
                measured[i + 1] = await _steps_and_row_of_one_repeat(rt, steps, i)
            else:
                await failures.record_failure(rt, FailureReport(**failure_args("flat", i)))
    (steps_100, row_100), (steps_1000, row_1000) = measured[100], measured[1000]
    # Digits grow (99 -> 999) and nothing else: the stored escalation keeps its size...
    assert row_1000 - row_100 < 64, (row_100, row_1000)
    # ...and a repeat reads and writes the same rows (old code read all 1,000 occurrences).
    assert steps_1000 <= steps_100 * 1.1, (steps_100, steps_1000)


async def test_unanswered_polls_after_the_first_are_compact_and_the_answer_comes_back_whole(
    db_path: str,
) -> None:
    async with connect(db_path) as agent:
        await agent.call("start_task", title="wait", task_id="wait")
        for i in range(3):
            fired = await agent.call("record_failure", **failure_args("wait", i))
        escalation_id = fired["holding"]["escalation_id"]
        first = await agent.call("get_escalation", escalation_id=escalation_id)
        assert first["escalation"] is not None
        assert first["unchanged"] is False
        known = first["revision"]
        assert f"known_revision={known}" in first["message"]
        for n in range(300):
            poll = await agent.call(
                "get_escalation",
                escalation_id=escalation_id,
                known_revision=known,
                wait_seconds=0.01 if n == 0 else 0,
            )
            assert size(poll) < POLL_MAX_BYTES, f"poll {n + 1}: {size(poll)} bytes"
            assert (poll["escalation"], poll["unchanged"], poll["status"]) == (None, True, "pending")
            assert poll["directive"] == "pause"
            known = poll["revision"]
        assert f"get_escalation({escalation_id}, wait_seconds=4, known_revision={known})" in poll["message"]
        async with connect(db_path, role="operator") as operator:
            await operator.call(
                "resolve_escalation",
                escalation_id=escalation_id,
                response_type="guidance",
                content="Round the tax after summing the items",
            )
        answered = await agent.call("get_escalation", escalation_id=escalation_id, known_revision=known)
        again = await agent.call(
            "get_escalation", escalation_id=escalation_id, known_revision=answered["revision"]
        )
    assert answered["unchanged"] is False
    assert answered["revision"] > known
    assert answered["escalation"]["response"]["content"] == "Round the tax after summing the items"
    assert answered["escalation"]["delivered_at"] is not None
    # Nothing new since: compact again, and it still says what to do with the answer.
    assert again["escalation"] is None
    assert again["status"] == "resolved"
    assert size(again) < POLL_MAX_BYTES
    assert f"acknowledge_response({escalation_id})" in again["message"]


async def test_a_known_revision_the_escalation_never_had_is_refused_by_name(db_path: str) -> None:
    async with connect(db_path) as agent:
        await agent.call("start_task", title="t", task_id="kr")
        raised = await agent.call("raise_escalation", task_id="kr", reason="Which database?")
        escalation_id = raised["escalation"]["escalation_id"]
        text = await agent.error("get_escalation", escalation_id=escalation_id, known_revision=99)
    assert "known_revision" in text
    assert "99" in text
    assert f"revision {raised['escalation']['revision']}" in text


async def test_every_result_that_pauses_names_the_escalation_holding_the_task(db_path: str) -> None:
    async with connect(db_path) as agent:
        await agent.call("start_task", title="held", task_id="held")
        for i in range(3):
            fired = await agent.call("record_failure", **failure_args("held", i))
        escalation = fired["escalation"]
        results = {
            "record_failure, the same error": await agent.call("record_failure", **failure_args("held", 3)),
            "record_failure, another error": await agent.call(
                "record_failure", task_id="held", message="KeyError: 'region'"
            ),
            "report_progress": await agent.call("report_progress", task_id="held", note="still stuck"),
            "check_edit": await agent.call("check_edit", task_id="held", paths=["src/cart.py"]),
            "record_attempt": await agent.call(
                "record_attempt", task_id="held", step="main", status="rejected"
            ),
            "get_task": await agent.call("get_task", task_id="held"),
            "start_task": await agent.call("start_task", title="held", task_id="held"),
        }
        async with connect(db_path, role="operator") as operator:
            await operator.call(
                "resolve_escalation",
                escalation_id=escalation["escalation_id"],
                response_type="guidance",
                content="Round the tax",
            )
        answered = await agent.call("check_edit", task_id="held", paths=["src/cart.py"])
        await agent.call("acknowledge_response", escalation_id=escalation["escalation_id"])
        resumed = await agent.call("record_failure", task_id="held", message="KeyError: 'region'")
    for name, result in results.items():
        assert result["directive"] == "pause", name
        holding = result["holding"]
        assert holding is not None, name
        assert (holding["escalation_id"], holding["type"], holding["status"]) == (
            escalation["escalation_id"],
            "repeated_error",
            "pending",
        ), name
        assert holding["response_type"] is None, name
        assert size(holding) < 512, name
    # The full record is not repeated where nothing about it is new.
    for name in ("record_failure, the same error", "record_failure, another error", "check_edit"):
        assert results[name]["escalation"] is None, name
    assert (answered["directive"], answered["holding"]["status"]) == ("pause", "resolved")
    assert answered["holding"]["response_type"] == "guidance"
    assert (resumed["directive"], resumed["holding"]) == ("proceed", None)


async def test_a_trigger_that_joins_the_open_escalation_returns_it_whole(db_path: str) -> None:
    async with connect(db_path) as agent:
        await agent.call(
            "start_task", title="t", task_id="join", thresholds={"no_file_changes_after_attempts": 2}
        )
        for i in range(3):
            await agent.call("record_failure", **failure_args("join", i))
        await agent.call("report_progress", task_id="join")
        joined = await agent.call("report_progress", task_id="join")
    assert [t["type"] for t in joined["escalation"]["triggers"]] == ["repeated_error", "no_file_progress"]
    assert joined["holding"]["escalation_id"] == joined["escalation"]["escalation_id"]


@pytest.mark.sqlite_only  # writes an old row into the SQLite file itself
async def test_an_escalation_stored_before_the_bound_sheds_its_unbounded_evidence_at_the_next_repeat(
    db_path: str,
) -> None:
    async with connect(db_path) as agent:
        await agent.call("start_task", title="old", task_id="old")
        for i in range(3):
            fired = await agent.call("record_failure", **failure_args("old", i))
    escalation = fired["escalation"]
    # As an earlier version stored it: every occurrence, per type and again on the trigger.
    occurrences = [{"message": MESSAGE, "line": n} for n in range(600)]
    context = {**escalation["context"], "evidence": {"repeated_error": {"occurrences": occurrences}}}
    triggers = [{**t, "evidence": {"occurrences": occurrences}} for t in escalation["triggers"]]
    with sqlite3.connect(db_path) as conn:
        conn.execute(
            "UPDATE escalations SET context_json = ?, triggers_json = ? WHERE escalation_id = ?",
            (json.dumps(context), json.dumps(triggers), escalation["escalation_id"]),
        )
    async with connect(db_path) as agent:
        await agent.call("record_failure", **failure_args("old", 3))
        read = await agent.call("get_escalation", escalation_id=escalation["escalation_id"])
    [trigger] = read["escalation"]["triggers"]
    assert "evidence" not in trigger
    assert list(read["escalation"]["context"]["evidence"]) == [trigger["key"]]
    assert size(read) < RESULT_MAX_BYTES


async def test_results_stay_small_when_every_text_is_at_its_limit(db_path: str) -> None:
    # The longest title, specification and scope a task takes, and errors, actions and
    # files at their limits: the escalation shows each clipped, and says how much is left.
    # (get_task shows the task's own title, specification and scope whole.)
    huge = "x" * (64 * 1024)
    scope = [f"src/{n:03d}/" + "d" * 120 + "/**" for n in range(500)]  # at the limit of all globs
    async with connect(db_path) as agent:
        await agent.call("start_task", title="t" * 1024, task_id="big", specification=huge, scope=scope)
        answers = []
        for i in range(5):
            answers.append(
                await agent.call(
                    "record_failure",
                    task_id="big",
                    message="E" * (64 * 1024),
                    file="src/000/" + "f" * 4000,
                    line=i + 1,
                    attempted_action="a" * (64 * 1024),
                )
            )
        holding = answers[-1]["holding"]
        answers.append(await agent.call("get_escalation", escalation_id=holding["escalation_id"]))
    for n, answer in enumerate(answers):
        assert size(answer) < RESULT_MAX_BYTES, f"answer {n}: {size(answer)} bytes"


async def test_a_long_tasks_view_lists_the_latest_files_and_escalations_and_counts_the_rest(
    db_path: str,
) -> None:
    never = 1_000_000
    thresholds = {
        "same_error_repeated": never,
        "total_verification_attempts": never,
        "no_file_changes_after_attempts": never,
        "no_test_improvement_after": never,
        "files_modified_exceeds": never,
    }
    async with connect(db_path) as agent:
        await agent.call("start_task", title="long", task_id="long", thresholds=thresholds)
        for i in range(600):
            await agent.call("report_progress", task_id="long", files_modified=[f"src/pkg/module_{i:04d}.py"])
        for _ in range(25):  # questions the agent asks and takes back
            asked = await agent.call("raise_escalation", task_id="long", reason="Which one?", blocking=False)
            asked_id = asked["escalation"]["escalation_id"]
            await agent.call("resolve_escalation", escalation_id=asked_id, response_type="withdraw")
        view = await agent.call("get_task", task_id="long")
    assert size(view) < RESULT_MAX_BYTES
    assert view["modified_count"] == 600
    assert view["modified_files"] == [f"src/pkg/module_{i:04d}.py" for i in range(550, 600)]
    assert view["escalation_count"] == 25
    assert view["escalation_ids"] == list(range(6, 26))


async def test_an_out_of_scope_edit_of_a_task_at_its_input_limits_escalates_in_a_small_result(
    db_path: str,
) -> None:
    scope = [f"src/{n:03d}/" + "d" * 120 + "/**" for n in range(500)]  # at the limit of all globs
    async with connect(db_path) as agent:
        await agent.call("start_task", title="big", task_id="big", specification="x" * 65536, scope=scope)
        refused = await agent.call("check_edit", task_id="big", paths=["docs/readme.md"])
    assert refused["escalation"]["type"] == "scope_deviation"
    assert size(refused) < RESULT_MAX_BYTES, f"{size(refused)} bytes"


@pytest.mark.sqlite_only  # what a result shows is the services' and the registry's: one backend
async def test_every_tool_at_its_input_limits_after_many_reviews_answers_under_the_bound(
    db_path: str,
) -> None:
    """The long-run benchmark's last phase, in memory: every tool and resource, each text at
    its limit in 4-byte characters, after failing reviews of 1 Mi characters each (a review
    returned every earlier one's response whole: 8 MB in one result)."""
    async with connect(db_path) as agent, connect(db_path, "operator") as operator:
        sizes = await every_call_at_its_limits(agent.client, operator.client, reviews=5)
    assert sizes.refused == []
    assert set(sizes.largest) == {*TOOLS, *RESOURCES}
    over = {tool: sizes.largest[tool] for tool in TOOLS if sizes.largest[tool] >= RESULT_MAX_BYTES}
    assert over == {}
    async with connect(db_path) as agent:  # the task has ended: what is outstanding is said, bounded
        reviewed = await agent.call(
            "report_review", task_id="limits", stage="ci", status="fail", response="x"
        )
    assert reviewed["outstanding_count"] == 5
    assert all(len(f["response"]) < 400 for f in reviewed["outstanding"])
