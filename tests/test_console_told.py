"""The escalation page shows what the agent was told when the escalation fired, as it was told.

The agent is a real server (the in-memory SDK client) on the console's store; the console is
the installed script. The message is the one in the tool result that fired the escalation;
whatever the agent is told later (an answer to acknowledge, another failure) leaves it as it was.
"""

from __future__ import annotations

import html
import json
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import connect, migrate_by_hand
from console_support import RunningConsole, console_in_thread, form_values, logged_in
from mcp_server_escalation.models.results import Directed
from mcp_server_escalation.services import operator_queue as console_service
from mcp_server_escalation.services import tasks
from mcp_server_escalation.services.firing import TOLD_MESSAGE_CHARS, keep_told
from mcp_server_escalation.services.runtime import open_runtime
from mcp_server_escalation.settings import Settings
from mcp_server_escalation.store import escalations as escalation_store

pytestmark = pytest.mark.both_backends

ERROR = "KeyError: 'user_id' in load_profile() <b>bold</b>"


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningConsole]:
    with console_in_thread(tmp_path_factory.mktemp("console-told")) as running:
        yield running


def told_at_firing(page: str) -> tuple[str, str]:
    """The directive and the message the page says the agent was told when it fired."""
    found = re.search(
        r'<div id="told-at-firing">.*?<strong>([^<]*)</strong>.*?<p class="content">(.*?)</p></div>',
        page,
        re.DOTALL,
    )
    assert found, page
    return html.unescape(found.group(1)), html.unescape(found.group(2))


async def test_the_page_shows_the_message_that_fired_and_later_messages_do_not_change_it(
    console: RunningConsole,
) -> None:
    async with connect(console.db_path) as agent:
        await agent.call("start_task", title="Load profiles", task_id="told-failure")
        for _ in range(3):
            fired = await agent.call("record_failure", task_id="told-failure", message=ERROR)
    escalation_id = fired["escalation"]["escalation_id"]
    told = (fired["directive"], fired["message"])
    with logged_in(console) as operator:
        page = operator.get(f"/escalations/{escalation_id}").text
        assert told_at_firing(page) == told
        shown = form_values(page)
        answer = {**shown, "response_type": "guidance", "content": "Check the session's user first."}
        assert operator.post(f"/escalations/{escalation_id}/answer", data=answer).status_code == 303
    async with connect(console.db_path) as agent:
        later = [await agent.call("get_escalation", escalation_id=escalation_id)]
        later.append(await agent.call("acknowledge_response", escalation_id=escalation_id))
        later.append(await agent.call("record_failure", task_id="told-failure", message=ERROR))
    assert all(result["message"] != told[1] for result in later)
    with logged_in(console) as operator:
        assert told_at_firing(operator.get(f"/escalations/{escalation_id}").text) == told


async def test_an_agents_own_question_shows_what_raising_it_told_the_agent(console: RunningConsole) -> None:
    async with connect(console.db_path) as agent:
        await agent.call("start_task", title="Pick a port", task_id="told-question")
        raised = await agent.call("raise_escalation", task_id="told-question", reason="8080 or 8443?")
        await agent.call("report_progress", task_id="told-question", files_modified=["src/app.py"])
    escalation_id = raised["escalation"]["escalation_id"]
    with logged_in(console) as operator:
        page = operator.get(f"/escalations/{escalation_id}").text
    assert told_at_firing(page) == (raised["directive"], raised["message"])


def test_an_escalation_raised_before_this_version_says_its_message_was_not_recorded(tmp_path: Path) -> None:
    store = sqlite3.connect(tmp_path / "console.db", isolation_level=None)
    migrate_by_hand(store, upto=13)
    at = "2026-11-01T09:00:00.000Z"
    store.execute(
        "INSERT INTO tasks (task_id, title, project, agent_id, status, thresholds_json, created_at,"
        " updated_at) VALUES ('old', 'Old work', '/work/old', 'agent', 'paused', '{}', ?, ?)",
        (at, at),
    )
    store.execute(
        "INSERT INTO escalations (task_id, agent_id, generation, type, priority, blocking, status,"
        " response_options_json, context_json, reason, created_at, updated_at)"
        " VALUES ('old', 'agent', 1, 'ask_human', 'normal', 1, 'pending', ?, '{}', 'Which port?', ?, ?)",
        (json.dumps(["guidance", "terminate"]), at, at),
    )
    store.close()
    with console_in_thread(tmp_path) as old, logged_in(old) as operator:
        page = operator.get("/escalations/1").text
    not_recorded = "Not recorded (raised before this version of the server kept it)."
    assert f'<p id="told-at-firing">{not_recorded}</p>' in page


async def test_what_is_kept_of_a_message_is_bounded_and_the_first_one_stays() -> None:
    async with open_runtime(Settings(db_path=":memory:", project_root="/p")) as rt:
        await tasks.start_task(rt, title="t", task_id="long")
        long_message = "Stop: " + "x" * 20_000 + " the end."

        def fire_and_tell_twice(conn: sqlite3.Connection) -> int:
            escalation_id = escalation_store.insert(
                conn,
                task_id="long",
                agent_id="agent",
                generation=1,
                type_="ask_human",
                priority="normal",
                blocking=True,
                triggers=[],
                response_options=["guidance"],
                context={},
                reason="r",
                question=None,
                options=[],
                follow_up_of=None,
                now=rt.now(),
            )
            keep_told(rt, conn, escalation_id, Directed(directive="pause", message=long_message))
            keep_told(rt, conn, escalation_id, Directed(directive="proceed", message="Go on."))
            return escalation_id

        escalation_id = await rt.db.write(fire_and_tell_twice)
        kept = await console_service.told_when_fired(rt, escalation_id)
    assert kept is not None
    assert kept.directive == "pause"
    assert TOLD_MESSAGE_CHARS <= len(kept.message) < TOLD_MESSAGE_CHARS + 100
    assert kept.message.startswith("Stop: ")
    assert kept.message.endswith(" the end.")
