"""Operator notifiers (within 5 s of an escalation): a real shell command and a real loopback webhook.

Every server here is the real one (in-memory SDK client or a stdio subprocess) on a temp
store file; every wait is bounded polling under ``anyio.fail_after``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from conftest import FakeClock, connect
from mcp_server_escalation.services import escalation_answers, escalation_raising, notifiers, tasks
from mcp_server_escalation.services.notifiers import DeliveryFailed, configured
from mcp_server_escalation.services.notify import Outbox
from mcp_server_escalation.services.runtime import open_runtime
from mcp_server_escalation.settings import NotifyConfig, Settings
from operator_support import (
    SCRIPT,
    DeliveryReads,
    deliveries,
    delivery_reads,
    eventually,
    receiver,
    run_cli,
    write_config,
)

pytestmark = pytest.mark.both_backends


def recorded(read: DeliveryReads, escalation_id: int, count: int) -> Callable[[], Awaitable[bool]]:
    """A check: ``count`` deliveries of the escalation are committed as delivered."""

    async def check() -> bool:
        return sum(d.delivered_at is not None for d in await read(escalation_id)) == count

    return check


async def _ask(agent: Any, task_id: str, reason: str = "Which auth scheme should the API use?") -> int:
    await agent.call("start_task", title="Wire the API", task_id=task_id)
    raised = await agent.call("raise_escalation", task_id=task_id, reason=reason)
    return int(raised["escalation"]["escalation_id"])


async def test_command_and_webhook_each_get_a_new_escalation(db_path: str, tmp_path: Path) -> None:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    command = f'cat > "{inbox}/$ESCALATION_ID-$ESCALATION_EVENT.json"'
    with receiver() as hook:
        notify = NotifyConfig(command=command, webhook_url=hook.url)
        async with connect(db_path, mode="legacy", notify=notify) as agent, delivery_reads(db_path) as read:
            escalation_id = await _ask(agent, "n-both")
            received = inbox / f"{escalation_id}-created.json"
            await eventually(
                lambda: received.exists() and received.stat().st_size > 0 and len(hook.delivered()) == 1,
                60,
                "command and webhook both received the escalation",
            )
            # Received; now also committed as delivered by the sender (and the file complete).
            await eventually(recorded(read, escalation_id, 2), 60, "both deliveries were recorded")
            records = await read(escalation_id)

    by_command = json.loads(received.read_text())
    by_webhook = hook.delivered()[0].body
    assert by_command["escalation_id"] == by_webhook["escalation_id"] == escalation_id
    assert by_command["event"] == by_webhook["event"] == "created"
    assert by_command["status"] == "pending"
    assert by_command["task_id"] == "n-both"
    assert by_command["triggers"][0]["type"] == "ask_human"
    # The webhook gets the same fields, with the text summary chat services display.
    assert by_webhook == by_command
    assert f"Escalation {escalation_id} (question from the agent) on task n-both" in by_webhook["text"]
    assert "Which auth scheme should the API use?" in by_webhook["text"]
    assert sorted((d.notifier.split(":")[0], d.attempts, d.delivered_at is not None) for d in records) == [
        ("command", 1, True),
        ("webhook", 1, True),
    ]
    # The store never holds the webhook's URL, only a digest of it.
    assert all(hook.url not in d.notifier for d in records)


async def test_a_webhook_failing_twice_is_retried_with_backoff_and_delivered_once(
    db_path: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="mcp_server_escalation.services.notify")
    with receiver(statuses=[500, 503]) as hook:
        notify = NotifyConfig(webhook_url=hook.url, retry_seconds=0.1, retry_max_seconds=0.5)
        async with connect(db_path, notify=notify) as agent, delivery_reads(db_path) as read:
            escalation_id = await _ask(agent, "n-retry")
            await eventually(lambda: len(hook.delivered()) == 1, 60, "the third attempt was accepted")
            await eventually(recorded(read, escalation_id, 1), 60, "the delivery was recorded")
            records = await read(escalation_id)
            # Another complete pass, as a fresh process would make: nothing is due any more.
            async with open_runtime(Settings(db_path=db_path, notify=notify)) as rt:
                again = await Outbox(rt, configured(notify)).deliver_due()

    assert [r.status for r in hook.for_escalation(escalation_id)] == [500, 503, 200]
    first, second, third = (r.at for r in hook.for_escalation(escalation_id))
    assert second - first >= 0.1  # backoff: 0.1 s, then 0.2 s
    assert third - second >= 0.2
    (record,) = records
    assert record.attempts == 3
    assert record.delivered_at is not None
    assert record.last_error == "HTTP 503 Service Unavailable"
    assert again == []
    assert len(hook.requests) == 3
    failures = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(failures) == 2
    assert "failed on attempt 1: HTTP 500" in failures[0]
    assert any("delivered to webhook:" in r.getMessage() for r in caplog.records)


async def test_notifiers_that_always_fail_never_block_or_fail_the_tool_call(db_path: str) -> None:
    with receiver(hold=True) as hook:  # a webhook that accepts and never answers
        notify = NotifyConfig(
            command="echo 'notify-send: no display' >&2; exit 3",
            webhook_url=hook.url,
            timeout_seconds=1.5,
            retry_seconds=0.1,
            retry_max_seconds=0.2,
        )
        async with connect(db_path, notify=notify) as agent, delivery_reads(db_path) as read:
            await agent.call("start_task", title="Fix the adder", task_id="n-fail")
            webhook_ended_before_the_call_returned = []
            for line in (10, 20, 30, 40, 50):
                if line == 40:  # from here on a webhook attempt hangs while the agent calls
                    await eventually(lambda: hook.requests, 60, "an attempt is hanging in the webhook")
                result = await agent.call(
                    "record_failure", task_id="n-fail", message="TypeError: bad operand", line=line
                )
                # The first webhook attempt hangs for its 1.5 s: a call that waited for it would
                # return after it ended. (The store's one escalation is number 1.)
                webhook_ended_before_the_call_returned.append(
                    any(d.last_error for d in await read(1) if d.notifier.startswith("webhook"))
                )
            escalation_id = result["holding"]["escalation_id"]

            async def both_failed_repeatedly() -> bool:
                records = {d.notifier.split(":")[0]: d for d in await read(escalation_id)}
                return (
                    records.get("command") is not None
                    and records["command"].attempts >= 2
                    and records.get("webhook") is not None
                    and records["webhook"].last_error is not None
                )

            await eventually(both_failed_repeatedly, 60, "both notifiers failed and were retried")
            # The agent keeps working while the notifiers keep failing.
            view = await agent.call("get_task", task_id="n-fail")
            records = {d.notifier.split(":")[0]: d for d in await read(escalation_id)}

    assert result["directive"] == "pause"
    # Every call, including those made while a webhook attempt hung for its 1.5 s, returned
    # without waiting for it: each returned while that attempt was still hanging.
    assert webhook_ended_before_the_call_returned == [False] * 5
    assert view["task"]["status"] == "paused"
    assert view["pending_escalation"]["escalation_id"] == escalation_id
    assert records["command"].delivered_at is None
    assert records["command"].last_error == "command exited with status 3: notify-send: no display"
    assert records["webhook"].delivered_at is None
    assert records["webhook"].last_error == "no answer within 1.5 s"
    assert hook.delivered() == []


async def test_a_webhook_whose_socket_times_out_first_reads_no_answer_as_well() -> None:
    # The socket's timeout and the caller's limit are the same number of seconds, so which
    # one ends the wait is a race; here the socket's alone can (the caller's limit is far
    # above it), and the operator must read the same words as when the limit ends it.
    with receiver(hold=True) as hook, pytest.raises(DeliveryFailed) as failed:
        await anyio.to_thread.run_sync(notifiers._post, hook.url, b"{}", 0.5)
    assert str(failed.value) == "no answer within 0.5 s"


async def _rpc(process: Any, message: dict[str, Any]) -> dict[str, Any] | None:
    await process.stdin.send((json.dumps(message) + "\n").encode())
    if "id" not in message:
        return None
    buffer = b""
    while True:
        buffer += await process.stdout.receive()
        *lines, buffer = buffer.split(b"\n")  # the last piece may be an unfinished line
        for line in lines:
            if line.strip():
                reply = json.loads(line)
                if reply.get("id") == message["id"]:
                    return reply  # type: ignore[no-any-return]


async def _raise_over_raw_stdio(process: Any, task_id: str) -> int:
    """Handshake, start a task and raise an escalation with raw JSON-RPC lines."""
    hello = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    }
    await _rpc(process, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello})
    await _rpc(process, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    calls = [
        ("start_task", {"title": "Wire the API", "task_id": task_id}),
        ("raise_escalation", {"task_id": task_id, "reason": "Which auth scheme?"}),
    ]
    reply: dict[str, Any] | None = None
    for n, (tool, arguments) in enumerate(calls, start=2):
        params = {"name": tool, "arguments": arguments}
        reply = await _rpc(process, {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": params})
    assert reply is not None
    return int(reply["result"]["structuredContent"]["escalation"]["escalation_id"])


async def test_a_server_killed_mid_delivery_leaves_the_delivery_to_the_next_process(
    db_path: str, tmp_path: Path
) -> None:
    # The webhook holds every request until the first server is dead, so that server can
    # never complete a delivery, however slow the machine is.
    with receiver(hold=True) as hook:
        config = write_config(
            tmp_path / "notify.toml", webhook_url=hook.url, timeout_seconds=1, retry_seconds=0.2
        )
        with anyio.fail_after(30):
            process = await anyio.open_process([str(SCRIPT), "--db", db_path, "--config", str(config)])
            try:
                escalation_id = await _raise_over_raw_stdio(process, "n-kill")
                await eventually(lambda: hook.requests, 60, "the first attempt reached the webhook")
            finally:
                process.kill()  # SIGKILL: no clean-up of any kind
                await process.wait()
        (left,) = await deliveries(db_path, escalation_id)
        hook.hold = False

        # The next process that opens the store: another server, launched as agents launch it.
        params = StdioServerParameters(command=str(SCRIPT), args=["--db", db_path, "--config", str(config)])
        async with Client(params, mode="legacy") as client, delivery_reads(db_path) as read:  # type: ignore[arg-type]
            await client.list_tools()
            await eventually(hook.delivered, 60, "the next server delivered it")
            # The receiver has answered; wait for the sender to commit the outcome too.
            await eventually(recorded(read, escalation_id, 1), 60, "the delivery was recorded")
        (done,) = await deliveries(db_path, escalation_id)

    assert left.attempts >= 1  # 1 unless the machine was slow enough for a retry before the kill
    assert left.delivered_at is None
    # Killed mid-send: its claim is left to run out (between two attempts: a retry time).
    assert left.lease_until is not None or left.next_attempt_at is not None
    assert done.attempts == left.attempts + 1
    assert done.delivered_at is not None
    assert [r.status for r in hook.for_escalation(escalation_id)] == [None] * left.attempts + [200]


async def test_an_escalation_raised_without_notifiers_goes_out_with_the_next_cli_command(
    db_path: str, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    async with connect(db_path) as agent:  # an agent's server with no [notify] table
        escalation_id = await _ask(agent, "n-later")
    with receiver() as hook:
        config = write_config(tmp_path / "notify.toml", webhook_url=hook.url)
        code, out, err = await run_cli(
            "--db", db_path, "--config", str(config), "escalations", "list", home=home
        )
        records = await deliveries(db_path, escalation_id)
        _, shown, _ = await run_cli("--db", db_path, "escalations", "show", str(escalation_id), home=home)

    assert code == 0, err
    assert f"{escalation_id}" in out
    assert [r.body["escalation_id"] for r in hook.delivered()] == [escalation_id]
    assert records[0].delivered_at is not None
    notified = shown.split("\nNotified\n", 1)[1].splitlines()
    assert notified[0].split()[:3] == ["created", records[0].notifier, "delivered"]


async def test_pending_escalations_are_renotified_every_renotify_minutes(
    db_path: str, tmp_path: Path
) -> None:
    log = tmp_path / "notifications.jsonl"
    clock = FakeClock()
    notify = NotifyConfig(command=f'cat >> "{log}"; echo >> "{log}"', renotify_minutes=30)
    settings = Settings(db_path=db_path, project_root="/work/project", notify=notify)

    def sent() -> list[dict[str, Any]]:
        return (
            [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
            if log.exists()
            else []
        )

    async with open_runtime(settings, clock) as rt:
        outbox = Outbox(rt, configured(notify))
        await tasks.start_task(rt, title="Wire the API", task_id="n-re")
        raised = await escalation_raising.raise_escalation(rt, task_id="n-re", reason="Which auth scheme?")
        escalation_id = raised.escalation.escalation_id
        rounds = [len(await outbox.deliver_due())]  # at creation
        for minutes in (29, 1, 10, 20):  # 29, 30, 40 and 60 minutes after creation
            clock.advance(minutes=minutes)
            rounds.append(len(await outbox.deliver_due()))
        await escalation_answers.resolve_escalation(
            rt, escalation_id=escalation_id, response_type="guidance", content="OAuth", role="operator"
        )
        clock.advance(minutes=60)
        rounds.append(len(await outbox.deliver_due()))

    assert rounds == [1, 0, 1, 0, 1, 0]
    events = [(n["escalation_id"], n["event"]) for n in sent()]
    assert events == [(escalation_id, "created"), (escalation_id, "renotify"), (escalation_id, "renotify")]
    assert "Still pending after 30 min" in sent()[1]["text"]
    assert "Still pending after 60 min" in sent()[2]["text"]


async def test_a_server_shutting_down_mid_delivery_hands_it_back_for_the_next_process(db_path: str) -> None:
    with receiver(hang_first=1) as hook:
        notify = NotifyConfig(webhook_url=hook.url, timeout_seconds=30)
        async with connect(db_path, notify=notify) as agent:
            escalation_id = await _ask(agent, "n-shutdown")
            await eventually(lambda: len(hook.requests) == 1, 60, "the attempt is in flight")
        # The client went away, so the server's lifespan ended with the webhook still silent.
        (released,) = await deliveries(db_path, escalation_id)

    assert released.attempts == 1
    assert released.delivered_at is None
    assert released.lease_until is None  # no need to wait 32 s for the lease to run out
    assert released.next_attempt_at is not None


async def test_four_servers_on_one_store_send_each_announcement_once(db_path: str) -> None:
    """Every server delivers notifications; they claim announcements, so none goes twice."""
    with receiver() as hook:
        notify = NotifyConfig(webhook_url=hook.url)
        async with (
            connect(db_path, notify=notify) as asking,
            connect(db_path, notify=notify),
            connect(db_path, notify=notify),
            connect(db_path, notify=notify),
            delivery_reads(db_path) as read,
        ):
            asked = [await _ask(asking, f"n-four-{n}", f"Question {n}?") for n in range(8)]
            for escalation_id in asked:
                await eventually(
                    recorded(read, escalation_id, 1), 60, f"escalation {escalation_id} delivered"
                )
            await eventually(lambda: len(hook.delivered()) >= len(asked), 60, "every delivery received")
            received = sorted(d.body["escalation_id"] for d in hook.delivered())
            records = [d for e in asked for d in await read(e)]

    assert received == sorted(asked)
    assert [(d.attempts, d.delivered_at is not None) for d in records] == [(1, True)] * len(asked)
