"""Every place a failure is summarised shows its error line, on one line (issue 14, part 4).

A failure recorded with a whole traceback as its message escalates; the trigger summary,
the tools' escalation list, ``escalations list``/``show``/``watch`` in the CLI, the
notifiers, the client's log message, the hook's ``additionalContext`` and the guidance
items all carry ``KeyError: 'EUR'``, never ``Traceback (most recent call last):``, and no
newline reaches a one-line surface. Real servers on temp stores throughout.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, types

from conftest import Agent, connect, make_settings
from hooks_support import bash_failure, every_repeat, hook
from mcp_server_escalation.adapters.composition.server import build_server
from mcp_server_escalation.settings import NotifyConfig
from operator_support import eventually, run_cli

pytestmark = pytest.mark.both_backends

ERROR = "KeyError: 'EUR'"
BANNER = "Traceback (most recent call last):"
TRACEBACK = f"""\
DEBUG: cart has 3 items
{BANNER}
  File "/app/reproduce.py", line 12, in <module>
    main()
  File "/app/shop/cart.py", line 41, in main
    total = price(item)
  File "/app/shop/cart.py", line 18, in price
    return PRICES[item.currency]
           ~~~~~~^^^^^^^^^^^^^^^
{ERROR}
"""


async def _escalate(agent: Agent, task_id: str, message: str = TRACEBACK) -> dict[str, Any]:
    """Three identical failures of a new task: the repeated_error escalation they raise."""
    await agent.call("start_task", title="Price the cart", task_id=task_id)
    result: dict[str, Any] = {}
    for _ in range(3):
        result = await agent.call("record_failure", task_id=task_id, message=message)
    assert result["escalation"] is not None
    return result["escalation"]  # type: ignore[no-any-return]


async def test_a_trigger_summary_leads_with_the_error_line_of_a_traceback(db_path: str) -> None:
    async with connect(db_path) as agent:
        escalation = await _escalate(agent, "s-summary")
        listed = await agent.call("list_escalations", status="pending")

    summary = escalation["triggers"][0]["summary"]
    assert summary.startswith(ERROR)
    assert "\n" not in summary
    assert BANNER not in summary
    assert [e["headline"] for e in listed["escalations"]] == [summary]


async def test_the_list_shows_each_escalation_as_a_row_and_its_error_under_it(
    db_path: str, tmp_path: Path
) -> None:
    async with connect(db_path) as agent:
        await _escalate(agent, "s-list-1")
        await _escalate(agent, "s-list-2", TRACEBACK.replace(ERROR, "ValueError: no price for 'USD'"))

    code, out, err = await run_cli("--db", db_path, "escalations", "list", home=tmp_path)

    assert code == 0, err
    *lines, footer = out.splitlines()
    assert footer == "(2 of 2)"
    # Each escalation: its row, who raised it (agent, project, age), then its error line.
    assert [line.split()[-1] for line in lines[::3]] == ["s-list-2", "s-list-1"]
    assert lines[1].startswith("  agent ")
    assert lines[2].startswith("  ValueError: no price for")
    assert lines[5].startswith(f"  {ERROR}")
    assert BANNER not in out


async def test_show_prints_each_trigger_by_its_error_line(db_path: str, tmp_path: Path) -> None:
    async with connect(db_path) as agent:
        escalation = await _escalate(agent, "s-show")

    code, out, err = await run_cli(
        "--db", db_path, "escalations", "show", str(escalation["escalation_id"]), home=tmp_path
    )

    assert code == 0, err
    lines = out.splitlines()
    triggers = out.split("\nTriggers\n")[1].split("\nEvidence\n")[0].splitlines()
    # The headline under the first line is the trigger's error line; the trigger is not
    # made to say it again.
    assert lines[1].startswith(f"{ERROR} (")
    assert triggers[0] == "  - repeated error"
    assert out.count(ERROR) == 1


@pytest.mark.sqlite_only  # writes an old row into the SQLite file itself
async def test_an_escalation_stored_with_a_multi_line_summary_is_still_listed_on_one_line(
    db_path: str, tmp_path: Path
) -> None:
    # Summaries written before this release kept the message's first 300 characters,
    # newlines and all: displayed, they give the error line too.
    async with connect(db_path) as agent:
        escalation = await _escalate(agent, "s-old")
    conn = sqlite3.connect(db_path)
    with conn:
        (stored,) = conn.execute(
            "SELECT triggers_json FROM escalations WHERE escalation_id = ?", (escalation["escalation_id"],)
        ).fetchone()
        triggers = json.loads(stored)
        triggers[0]["summary"] = "The same error occurred 3 times in a row (threshold 3): " + TRACEBACK
        conn.execute(
            "UPDATE escalations SET triggers_json = ? WHERE escalation_id = ?",
            (json.dumps(triggers), escalation["escalation_id"]),
        )
    conn.close()

    code, out, err = await run_cli("--db", db_path, "escalations", "list", home=tmp_path)

    assert code == 0, err
    assert len(out.splitlines()) == 4  # the row, who raised it, the error line, the count
    assert out.splitlines()[2].endswith(ERROR)


async def test_notifiers_get_the_error_line_in_their_text(db_path: str, tmp_path: Path) -> None:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    notify = NotifyConfig(command=f'cat > "{inbox}/$ESCALATION_ID.json"')
    async with connect(db_path, mode="legacy", notify=notify) as agent:
        escalation = await _escalate(agent, "s-notify")
        received = inbox / f"{escalation['escalation_id']}.json"
        await eventually(lambda: received.exists() and received.stat().st_size > 0, 60, "the notification")
        await eventually(lambda: json.loads(received.read_text()), 60, "the whole notification")

    text = json.loads(received.read_text())["text"]
    assert f"awaits a human: {ERROR} (" in text
    assert "\n" not in text
    assert BANNER not in text


async def test_a_client_log_message_carries_the_error_line(db_path: str) -> None:
    logs: list[str] = []

    async def heard(message: Any) -> None:
        if isinstance(message, types.LoggingMessageNotification):
            logs.append(str(message.params.data))

    async with Client(build_server(make_settings(db_path)), mode="legacy", message_handler=heard) as client:
        await Agent(client).call("start_task", title="Price the cart", task_id="s-client")
        # Another connection's failures: a client is not told what its own call reported.
        async with connect(db_path) as other:
            escalation = await _escalate(other, "s-client")
        created = f"Escalation {escalation['escalation_id']} (repeated error) was raised"
        await eventually(lambda: any(m.startswith(created) for m in logs), 60, "the log message")

    message = next(m for m in logs if m.startswith(created))
    assert message.endswith(f"awaits a human: {escalation['triggers'][0]['summary']}")
    assert ERROR in message
    assert "\n" not in message


async def test_the_hook_context_of_an_escalation_names_the_error_line(tmp_path: Path) -> None:
    db = str(tmp_path / "hooks.db")
    context = ""
    for n in (1, 2, 3):
        failed = bash_failure("python reproduce.py", TRACEBACK, f"toolu_tb{n}")
        # the pause from the task's first calls: no grace
        run = await hook("claude-code", failed, db=db, tmp=tmp_path, ESCALATION_CONFIG=every_repeat(tmp_path))
        assert run.returncode == 0, run.stderr
        if run.stdout:
            context = run.json()["hookSpecificOutput"]["additionalContext"]

    assert "(repeated error)" in context
    assert f": {ERROR} (the same error 3 times, at most one other error between" in context
    assert BANNER not in context


async def test_guidance_items_summarise_a_recorded_traceback_by_its_error(db_path: str) -> None:
    async with connect(db_path) as agent:
        await agent.call("start_task", title="Price the cart", task_id="s-guide")
        await agent.call("record_failure", task_id="s-guide", message=TRACEBACK)
        guidance = await agent.call("get_guidance", task_id="s-guide", query="price cart")

    (item,) = guidance["items"]
    assert item["summary"].endswith(ERROR)
    assert BANNER not in guidance["rendered"]


async def test_an_agents_reason_becomes_a_one_line_summary(db_path: str) -> None:
    async with connect(db_path) as agent:
        await agent.call("start_task", title="Price the cart", task_id="s-reason")
        crashed = await agent.call(
            "raise_escalation", task_id="s-reason", reason=TRACEBACK, kind="system_error"
        )
        await agent.call("start_task", title="Price the cart", task_id="s-ask")
        asked = await agent.call(
            "raise_escalation", task_id="s-ask", reason="Which currency?\nEUR or USD?\nThe spec says both."
        )

    assert crashed["escalation"]["triggers"][0]["summary"].endswith(f": {ERROR}")
    assert crashed["escalation"]["reason"] == TRACEBACK  # the whole reason stays
    assert asked["escalation"]["triggers"][0]["summary"].endswith(
        ": Which currency? EUR or USD? The spec says both."
    )
