"""User stories 4 (external blockers) and 5 (the human-response loop), end to end.

Every test drives the real MCP SDK client in memory against a real SQLite file. Two
``connect`` calls on one ``db_path`` are two server processes sharing the store: the agent
on one, the operator (``role="operator"``) on the other, as in production.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from conftest import Agent, FakeClock, connect, evidence_of
from mcp_server_escalation.clock import iso

pytestmark = pytest.mark.both_backends

TIMEOUT = 20  # seconds; a bound on every test that waits, never a sleep


async def start(
    agent: Agent, task_id: str = "t1", agent_id: str = "agent-123", **extra: Any
) -> dict[str, Any]:
    """Start a task for ``agent_id`` and return the start_task result."""
    return await agent.call(
        "start_task",
        task_id=task_id,
        title="Port the sync client to async",
        specification="Every public call of sync_client.py becomes a coroutine; tests stay green.",
        agent_id=agent_id,
        **extra,
    )


# A blocker read off the output escalates at its first occurrence with this (the default
# waits for it to repeat: test_a_blocker_read_off_the_output_escalates_once_it_repeats).
AT_ONCE = {"blocker_repeated": 1}


async def raise_repeated_error(agent: Agent, task_id: str = "t1") -> dict[str, Any]:
    """Three identical errors in a row (the default threshold): a repeated_error escalation."""
    result: dict[str, Any] = {}
    for line in (41, 57, 63):
        result = await agent.call(
            "record_failure",
            task_id=task_id,
            message="TypeError: callback is not a function",
            error_type="TypeError",
            file="src/sync_client.js",
            line=line,
            attempted_action=f"wrapped the callback at line {line}",
        )
    escalation = result["escalation"]
    assert escalation is not None
    assert escalation["type"] == "repeated_error"
    assert escalation["status"] == "pending"
    return escalation


# --- User story 4: external blockers ---------------------------------------------------------

MISSING_DEPENDENCY = [
    pytest.param(
        {
            "message": "npm install failed for a required package",
            "signal_type": "missing_dependency",
            "details": {"dependency": "lodash", "version": "4.17.21"},
        },
        "caller",
        id="explicit",
    ),
    pytest.param(
        {"message": "Error: Cannot find module 'lodash' (package.json pins lodash@4.17.21)"},
        "node_cannot_find_module",
        id="classified",
    ),
]


@pytest.mark.parametrize(("call", "classified_by"), MISSING_DEPENDENCY)
async def test_missing_dependency_escalates_at_once_with_name_version_and_requiring_file(
    db_path: str, call: dict[str, Any], classified_by: str
) -> None:
    async with connect(db_path) as agent, connect(db_path, role="operator") as operator:
        await start(agent, thresholds=AT_ONCE)
        result = await agent.call(
            "record_failure",
            task_id="t1",
            file="src/utils/format.js",
            line=3,
            attempted_action="require('lodash') while running the unit tests",
            **call,
        )

        assert result["failure"]["signal_type"] == "missing_dependency"
        assert result["failure"]["classified_by"] == classified_by
        escalation = result["escalation"]
        assert escalation is not None, "a missing dependency must escalate on the first occurrence"
        assert escalation["type"] == "external_blocker"
        assert escalation["priority"] == "high"
        assert escalation["status"] == "pending"
        facts = evidence_of(escalation, "external_blocker")
        assert facts["details"]["dependency"] == "lodash"
        assert facts["details"]["version"] == "4.17.21"
        assert facts["file"] == "src/utils/format.js"
        assert result["directive"] == "pause"

        pending = await operator.call("list_escalations")
        assert [(e["escalation_id"], e["priority"]) for e in pending["escalations"]] == [
            (escalation["escalation_id"], "high")
        ]


PERMISSION_DENIED = [
    pytest.param(
        {
            "message": "could not read the deploy key",
            "signal_type": "permission_denied",
            "details": {"resource": "/etc/secrets/api-key", "operation": "read"},
        },
        "caller",
        "read",
        id="explicit",
    ),
    pytest.param(
        {
            "message": "PermissionError: [Errno 13] Permission denied: '/etc/secrets/api-key'",
            "details": {"operation": "read"},
        },
        "python_permission_error",
        "read",
        id="classified-python",
    ),
    pytest.param(
        {"message": "Error: EACCES: permission denied, open '/etc/secrets/api-key'"},
        "node_eacces",
        "open",
        id="classified-node",
    ),
]


@pytest.mark.parametrize(("call", "classified_by", "operation"), PERMISSION_DENIED)
async def test_permission_denied_escalates_at_once_with_resource_and_operation(
    db_path: str, call: dict[str, Any], classified_by: str, operation: str
) -> None:
    async with connect(db_path) as agent, connect(db_path, role="operator") as operator:
        await start(agent, thresholds=AT_ONCE)
        result = await agent.call("record_failure", task_id="t1", **call)

        assert result["failure"]["signal_type"] == "permission_denied"
        assert result["failure"]["classified_by"] == classified_by
        escalation = result["escalation"]
        assert escalation is not None
        assert escalation["type"] == "external_blocker"
        assert escalation["priority"] == "high"
        details = evidence_of(escalation, "external_blocker")["details"]
        assert details["resource"] == "/etc/secrets/api-key"
        assert details["operation"] == operation
        assert escalation["triggers"][0]["observed"]["resource"] == "/etc/secrets/api-key"
        assert "/etc/secrets/api-key" in escalation["triggers"][0]["summary"]

        pending = await operator.call("list_escalations")
        assert pending["escalations"][0]["priority"] == "high"
        assert pending["escalations"][0]["type"] == "external_blocker"


API_UNAVAILABLE = [
    pytest.param(
        {
            "message": "the GitHub API is down",
            "signal_type": "api_unavailable",
            "details": {"endpoint": "https://api.github.com/repos", "status_code": 503},
        },
        "caller",
        id="explicit",
    ),
    pytest.param(
        {"message": "HTTP 503 Service Unavailable from https://api.github.com/repos"},
        "http_5xx_unavailable",
        id="classified",
    ),
]


@pytest.mark.parametrize(("call", "classified_by"), API_UNAVAILABLE)
async def test_api_unavailability_escalates_at_once_with_endpoint_status_and_time(
    db_path: str, call: dict[str, Any], classified_by: str
) -> None:
    clock = FakeClock()
    async with connect(db_path, clock=clock) as agent, connect(db_path, role="operator") as operator:
        await start(agent, thresholds=AT_ONCE)
        clock.advance(minutes=7)
        failed_at = iso(clock.now)
        result = await agent.call("record_failure", task_id="t1", **call)

        assert result["failure"]["signal_type"] == "api_unavailable"
        assert result["failure"]["classified_by"] == classified_by
        escalation = result["escalation"]
        assert escalation is not None
        assert escalation["type"] == "external_blocker"
        assert escalation["priority"] == "high"
        facts = evidence_of(escalation, "external_blocker")
        assert facts["details"]["endpoint"] == "https://api.github.com/repos"
        assert facts["details"]["status_code"] == 503
        assert facts["at"] == failed_at
        assert escalation["triggers"][0]["at"] == failed_at

        pending = await operator.call("list_escalations")
        assert pending["escalations"][0]["priority"] == "high"


@pytest.mark.parametrize(
    "signal_type", [pytest.param(None, id="classified"), pytest.param("network_transient", id="explicit")]
)
async def test_transient_network_timeout_followed_by_a_successful_retry_creates_no_escalation(
    db_path: str, signal_type: str | None
) -> None:
    timeout = "ReadTimeout: HTTPSConnectionPool(host='api.github.com', port=443): Read timed out."
    extra = {"signal_type": signal_type} if signal_type else {}
    async with connect(db_path) as agent:
        await start(agent)
        first = await agent.call("record_failure", task_id="t1", message=timeout, **extra)
        assert first["failure"]["signal_type"] == "network_transient"
        assert first["failure"]["classified_by"] == ("caller" if signal_type else "timeout")
        assert first["escalation"] is None
        assert first["directive"] == "proceed"
        second = await agent.call("record_failure", task_id="t1", message=timeout, **extra)
        assert second["failure"]["consecutive_count"] == 2
        assert second["escalation"] is None

        retried = await agent.call("report_progress", task_id="t1", outcome="success", note="retry worked")
        assert retried["escalation"] is None
        assert retried["counters"]["consecutive_same_error"] == 0
        # Two timeouts, a success, a timeout: without the reset this would be the third in a row.
        third = await agent.call("record_failure", task_id="t1", message=timeout, **extra)
        assert third["failure"]["consecutive_count"] == 1
        assert third["escalation"] is None

        everything = await agent.call("list_escalations", status="all", task_id="t1")
        assert everything["total"] == 0
        assert (await agent.call("get_task", task_id="t1"))["directive"] == "proceed"


# --- User story 5: the human's view and response ---------------------------------------------


async def test_human_sees_type_criteria_task_context_history_and_response_options(db_path: str) -> None:
    async with connect(db_path) as agent, connect(db_path, role="operator") as operator:
        await start(agent, scope=["src/**"])
        await agent.call(
            "report_progress", task_id="t1", files_modified=["src/sync_client.js"], note="first port"
        )
        created = await raise_repeated_error(agent)

        pending = await operator.call("list_escalations")
        assert [e["escalation_id"] for e in pending["escalations"]] == [created["escalation_id"]]
        assert pending["escalations"][0]["agent_id"] == "agent-123"
        seen = (await operator.call("get_escalation", escalation_id=created["escalation_id"]))["escalation"]

        assert seen["type"] == "repeated_error"
        assert seen["agent_id"] == "agent-123"
        trigger = seen["triggers"][0]
        assert trigger["criteria"] == {"same_error_repeated": 3}
        assert trigger["observed"]["consecutive_same_error"] == 3
        task = seen["context"]["task"]
        assert task["title"] == "Port the sync client to async"
        assert task["specification"].startswith("Every public call")
        assert task["scope"] == ["src/**"]
        assert task["agent_id"] == "agent-123"
        kinds = [a["kind"] for a in seen["context"]["recent_actions"]]
        assert "report_progress" in kinds
        assert kinds.count("record_failure") == 3
        occurrences = evidence_of(seen, "repeated_error")["occurrences"]["at_firing"]
        assert sorted((o["file"], o["line"]) for o in occurrences) == [
            ("src/sync_client.js", 41),
            ("src/sync_client.js", 57),
            ("src/sync_client.js", 63),
        ]
        assert {o["attempted_action"] for o in occurrences} == {
            "wrapped the callback at line 41",
            "wrapped the callback at line 57",
            "wrapped the callback at line 63",
        }
        assert seen["response_options"] == ["guidance", "override", "terminate"]
        # Looking at it answers nothing.
        assert seen["status"] == "pending"
        assert seen["response"] is None


async def test_human_guidance_is_recorded_delivered_acknowledged_and_resumes_the_agent(db_path: str) -> None:
    guidance = "Try using async/await instead of callbacks"
    async with connect(db_path) as agent, connect(db_path, role="operator") as operator:
        await start(agent)
        escalation_id = (await raise_repeated_error(agent))["escalation_id"]
        assert (await agent.call("get_task", task_id="t1"))["directive"] == "pause"

        answered = await operator.call(
            "resolve_escalation",
            escalation_id=escalation_id,
            response_type="guidance",
            content=guidance,
            responder="alice",
        )
        recorded = answered["escalation"]
        assert recorded["status"] == "resolved"
        assert recorded["response"]["response_type"] == "guidance"
        assert recorded["response"]["content"] == guidance
        assert recorded["response"]["responder"] == "alice"
        assert recorded["delivered_at"] is None

        received = await agent.call("get_escalation", escalation_id=escalation_id)
        assert received["escalation"]["response"]["content"] == guidance
        assert received["escalation"]["delivered_at"] is not None
        assert received["directive"] == "pause", "the answer must be acknowledged before work resumes"
        assert guidance in received["message"]
        assert "acknowledge_response" in received["message"]
        assert (await agent.call("get_task", task_id="t1"))["directive"] == "pause"

        acked = await agent.call("acknowledge_response", escalation_id=escalation_id, note="switching")
        assert acked["escalation"]["acknowledged_at"] is not None
        assert acked["escalation"]["status"] == "resolved"
        assert acked["task_status"] == "active"
        assert acked["directive"] == "proceed"
        assert guidance in acked["message"]

        view = await agent.call("get_task", task_id="t1")
        assert view["directive"] == "proceed"
        assert view["task"]["status"] == "active"
        assert view["pending_escalation"] is None


async def test_human_override_becomes_the_approach_the_agent_must_follow(db_path: str) -> None:
    approach = "Abandon current approach, use library X instead"
    async with connect(db_path) as agent, connect(db_path, role="operator") as operator:
        await start(agent)
        escalation_id = (await raise_repeated_error(agent))["escalation_id"]

        answered = await operator.call(
            "resolve_escalation", escalation_id=escalation_id, response_type="override", content=approach
        )
        assert answered["escalation"]["status"] == "resolved_with_override"
        assert answered["escalation"]["response"]["response_type"] == "override"
        assert answered["escalation"]["response"]["content"] == approach

        received = await agent.call("get_escalation", escalation_id=escalation_id)
        assert received["directive"] == "pause", "the agent stops its current work first"
        assert approach in received["message"]

        acked = await agent.call("acknowledge_response", escalation_id=escalation_id)
        assert acked["directive"] == "proceed"
        assert acked["task"]["approach"] == approach
        assert approach in acked["message"]
        assert "Abandon your current approach" in acked["message"]

        view = await agent.call("get_task", task_id="t1")
        assert view["task"]["approach"] == approach
        assert view["directive"] == "proceed"
        assert approach in view["message"]


async def test_human_termination_stops_the_agent_and_refuses_further_work_on_the_task(db_path: str) -> None:
    async with connect(db_path) as agent, connect(db_path, role="operator") as operator:
        await start(agent)
        escalation_id = (await raise_repeated_error(agent))["escalation_id"]

        answered = await operator.call(
            "resolve_escalation",
            escalation_id=escalation_id,
            response_type="terminate",
            content="requirements changed",
        )
        assert answered["escalation"]["status"] == "resolved_with_termination"
        assert answered["escalation"]["response"]["response_type"] == "terminate"
        assert answered["task_status"] == "terminated_by_human"

        received = await agent.call("get_escalation", escalation_id=escalation_id)
        assert received["directive"] == "stop"
        view = await agent.call("get_task", task_id="t1")
        assert view["task"]["status"] == "terminated_by_human"
        assert view["directive"] == "stop"

        acked = await agent.call("acknowledge_response", escalation_id=escalation_id)
        assert acked["directive"] == "stop"
        assert acked["task_status"] == "terminated_by_human"
        assert acked["escalation"]["status"] == "resolved_with_termination"

        for tool, args in [
            ("record_failure", {"message": "TypeError: callback is not a function"}),
            ("report_progress", {"files_modified": ["src/sync_client.js"]}),
            ("raise_escalation", {"reason": "may I continue?"}),
            ("end_task", {"outcome": "completed"}),
        ]:
            refused = await agent.call(tool, task_id="t1", **args)
            assert refused["directive"] == "stop", (tool, refused)
            assert "is terminated by a human" in refused["message"], (tool, refused)
        gate = await agent.call("check_edit", task_id="t1", paths=["src/sync_client.js"])
        assert gate["allowed"] is False
        assert gate["directive"] == "stop"
        assert (await agent.call("get_task", task_id="t1"))["task"]["status"] == "terminated_by_human"


async def test_human_approval_of_a_wider_file_limit_lets_the_agent_resume_up_to_the_new_limit(
    db_path: str,
) -> None:
    first_twenty = [f"src/module_{n:02d}.py" for n in range(1, 21)]
    async with connect(db_path) as agent, connect(db_path, role="operator") as operator:
        await start(agent)
        assert (await agent.call("check_edit", task_id="t1", paths=first_twenty))["allowed"] is True

        refused = await agent.call("check_edit", task_id="t1", paths=["src/module_21.py"])
        assert refused["allowed"] is False
        escalation = refused["escalation"]
        assert escalation["type"] == "file_limit"
        assert "approve" in escalation["response_options"]
        assert refused["directive"] == "pause"

        answered = await operator.call(
            "resolve_escalation",
            escalation_id=escalation["escalation_id"],
            response_type="approve",
            new_file_limit=30,
            content="the refactor really touches 30 modules",
        )
        assert answered["escalation"]["status"] == "resolved_with_approval"
        assert answered["escalation"]["response"]["response_type"] == "approve"
        assert answered["escalation"]["response"]["new_file_limit"] == 30

        received = await agent.call("get_escalation", escalation_id=escalation["escalation_id"])
        assert received["directive"] == "pause"
        still_held = await agent.call("check_edit", task_id="t1", paths=["src/module_21.py"])
        assert still_held["allowed"] is False, "no edit before the approval is acknowledged"

        acked = await agent.call("acknowledge_response", escalation_id=escalation["escalation_id"])
        assert acked["directive"] == "proceed"
        assert acked["task"]["thresholds"]["files_modified_exceeds"] == 30
        assert "30" in acked["message"]

        view = await agent.call("get_task", task_id="t1")
        assert view["thresholds"]["files_modified_exceeds"] == 30
        next_ten = [f"src/module_{n:02d}.py" for n in range(21, 31)]
        assert (await agent.call("check_edit", task_id="t1", paths=next_ten))["allowed"] is True
        over = await agent.call("check_edit", task_id="t1", paths=["src/module_31.py"])
        assert over["allowed"] is False
        assert over["escalation"]["type"] == "file_limit"
        assert over["escalation"]["escalation_id"] != escalation["escalation_id"]


# --- The loop's edges ------------------------------------------------------------------------


async def test_acknowledge_is_refused_while_the_escalation_has_no_response(db_path: str) -> None:
    async with connect(db_path) as agent:
        await start(agent)
        escalation_id = (await raise_repeated_error(agent))["escalation_id"]

        text = await agent.error("acknowledge_response", escalation_id=escalation_id)
        assert "no response" in text
        assert f"get_escalation({escalation_id}" in text
        still = (await agent.call("get_escalation", escalation_id=escalation_id))["escalation"]
        assert still["status"] == "pending"
        assert still["acknowledged_at"] is None
        assert (await agent.call("get_task", task_id="t1"))["directive"] == "pause"


async def test_waiting_get_escalation_returns_as_soon_as_the_operator_answers(db_path: str) -> None:
    guidance = "Use the retry helper in src/net.py"
    async with connect(db_path) as agent, connect(db_path, role="operator") as operator:
        await start(agent)
        escalation_id = (await raise_repeated_error(agent))["escalation_id"]
        waited: dict[str, Any] = {}
        waiting = anyio.Event()

        async def wait_for_answer() -> None:
            waiting.set()
            waited.update(await agent.call("get_escalation", escalation_id=escalation_id, wait_seconds=60))

        # The wait asks for 60 s; the bound is far shorter, so only an early return passes.
        with anyio.fail_after(TIMEOUT):
            async with anyio.create_task_group() as tg:
                tg.start_soon(wait_for_answer)
                await waiting.wait()
                # A round trip through the agent's server, so that its get_escalation handler
                # (sent first) is under way before the operator answers.
                assert (await agent.call("get_task", task_id="t1"))["directive"] == "pause"
                assert not waited, "the wait returned before anyone answered"
                await operator.call(
                    "resolve_escalation",
                    escalation_id=escalation_id,
                    response_type="guidance",
                    content=guidance,
                )

        assert waited["escalation"]["status"] == "resolved"
        assert waited["escalation"]["response"]["content"] == guidance
        assert waited["escalation"]["delivered_at"] is not None
        assert waited["directive"] == "pause"


async def test_a_wait_that_times_out_leaves_the_escalation_pending(db_path: str) -> None:
    async with connect(db_path) as agent, connect(db_path, role="operator") as operator:
        await start(agent)
        escalation_id = (await raise_repeated_error(agent))["escalation_id"]

        with anyio.fail_after(TIMEOUT):
            began = anyio.current_time()
            waited = await agent.call("get_escalation", escalation_id=escalation_id, wait_seconds=0.3)
            assert anyio.current_time() - began >= 0.3, "the wait must last until its timeout"

        assert waited["escalation"]["status"] == "pending"
        assert waited["escalation"]["response"] is None
        assert waited["directive"] == "pause"
        assert "get_escalation" in waited["message"]
        pending = await operator.call("list_escalations")
        assert [e["escalation_id"] for e in pending["escalations"]] == [escalation_id]
        assert (await agent.call("get_task", task_id="t1"))["task"]["status"] == "paused"


async def test_abandoning_a_task_mid_escalation_keeps_the_record_as_agent_terminated(db_path: str) -> None:
    async with connect(db_path) as agent, connect(db_path, role="operator") as operator:
        await start(agent)
        escalation_id = (await raise_repeated_error(agent))["escalation_id"]

        ended = await agent.call("end_task", task_id="t1", outcome="abandoned", note="agent crashed")
        assert ended["status"] == "abandoned"
        assert ended["closed_escalations"] == [escalation_id]
        assert ended["directive"] == "stop"

        kept = (await operator.call("get_escalation", escalation_id=escalation_id))["escalation"]
        assert kept["status"] == "agent_terminated"
        assert kept["triggers"][0]["type"] == "repeated_error"
        assert (await operator.call("list_escalations"))["total"] == 0
        late = await operator.error(
            "resolve_escalation", escalation_id=escalation_id, response_type="guidance", content="too late"
        )
        assert "agent_terminated" in late


async def test_completing_a_task_is_refused_while_the_latest_test_run_fails(db_path: str) -> None:
    async with connect(db_path) as agent:
        await start(agent)
        await agent.call(
            "report_progress", task_id="t1", files_modified=["src/a.py"], tests_passed=8, tests_failed=2
        )

        text = await agent.error("end_task", task_id="t1", outcome="completed")
        assert "2 failing" in text
        assert (await agent.call("get_task", task_id="t1"))["task"]["status"] == "active"

        await agent.call(
            "report_progress", task_id="t1", files_modified=["src/a.py"], tests_passed=10, tests_failed=0
        )
        done = await agent.call("end_task", task_id="t1", outcome="completed")
        assert done["status"] == "completed"
        assert done["directive"] == "stop"


async def test_agent_raises_a_follow_up_escalation_when_guidance_is_ambiguous(db_path: str) -> None:
    async with connect(db_path) as agent, connect(db_path, role="operator") as operator:
        await start(agent)
        first = (await raise_repeated_error(agent))["escalation_id"]
        await operator.call(
            "resolve_escalation", escalation_id=first, response_type="guidance", content="fix it"
        )
        await agent.call("get_escalation", escalation_id=first)
        await agent.call("acknowledge_response", escalation_id=first)

        follow_up = await agent.call(
            "raise_escalation",
            task_id="t1",
            reason="The guidance 'fix it' does not say which of the two callbacks to change",
            question="Change the success callback, the error callback, or both?",
            options=["success", "error", "both"],
            follow_up_of=first,
        )
        escalation = follow_up["escalation"]
        assert escalation["follow_up_of"] == first
        assert escalation["type"] == "ask_human"
        assert escalation["status"] == "pending"
        assert escalation["options"] == ["success", "error", "both"]
        assert follow_up["directive"] == "pause"

        pending = await operator.call("list_escalations")
        assert [e["escalation_id"] for e in pending["escalations"]] == [escalation["escalation_id"]]
        bad = await agent.error(
            "raise_escalation", task_id="t1", reason="again", follow_up_of=escalation["escalation_id"] + 100
        )
        assert "follow_up_of" in bad


async def test_a_blocker_read_off_the_output_escalates_once_it_repeats_and_a_declared_one_at_once(
    db_path: str,
) -> None:
    async with connect(db_path) as agent:
        await start(agent)
        message = "ModuleNotFoundError: No module named 'reproduce_app'"
        first = await agent.call(
            "record_failure", task_id="t1", message=message, attempted_action="python r.py"
        )
        second = await agent.call(
            "record_failure", task_id="t1", message=message, attempted_action="python r.py"
        )
        third = await agent.call(
            "record_failure", task_id="t1", message=message, attempted_action="python r.py"
        )
        await start(agent, task_id="t2")
        declared = await agent.call(
            "record_failure",
            task_id="t2",
            message="the CI token is missing",
            signal_type="missing_dependency",
        )

    assert first["failure"]["signal_type"] == "missing_dependency"
    assert first["escalation"] is None
    assert first["warning"] is None
    assert second["escalation"] is None
    assert "reproduce_app" in second["warning"]
    assert "python r.py" in second["warning"]
    assert third["escalation"]["type"] == "external_blocker"
    # What is missing first, then the error it was read from.
    summary = third["escalation"]["triggers"][0]["summary"]
    assert summary.startswith("missing dependency: "), summary
    assert "ModuleNotFoundError: No module named" in summary
    assert declared["escalation"]["type"] == "external_blocker"
