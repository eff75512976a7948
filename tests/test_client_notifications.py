"""Client notifications: a connected client hears about its escalations' changes.

Handshake-era clients (what Claude Code and the Inspector speak) get a log message about
the escalations of the tasks they work on, and ``notifications/resources/updated`` for
``escalation://{id}`` once they subscribed to it; a 2026-07-28 client gets the same resource
update on a ``subscriptions/listen`` stream. The operator answers from the real CLI in
another process. (tests/test_protocol_capabilities.py covers levels and subscriptions.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from conftest import connect, make_settings
from mcp_server_escalation.adapters.composition.server import build_server
from operator_support import SCRIPT, Heard, eventually, run_cli


async def test_a_legacy_client_hears_an_answer_given_in_another_process(db_path: str, tmp_path: Path) -> None:
    heard = Heard()
    server = build_server(make_settings(db_path))
    home = tmp_path / "home"
    home.mkdir()
    async with Client(server, mode="legacy", message_handler=heard) as client:
        await client.call_tool("start_task", {"title": "Fix the adder", "task_id": "c-legacy"})
        for line in (1, 2, 3):
            result = await client.call_tool(
                "record_failure", {"task_id": "c-legacy", "message": "TypeError: bad operand", "line": line}
            )
        escalation_id = result.structured_content["escalation"]["escalation_id"]  # type: ignore[index]
        uri = f"escalation://{escalation_id}"
        await client.subscribe_resource(uri)
        before = len(heard.updated)

        code, _, err = await run_cli(
            "--db", db_path, "escalations", "respond", str(escalation_id), "--guidance", "Cast with int()",
            home=home,
        )  # fmt: skip
        await eventually(
            lambda: any("answered (guidance)" in m for m in heard.about(escalation_id)),
            60,
            "the answer given in the CLI process",
        )

    assert code == 0, err
    assert heard.updated[before:].count(uri) >= 1
    # Its own record_failure created the escalation and said so in its result: no message.
    (answered,) = heard.about(escalation_id)
    assert answered == (
        f"Escalation {escalation_id} of task c-legacy was answered (guidance) by cli:"
        + answered.split(" by cli:")[1].split(":")[0]
        + f": read it with get_escalation({escalation_id}) and call acknowledge_response({escalation_id})."
    )
    levels = {p.level for p in heard.logs}
    assert levels <= {"warning", "info", "notice"}
    assert all(p.logger == "escalation" for p in heard.logs)


async def test_a_client_is_not_told_about_escalations_of_tasks_it_never_touched(
    db_path: str, tmp_path: Path
) -> None:
    heard = Heard()
    server = build_server(make_settings(db_path))
    async with Client(server, mode="legacy", message_handler=heard) as client:
        await client.call_tool("start_task", {"title": "Mine", "task_id": "c-mine"})
        async with connect(db_path) as other:  # another agent, another session
            await other.call("start_task", title="Theirs", task_id="c-theirs")
            theirs = await other.call("raise_escalation", task_id="c-theirs", reason="Which DB?")
            mine = await other.call("raise_escalation", task_id="c-mine", reason="Which port?")
        mine_id = mine["escalation"]["escalation_id"]
        await eventually(lambda: heard.about(mine_id), 60, "its own task's escalation")

    assert f"escalation://{theirs['escalation']['escalation_id']}" not in heard.updated
    assert heard.about(theirs["escalation"]["escalation_id"]) == []
    raised = f"Escalation {mine_id} (question from the agent) was raised for task c-mine"
    assert heard.about(mine_id)[0].startswith(raised)


async def test_a_client_is_not_told_what_its_own_calls_caused_and_reported(db_path: str) -> None:
    # A client that opens a session per call closes it on the result; a message about the
    # change that result already reports came after it and broke the client's reader.
    heard = Heard()
    server = build_server(make_settings(db_path))
    async with Client(server, mode="legacy", message_handler=heard) as client:
        await client.call_tool("start_task", {"title": "Fix the adder", "task_id": "c-own"})
        results = [
            await client.call_tool("record_failure", {"task_id": "c-own", "message": "TypeError: bad op"})
            for _ in range(4)  # the third creates the escalation, the fourth adds to it
        ]
        asked = await client.call_tool("raise_escalation", {"task_id": "c-own", "reason": "Which type?"})
        asked_id = asked.structured_content["escalation"]["escalation_id"]  # type: ignore[index]
        await client.call_tool("resolve_escalation", {"escalation_id": asked_id, "response_type": "withdraw"})
        async with connect(db_path) as other:  # another connection, the same task
            theirs = await other.call("raise_escalation", task_id="c-own", reason="Which port?")
        theirs_id = theirs["escalation"]["escalation_id"]
        # The feed tells changes in commit order: once this one is heard, every earlier one was.
        await eventually(lambda: heard.about(theirs_id), 60, "the other connection's question")

    created = results[2].structured_content["escalation"]  # type: ignore[index]
    assert created is not None
    assert [str(p.data) for p in heard.logs if f"Escalation {theirs_id} " not in str(p.data)] == []
    told = heard.about(theirs_id)[0]
    assert told.startswith(f"Escalation {theirs_id} (question from the agent) was raised for task c-own")


async def test_a_2026_client_gets_the_update_on_its_listen_stream_and_no_unsolicited_log(
    db_path: str, tmp_path: Path
) -> None:
    heard = Heard()
    server = build_server(make_settings(db_path))
    home = tmp_path / "home"
    home.mkdir()
    events: list[Any] = []
    async with Client(server, message_handler=heard) as client:  # mode="auto": 2026-07-28
        era = client.protocol_version
        await client.call_tool("start_task", {"title": "Wire the API", "task_id": "c-modern"})
        raised = await client.call_tool(
            "raise_escalation", {"task_id": "c-modern", "reason": "Which scheme?"}
        )
        escalation_id = raised.structured_content["escalation"]["escalation_id"]  # type: ignore[index]
        uri = f"escalation://{escalation_id}"
        async with client.listen(resource_subscriptions=[uri]) as subscription:
            code, _, err = await run_cli(
                "--db", db_path, "escalations", "respond", str(escalation_id), "--guidance", "OAuth",
                home=home,
            )  # fmt: skip
            with anyio.fail_after(60):
                async for event in subscription:
                    events.append(event)
                    break

    assert code == 0, err
    assert era == "2026-07-28"
    assert [getattr(e, "uri", None) for e in events] == [uri]
    assert heard.logs == []  # the newer era forbids unsolicited log messages


async def test_over_real_stdio_the_answer_from_the_cli_reaches_the_client_as_notifications(
    db_path: str, tmp_path: Path
) -> None:
    heard = Heard()
    home = tmp_path / "home"
    home.mkdir()
    params = StdioServerParameters(command=str(SCRIPT), args=["--db", db_path])
    async with Client(params, mode="legacy", message_handler=heard) as client:  # type: ignore[arg-type]
        await client.call_tool("start_task", {"title": "Wire the API", "task_id": "c-stdio"})
        raised = await client.call_tool("raise_escalation", {"task_id": "c-stdio", "reason": "Which scheme?"})
        escalation_id = raised.structured_content["escalation"]["escalation_id"]  # type: ignore[index]
        await client.subscribe_resource(f"escalation://{escalation_id}")
        answer = ["escalations", "respond", str(escalation_id), "--guidance", "OAuth"]
        code, _, err = await run_cli("--db", db_path, *answer, home=home)
        await eventually(
            lambda: any("answered (guidance)" in m for m in heard.about(escalation_id)), 5, "the answer"
        )

    assert code == 0, err
    assert f"escalation://{escalation_id}" in heard.updated
