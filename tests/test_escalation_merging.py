"""How triggers join an open escalation without losing evidence."""

from __future__ import annotations

import pytest

from conftest import connect, evidence_of

pytestmark = pytest.mark.both_backends


async def test_two_different_repeating_errors_keep_their_own_evidence(db_path: str) -> None:
    async with connect(db_path) as agent:
        await agent.call("start_task", title="t", task_id="m1")
        for line in (1, 2, 3):
            first = await agent.call(
                "record_failure", task_id="m1", message="TypeError: a is undefined", line=line
            )
        for line in (7, 8, 9):
            second = await agent.call("record_failure", task_id="m1", message="KeyError: 'user'", line=line)
        read = await agent.call("get_escalation", escalation_id=second["escalation"]["escalation_id"])
    escalation = second["escalation"]
    # The merge builds what it shows from the escalation it read: it is the one stored.
    assert read["escalation"] == escalation
    assert escalation["escalation_id"] == first["escalation"]["escalation_id"]
    repeated = [t for t in escalation["triggers"] if t["type"] == "repeated_error"]
    assert len(repeated) == 2
    facts = [escalation["context"]["evidence"][t["key"]] for t in repeated]
    lines = [[o["line"] for o in f["occurrences"]["at_firing"]] for f in facts]
    assert lines == [[1, 2, 3], [7, 8, 9]]
    assert [f["fingerprint"] for f in facts] == [
        first["failure"]["fingerprint"],
        second["failure"]["fingerprint"],
    ]


async def test_the_same_error_repeating_again_refreshes_its_trigger(db_path: str) -> None:
    async with connect(db_path) as agent:
        await agent.call("start_task", title="t", task_id="m2")
        for line in (1, 2, 3, 4):
            result = await agent.call("record_failure", task_id="m2", message="boom", line=line)
        read = await agent.call("get_escalation", escalation_id=result["holding"]["escalation_id"])
    assert result["escalation"] is None  # a refresh is no news: the escalation is not shown again
    escalation = read["escalation"]
    (trigger,) = escalation["triggers"]
    assert trigger["fired_count"] == 2
    occurrences = escalation["context"]["evidence"][trigger["key"]]["occurrences"]
    assert [o["line"] for o in occurrences["at_firing"]] == [1, 2, 3]
    assert [o["line"] for o in occurrences["latest"]] == [4]


async def test_a_repeat_refreshes_counters_and_evidence_and_keeps_the_actions_that_led_up_to_it(
    db_path: str,
) -> None:
    async with connect(db_path) as agent:
        await agent.call("start_task", title="t", task_id="m5")
        await agent.call("report_progress", task_id="m5", files_modified=["src/a.py"], note="first try")
        for line in (1, 2, 3):
            fired = await agent.call("record_failure", task_id="m5", message="boom", line=line)
        for line in range(4, 16):
            await agent.call("record_failure", task_id="m5", message="boom", line=line)
        read = await agent.call("get_escalation", escalation_id=fired["escalation"]["escalation_id"])
    at_firing, now = fired["escalation"]["context"], read["escalation"]["context"]
    # Twelve repeats are counted in the evidence; as actions they would have pushed out the
    # progress report that came before the error.
    assert now["recent_actions"] == at_firing["recent_actions"]
    assert [a["kind"] for a in now["recent_actions"]][1:] == ["report_progress"] + ["record_failure"] * 3
    assert now["task"] == at_firing["task"]
    assert now["counters"]["consecutive_same_error"] == 15
    occurrences = evidence_of(read["escalation"], "repeated_error")["occurrences"]
    assert (occurrences["count"], [o["line"] for o in occurrences["latest"]]) == (15, [13, 14, 15])


async def test_a_new_run_of_the_same_error_starts_its_evidence_afresh(db_path: str) -> None:
    async with connect(db_path) as agent:
        await agent.call("start_task", title="t", task_id="m4")
        for line in (1, 2, 3, 4):
            await agent.call("record_failure", task_id="m4", message="boom", line=line)
        # Two other errors end the run (one alone would not: fix, break, back is one run).
        await agent.call("record_failure", task_id="m4", message="another error")
        await agent.call("record_failure", task_id="m4", message="a third error")
        for line in (11, 12, 13):
            result = await agent.call("record_failure", task_id="m4", message="boom", line=line)
        read = await agent.call("get_escalation", escalation_id=result["holding"]["escalation_id"])
    escalation = read["escalation"]
    (trigger,) = escalation["triggers"]
    occurrences = escalation["context"]["evidence"][trigger["key"]]["occurrences"]
    assert (occurrences["count"], occurrences["count_at_firing"], occurrences["omitted"]) == (3, 3, 0)
    assert [o["line"] for o in occurrences["at_firing"]] == [11, 12, 13]


async def test_every_path_of_a_refused_edit_is_part_of_the_file_limit_proposal(db_path: str) -> None:
    async with connect(db_path) as agent:
        await agent.call("start_task", title="t", task_id="m3", thresholds={"files_modified_exceeds": 2})
        await agent.call("check_edit", task_id="m3", paths=["a.py"])
        refused = await agent.call("check_edit", task_id="m3", paths=["b.py", "c.py"])
        escalation_id = refused["escalation"]["escalation_id"]
    async with connect(db_path, role="operator") as operator:
        await operator.call("resolve_escalation", escalation_id=escalation_id, response_type="approve")
    async with connect(db_path) as agent:
        await agent.call("acknowledge_response", escalation_id=escalation_id)
        retried = await agent.call("check_edit", task_id="m3", paths=["b.py", "c.py"])
    facts = refused["escalation"]["context"]["evidence"]["file_limit"]
    assert refused["allowed"] is False
    assert facts["proposed_files"] == ["b.py", "c.py"]
    assert facts["modified_files"] == ["a.py"]
    assert retried["allowed"] is True
