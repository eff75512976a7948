"""A verdict from a notification's link: a notification carries the escalation's page in the
console (``[elicitation] console_url``), where the operator logs in, reads it and answers it
with the optional verdict; an escalation answered elsewhere (the CLI, the agent's client) gets
a verdict form on the same page. Every verdict is a POST of the logged-in operator's session
with its CSRF token: no link changes anything by being opened."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from conftest import connect
from console_support import RunningConsole, console_in_thread, form_values, logged_in, run_async
from http_support import OPERATOR_TOKEN
from mcp_server_escalation.errors import Forbidden
from mcp_server_escalation.services.runtime import open_runtime
from mcp_server_escalation.services.verdicts import judge_escalation
from mcp_server_escalation.settings import ElicitationConfig, NotifyConfig, Settings
from mcp_server_escalation.store import verdicts as verdict_store
from operator_support import Receiver, eventually, receiver, run_cli

TRACEBACK = "Traceback (most recent call last):\n  File \"cart.py\", line 3\nKeyError: 'EUR'"


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningConsole]:
    with console_in_thread(tmp_path_factory.mktemp("verdict-link")) as running:
        yield running


async def repeated_error(db_path: str, task_id: str, heard: Receiver | None = None, **extra: object) -> int:
    """A repeated error raised by an agent's server; with ``heard``, the server stays up until
    the webhook has the escalation (a server that stops hands an unsent one to the next)."""
    async with connect(db_path, **extra) as agent:  # type: ignore[arg-type]
        await agent.call("start_task", title="Fix the cart", task_id=task_id, project="shop")
        for _ in range(3):
            result = await agent.call("record_failure", task_id=task_id, message=TRACEBACK)
        if heard is not None:
            await eventually(lambda: len(heard.delivered()) == 1, 45, "the webhook got the escalation")
    return int(result["escalation"]["escalation_id"])


def stored_verdict(db_path: str, escalation_id: int) -> tuple[str, str, str] | None:
    async def read() -> tuple[str, str, str] | None:
        async with open_runtime(Settings(db_path=db_path)) as rt:
            return await rt.db.read(lambda conn: verdict_store.verdict_of(conn, escalation_id))

    return run_async(read)


def test_the_notifications_link_leads_through_the_login_to_the_answer_and_its_verdict(
    console: RunningConsole,
) -> None:
    with receiver() as hook:
        escalation_id = run_async(
            lambda: repeated_error(
                console.db_path,
                "link-1",
                hook,
                notify=NotifyConfig(webhook_url=hook.url),
                elicitation=ElicitationConfig(console_url=f"{console.url}/"),
            )
        )
        sent = hook.delivered()[0].body
    link = f"{console.url}/escalations/{escalation_id}"
    assert sent["link"] == link
    assert sent["text"].endswith(f"answer it (saying whether it was useful) in the console: {link}")
    with httpx2.Client(headers={"Origin": console.url}) as browser:
        opened = browser.get(link)
        assert opened.status_code == 303
        login = opened.headers["location"]
        assert login.startswith("/login?next=")
        landed = browser.post(
            f"{console.url}/login", data={"token": OPERATOR_TOKEN, "next": f"/escalations/{escalation_id}"}
        )
        assert landed.headers["location"] == f"/escalations/{escalation_id}"
        page = browser.get(link).text
        assert "KeyError: &#39;EUR&#39;" in page
        assert 'name="verdict" value="false_alarm"' in page
        answer = {
            **form_values(page),
            "response_type": "guidance",
            "content": "Add EUR.",
            "verdict": "useful",
        }
        assert browser.post(f"{link}/answer", data=answer).status_code == 303
        assert "<dt>Verdict</dt><dd>useful, by console:operator</dd>" in browser.get(link).text
    kept = stored_verdict(console.db_path, escalation_id)
    assert kept is not None
    assert kept[:2] == ("useful", "console:operator")


def test_an_escalation_answered_in_the_cli_is_judged_on_its_page_with_the_sessions_csrf(
    console: RunningConsole, tmp_path: Path
) -> None:
    escalation_id = run_async(lambda: repeated_error(console.db_path, "link-2"))
    pending = run_async(lambda: repeated_error(console.db_path, "link-3"))
    code, _, err = run_async(
        lambda: run_cli(
            "--db",
            console.db_path,
            "escalations",
            "respond",
            str(escalation_id),
            "--guidance",
            "Add EUR",
            home=tmp_path,
        )
    )
    assert code == 0, err
    with logged_in(console) as operator:
        page = operator.get(f"/escalations/{escalation_id}").text
        assert f'action="/escalations/{escalation_id}/verdict"' in page
        assert "Keep the verdict" in page
        action = f"/escalations/{escalation_id}/verdict"
        forged = operator.post(action, data={"verdict": "false_alarm", "csrf": "not-the-token"})
        assert forged.status_code == 403
        assert stored_verdict(console.db_path, escalation_id) is None  # nothing kept
        csrf = form_values(page)["csrf"]
        assert operator.post(action, data={"verdict": "false_alarm", "csrf": csrf}).status_code == 303
        judged = operator.get(f"/escalations/{escalation_id}").text
        assert "<dt>Verdict</dt><dd>false alarm, by console:operator</dd>" in judged
        assert re.search(r'value="false_alarm" checked', judged)
        assert "Change the verdict" in judged
        # A pending escalation is judged with its answer, not on its own.
        early = operator.post(f"/escalations/{pending}/verdict", data={"verdict": "useful", "csrf": csrf})
        assert early.status_code == 409
        assert "give the verdict with the answer" in early.text
        stats = json.loads(
            run_async(lambda: run_cli("--db", console.db_path, "stats", "--json", home=tmp_path))[1]
        )
    assert stored_verdict(console.db_path, pending) is None
    assert any(v["false_alarm"] >= 1 for v in stats["verdicts"])
    with httpx2.Client(base_url=console.url, headers={"Origin": console.url}) as stranger:
        refused = stranger.post(
            f"/escalations/{escalation_id}/verdict", data={"verdict": "useful", "csrf": csrf}
        )
        assert refused.status_code == 401
    kept = stored_verdict(console.db_path, escalation_id)
    assert kept is not None
    assert kept[0] == "false_alarm"


def test_an_agent_gives_no_verdict_after_the_answer_either(console: RunningConsole) -> None:
    escalation_id = run_async(lambda: repeated_error(console.db_path, "link-4"))

    async def try_as_agent() -> None:
        async with open_runtime(Settings(db_path=console.db_path)) as rt:
            with pytest.raises(Forbidden, match="verdict"):
                await judge_escalation(
                    rt, escalation_id=escalation_id, verdict="false_alarm", role="agent", judged_by="agent"
                )

    run_async(try_as_agent)
    assert stored_verdict(console.db_path, escalation_id) is None
