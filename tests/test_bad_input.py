"""Bad input: a tool error naming the field, the problem and the limit; the server
stays up and nothing stored changes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from conftest import Agent, connect

pytestmark = pytest.mark.both_backends

ROOT = Path(__file__).resolve().parents[1]
BIG = "x" * (64 * 1024 + 1)

LONG_PATH = "src/" + "a" * 4100


async def _start(agent: Agent) -> dict[str, Any]:
    await agent.call("start_task", title="t", task_id="t-1", scope=["src/**"])
    return await agent.call("get_task", task_id="t-1")


CASES: list[tuple[str, dict[str, Any], tuple[str, ...]]] = [
    ("record_failure", {"task_id": "t-1", "message": BIG}, ("message", "65536")),
    (
        "record_failure",
        {"task_id": "t-1", "message": "m", "attempted_action": BIG},
        ("attempted_action", "65536"),
    ),
    ("record_failure", {"task_id": "t-1", "message": ""}, ("message", "at least 1")),
    (
        "record_failure",
        {"task_id": "t-1", "message": "m", "severity": "urgent"},
        ("severity", "low", "critical"),
    ),
    ("record_failure", {"task_id": "t-1", "message": "m", "signal_type": "bad_luck"}, ("signal_type",)),
    (
        "record_failure",
        {"task_id": "t-1", "message": "m", "line": -1},
        ("line", "at least 0"),
    ),
    ("record_failure", {"task_id": "t-1", "message": "m", "file": LONG_PATH}, ("file", "4096")),
    (
        "record_failure",
        {"task_id": "no-such-task", "message": "m"},
        ("task_id", "no-such-task", "start_task"),
    ),
    ("record_failure", {"task_id": "bad id with spaces", "message": "m"}, ("task_id", "pattern")),
    ("record_failure", {"task_id": "x" * 129, "message": "m"}, ("task_id", "128")),
    (
        "record_failure",
        {"task_id": "t-1", "message": "m", "details": {"colour": "red"}},
        ("details.colour", "leave it out"),
    ),
    (
        "report_progress",
        {"task_id": "t-1", "tests_passed": -3},
        ("tests_passed", "at least 0"),
    ),
    ("report_progress", {"task_id": "t-1", "tests_failed": -1}, ("tests_failed",)),
    (
        "report_progress",
        {"task_id": "t-1", "tests_passed": 0, "tests_failed": 0},
        ("tests_passed", "at least one test"),
    ),
    ("report_progress", {"task_id": "t-1", "outcome": "great"}, ("outcome", "success", "neutral")),
    (
        "report_progress",
        {"task_id": "t-1", "files_modified": [f"src/{i}.py" for i in range(501)]},
        ("files_modified", "500"),
    ),
    ("report_progress", {"task_id": "t-1", "files_modified": [LONG_PATH]}, ("files_modified", "4096")),
    ("report_progress", {"task_id": "t-1", "note": BIG}, ("note", "65536")),
    ("check_edit", {"task_id": "t-1", "paths": []}, ("paths", "at least 1")),
    ("check_edit", {"task_id": "t-1", "paths": [LONG_PATH]}, ("paths", "4096")),
    (
        "start_task",
        {"title": "t", "task_id": "t-1", "baseline_pass_rate": 1.5},
        ("baseline_pass_rate", "at most 1"),
    ),
    (
        "start_task",
        {"title": "t", "task_id": "t-1", "thresholds": {"same_error_repeated": 0}},
        ("thresholds.same_error_repeated", "at least 1"),
    ),
    (
        "start_task",
        {"title": "t", "task_id": "t-1", "thresholds": {"made_up": 3}},
        ("thresholds.made_up", "leave it out"),
    ),
    ("start_task", {"title": "t", "scope": ["x"] * 501}, ("scope", "500")),
    ("end_task", {"task_id": "t-1", "outcome": "done"}, ("outcome", "completed", "abandoned")),
    ("get_escalation", {"escalation_id": 999}, ("escalation_id", "999")),
    ("get_escalation", {"escalation_id": 0}, ("escalation_id", "at least 1")),
    ("acknowledge_response", {"escalation_id": 12345}, ("escalation_id", "12345")),
    ("list_escalations", {"status": "open"}, ("status", "pending", "resolved")),
    ("list_escalations", {"limit": 201}, ("limit", "200")),
    ("list_escalations", {"limit": 0}, ("limit", "1")),
    ("raise_escalation", {"task_id": "t-1", "reason": "r", "kind": "panic"}, ("kind", "ask_human")),
    ("raise_escalation", {"task_id": "t-1", "reason": "r", "follow_up_of": 77}, ("follow_up_of", "77")),
    ("resolve_escalation", {"escalation_id": 5, "response_type": "ignore"}, ("response_type", "guidance")),
    # A yes-or-no flag is true or false: "yes" (or "1", "on") was taken for true.
    (
        "raise_escalation",
        {"task_id": "t-1", "reason": "r", "blocking": "yes"},
        ("blocking: must be true or false",),
    ),
    (
        "raise_escalation",
        {"task_id": "t-1", "reason": "r", "blocking": 1},
        ("blocking: must be true or false",),
    ),
]


# The cases the argument model lets through and the service refuses (a task or escalation
# looked up in the store, a rule): these also run on PostgreSQL. The rest are refused before
# any store is asked, so the backend cannot change their outcome.
PAST_THE_ARGUMENT_MODEL = [CASES[i] for i in (7, 13, 25, 27, 32)]


def _ids(cases: list[tuple[str, dict[str, Any], tuple[str, ...]]]) -> list[str]:
    return [f"{c[0]}-{CASES.index(c)}" for c in cases]


async def _refused(db_path: str, tool: str, arguments: dict[str, Any], expected: tuple[str, ...]) -> str:
    async with connect(db_path) as agent:
        before = await _start(agent)
        text = await agent.error(tool, **arguments)
        after = await agent.call("get_task", task_id="t-1")
        listed = await agent.call("list_escalations", status="all")
    for fragment in expected:
        assert fragment in text, (fragment, text)
    assert after == before
    assert listed["total"] == 0
    return text


@pytest.mark.sqlite_only  # every case; those past the argument model run on both below
@pytest.mark.parametrize(("tool", "arguments", "expected"), CASES, ids=_ids(CASES))
async def test_bad_input_is_a_tool_error_naming_field_and_limit_and_changes_nothing(
    db_path: str, tool: str, arguments: dict[str, Any], expected: tuple[str, ...]
) -> None:
    text = await _refused(db_path, tool, arguments, expected)
    refused_by_the_schema = not Draft202012Validator(_input_schema(tool)).is_valid(arguments)
    assert refused_by_the_schema == ((tool, arguments, expected) not in PAST_THE_ARGUMENT_MODEL)
    # Words, not pydantic's report: no repr of the input, no error code, class or link.
    for report in ("validation error", "Arguments", "input_value", "type=", "pydantic", "['", "{'"):
        assert report not in text, (report, text)


def _input_schema(tool: str) -> dict[str, Any]:
    schema: dict[str, Any] = json.loads((ROOT / "schemas" / "tools" / f"{tool}.input.json").read_text())
    return schema


async def test_a_call_with_many_problems_names_the_first_five_and_counts_the_rest(db_path: str) -> None:
    bad = dict.fromkeys(
        (
            "same_error_repeated",
            "total_verification_attempts",
            "stagnation_patience",
            "no_file_changes_after_attempts",
            "no_test_improvement_after",
            "files_modified_exceeds",
        ),
        0,
    )
    async with connect(db_path) as agent:
        missing = await agent.error("raise_escalation")
        many = await agent.error("start_task", title="t", thresholds=bad | {"colour": "red"})
        listed = await agent.call("list_escalations", status="all")
    assert missing == (
        "Error executing tool raise_escalation: task_id: required, but missing; reason: required, but missing"
    )
    assert many == (
        "Error executing tool start_task: thresholds.same_error_repeated: must be at least 1;"
        " thresholds.total_verification_attempts: must be at least 1;"
        " thresholds.no_file_changes_after_attempts: must be at least 1;"
        " thresholds.no_test_improvement_after: must be at least 1;"
        " thresholds.files_modified_exceeds: must be at least 1; and 2 more problems"
    )
    assert listed["total"] == 0


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"), PAST_THE_ARGUMENT_MODEL, ids=_ids(PAST_THE_ARGUMENT_MODEL)
)
async def test_input_the_store_refuses_changes_nothing_on_either_backend(
    db_path: str, tool: str, arguments: dict[str, Any], expected: tuple[str, ...]
) -> None:
    await _refused(db_path, tool, arguments, expected)


async def test_the_server_answers_the_next_call_after_many_bad_ones(db_path: str) -> None:
    async with connect(db_path) as agent:
        await _start(agent)
        for tool, arguments, _ in CASES:
            await agent.error(tool, **arguments)
        result = await agent.call("record_failure", task_id="t-1", message="real error")
    assert result["failure"]["occurrence_count"] == 1


async def test_text_that_looks_like_json_is_stored_as_the_text_sent(db_path: str) -> None:
    # Agents paste JSON error bodies; a text argument must not be turned into an object.
    body = '{"status": 500, "detail": "upstream down"}'
    async with connect(db_path) as agent:
        await _start(agent)
        recorded = await agent.call(
            "record_failure",
            task_id="t-1",
            message="POST /orders failed",
            observed_outcome=body,
            attempted_action='["retry", "backoff"]',
            recommended_adjustment="42",
        )
        view = await agent.client.read_resource(f"failure://{recorded['failure']['failure_id']}")
    stored = json.loads(view.contents[0].text)["failure"]  # type: ignore[union-attr]
    assert stored["observed_outcome"] == body
    assert stored["attempted_action"] == '["retry", "backoff"]'
    assert stored["recommended_adjustment"] == "42"


async def test_lists_and_numbers_sent_as_json_strings_are_still_accepted(db_path: str) -> None:
    # Some hosts send every argument as a string; arguments that cannot be text are parsed.
    async with connect(db_path) as agent:
        started = await agent.call("start_task", title="t", task_id="t-2", scope='["src/**"]')
        progress = await agent.call(
            "report_progress",
            task_id="t-2",
            files_modified='["src/a.py"]',
            tests_passed="3",
            tests_failed="1",
        )
        checked = await agent.call("check_edit", task_id="t-2", paths='["src/b.py", "docs/x.md"]')
        asked = await agent.call("raise_escalation", task_id="t-2", reason="Which?", blocking="false")
    assert started["task"]["scope"] == ["src/**"]
    assert progress["counters"]["files_modified"] == 1
    assert progress["test_run"]["passed"] == 3
    assert [(p["path"], p["allowed"]) for p in checked["paths"]] == [("src/b.py", True), ("docs/x.md", False)]
    assert asked["escalation"]["blocking"] is False  # a flag sent as JSON's false, in a string
