"""The server declares what it sends and serves what it declares (MCP capabilities).

Handshake era: ``notifications/message`` is sent, so ``logging`` is declared and
``logging/setLevel`` is honoured per session; ``notifications/resources/updated`` is sent,
so ``resources.subscribe`` is true and an update goes only to the sessions subscribed to
that URI. Every test drives the real SDK client in memory against a real SQLite file; a
change made by another server on the same store (the operator's) reaches the clients
through the store's change feed, as in production.

A notification that must *not* arrive is checked after a later one that must: the change
feed hands changes over in order, so once the later one is here the earlier was decided.
"""

from __future__ import annotations

import pytest
from mcp import Client, MCPError, types

from conftest import connect, make_settings
from mcp_server_escalation.adapters.composition.server import build_server
from operator_support import Heard, eventually

WAIT = 10  # seconds; a bound on every wait, never a sleep


def _legacy(db_path: str, heard: Heard) -> Client:
    server = build_server(make_settings(db_path))
    return Client(server, mode="legacy", message_handler=heard)  # type: ignore[arg-type]


async def test_a_handshake_client_is_told_the_server_logs_and_takes_subscriptions(db_path: str) -> None:
    async with _legacy(db_path, Heard()) as client:
        capabilities = client.server_capabilities
        level_set = await client.set_logging_level("warning")
        subscribed = await client.subscribe_resource("escalation://pending")
        unsubscribed = await client.unsubscribe_resource("escalation://pending")

    assert capabilities is not None
    assert capabilities.logging is not None
    assert capabilities.resources is not None
    assert capabilities.resources.subscribe is True
    assert all(isinstance(r, types.EmptyResult) for r in (level_set, subscribed, unsubscribed))


async def test_a_2026_client_is_not_offered_logging_it_would_never_get(db_path: str) -> None:
    server = build_server(make_settings(db_path))
    async with Client(server) as client:  # mode="auto": 2026-07-28
        era = client.protocol_version
        capabilities = client.server_capabilities

    assert era == "2026-07-28"
    assert capabilities is not None
    assert capabilities.logging is None
    assert capabilities.resources is not None
    assert capabilities.resources.subscribe is True  # served by subscriptions/listen


async def test_updates_go_to_the_sessions_subscribed_to_that_uri_and_no_other(db_path: str) -> None:
    watcher, worker = Heard(), Heard()
    async with (
        _legacy(db_path, watcher) as watching,
        _legacy(db_path, worker) as working,
        connect(db_path, role="operator") as operator,
    ):
        await working.call_tool("start_task", {"title": "Wire the API", "task_id": "p-sub"})
        raised = await working.call_tool("raise_escalation", {"task_id": "p-sub", "reason": "Which scheme?"})
        escalation_id = raised.structured_content["escalation"]["escalation_id"]  # type: ignore[index]
        uri = f"escalation://{escalation_id}"
        await watching.subscribe_resource(uri)
        await watching.subscribe_resource("escalation://pending")

        await operator.call(
            "resolve_escalation", escalation_id=escalation_id, response_type="guidance", content="OAuth"
        )
        await eventually(lambda: uri in watcher.updated, WAIT, "the update to its subscriber")
        await eventually(lambda: worker.said("answered (guidance)"), WAIT, "the worker's log message")

    # The answer took it off the pending list: both subscribed URIs changed. (The watcher's
    # server may also have seen the creation after the watcher subscribed.)
    assert set(watcher.updated) == {uri, "escalation://pending"}
    # The worker subscribed to nothing: it is told in words, never with an update.
    assert worker.updated == []
    # The watcher never worked on the task: no log message about it.
    assert watcher.logs == []


async def test_an_unsubscribed_uri_is_updated_no_more(db_path: str) -> None:
    heard = Heard()
    async with _legacy(db_path, heard) as client, connect(db_path, role="operator") as operator:
        await operator.call("start_task", title="Other work", task_id="p-unsub")
        await client.subscribe_resource("escalation://pending")
        first = await operator.call("raise_escalation", task_id="p-unsub", reason="First?", blocking=False)
        await eventually(lambda: heard.updated == ["escalation://pending"], WAIT, "the first creation")

        await client.unsubscribe_resource("escalation://pending")
        sentinel = f"escalation://{first['escalation']['escalation_id']}"
        await client.subscribe_resource(sentinel)
        await operator.call("raise_escalation", task_id="p-unsub", reason="Second?", blocking=False)
        await operator.call(
            "resolve_escalation",
            escalation_id=first["escalation"]["escalation_id"],
            response_type="withdraw",
        )
        await eventually(lambda: sentinel in heard.updated, WAIT, "the sentinel's update")

    assert heard.updated == ["escalation://pending", sentinel]


async def test_log_messages_below_a_sessions_level_are_not_sent_to_it(db_path: str) -> None:
    quiet, chatty = Heard(), Heard()
    async with (
        _legacy(db_path, quiet) as quiet_client,
        _legacy(db_path, chatty) as chatty_client,
        connect(db_path, role="operator") as operator,
    ):
        await quiet_client.set_logging_level("warning")
        for client in (quiet_client, chatty_client):
            await client.call_tool("start_task", {"title": "Shared task", "task_id": "p-level"})
        first = await operator.call("raise_escalation", task_id="p-level", reason="Port?", blocking=False)
        first_id = first["escalation"]["escalation_id"]
        await eventually(lambda: quiet.said(f"Escalation {first_id} "), WAIT, "a warning (created)")

        await operator.call(
            "resolve_escalation", escalation_id=first_id, response_type="guidance", content="80"
        )
        await eventually(lambda: chatty.said("answered (guidance)"), WAIT, "a notice (answered)")
        second = await operator.call("raise_escalation", task_id="p-level", reason="Host?", blocking=False)
        second_id = second["escalation"]["escalation_id"]
        await eventually(lambda: quiet.said(f"Escalation {second_id} "), WAIT, "the next warning")

    assert {p.level for p in quiet.logs} == {"warning"}
    assert not quiet.said("answered")
    assert {p.level for p in chatty.logs} >= {"warning", "notice"}


@pytest.mark.parametrize(
    "uri",
    ["task://p-1", "failure://F-1", "escalation://abc", "https://example.com/escalation://1"],
)
async def test_subscribing_to_a_uri_that_never_sends_updates_is_refused_naming_it(
    db_path: str, uri: str
) -> None:
    async with _legacy(db_path, Heard()) as client:
        with pytest.raises(MCPError) as refused:
            await client.subscribe_resource(uri)

    assert refused.value.error.code == types.INVALID_PARAMS
    assert "uri" in refused.value.error.message
    assert "escalation://pending" in refused.value.error.message


async def test_a_session_holds_a_bounded_number_of_subscriptions(db_path: str) -> None:
    from mcp_server_escalation.adapters.mcp.client_notifications import MAX_SUBSCRIPTIONS

    async with _legacy(db_path, Heard()) as client:
        for n in range(1, MAX_SUBSCRIPTIONS + 1):
            await client.subscribe_resource(f"escalation://{n}")
        await client.subscribe_resource("escalation://1")  # already held: no new entry
        with pytest.raises(MCPError) as refused:
            await client.subscribe_resource(f"escalation://{MAX_SUBSCRIPTIONS + 1}")
        await client.unsubscribe_resource("escalation://1")
        after_unsubscribing = await client.subscribe_resource(f"escalation://{MAX_SUBSCRIPTIONS + 1}")

    assert refused.value.error.code == types.INVALID_PARAMS
    assert str(MAX_SUBSCRIPTIONS) in refused.value.error.message
    assert isinstance(after_unsubscribing, types.EmptyResult)
