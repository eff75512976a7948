"""What the operator reads, said as a person would: durations worded alike by the console and
the CLI ("10 min", "2 h", "95th percentile", "not met"), readable UTC times in ``failures
show``, a delivery that no retry follows said so, what is absent said as what it is ("no
files", "no error"), kinds in words in the queue's filter, a scope check worded as the rule
it is, and no concurrency number on the escalation page.

One store, written by a real server (the SDK's in-memory client) and the operator services,
read by a console in this process over HTTP and by the operator CLI's ``main`` run in this process
(``in_process.py``: the words are the point, not the process boundary).
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from conftest import FakeClock, connect
from console_support import RunningConsole, console_in_thread, form_values, logged_in, run_async
from mcp_server_escalation.cli.monitor import delivery_lines
from mcp_server_escalation.models.reports import Delivery
from mcp_server_escalation.services import escalation_answers, escalation_raising, tasks
from mcp_server_escalation.services.runtime import open_runtime
from mcp_server_escalation.settings import Settings
from operator_support import receiver, run_cli, write_config

# Readable UTC, as every other time in the CLI; never ISO's T or Z.
UTC_TIME = r"20\d\d-\d\d-\d\d \d\d:\d\d:\d\d UTC"
SCOPE_RULE = "the task's scope src/calc/**; edits outside it escalate"


async def _answered_after(db_path: str, minutes: list[int]) -> None:
    """One question per entry, answered by an operator that many minutes after it was raised."""
    clock = FakeClock(datetime.now(UTC) - timedelta(hours=3))
    async with open_runtime(Settings(db_path=db_path, project_root="/p"), clock) as rt:
        for n, after in enumerate(minutes):
            clock.now = datetime.now(UTC) - timedelta(hours=3)
            await tasks.start_task(rt, title=f"Ask {n}", task_id=f"ask-{n}", project="p-ask")
            raised = await escalation_raising.raise_escalation(rt, task_id=f"ask-{n}", reason="Which way?")
            clock.advance(minutes=after)
            await escalation_answers.resolve_escalation(
                rt,
                escalation_id=raised.escalation.escalation_id,
                response_type="guidance",
                content="This way.",
                role="operator",
            )


async def write_the_store(db_path: str) -> dict[str, Any]:
    """A scope deviation, a failure seen twice, a task whose timeline touched no file, and
    answers that took 1, 10 and 120 minutes; the ids to look at."""
    made: dict[str, Any] = {}
    async with connect(db_path) as agent:
        await agent.call("start_task", title="Calc", task_id="calc", project="p-calc", scope=["src/calc/**"])
        gate = await agent.call("check_edit", task_id="calc", paths=["web/payments/checkout.py"])
        made["scope"] = gate["escalation"]["escalation_id"]
        await agent.call("start_task", title="Fail", task_id="fail", project="p-fail")
        for _ in range(2):
            failed = await agent.call("record_failure", task_id="fail", message="E   assert 9 == 10")
        made["failure"] = failed["failure"]["failure_id"]
    await _answered_after(db_path, [1, 10, 120])
    return made


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunningConsole, dict[str, Any]]]:
    with console_in_thread(tmp_path_factory.mktemp("operator-words")) as running:
        made = run_async(lambda: write_the_store(running.db_path))
        yield running, made


def pages(console: RunningConsole, *paths: str) -> list[str]:
    with logged_in(console) as operator:
        return [operator.get(path).text for path in paths]


async def cli(console: RunningConsole, home: Path, *args: str) -> str:
    code, out, err = await run_cli("--db", console.db_path, *args, home=home, COLUMNS="200")
    assert code == 0, err
    return out


async def test_the_cli_and_the_console_say_durations_alike_and_the_percentile_in_words(
    store: tuple[RunningConsole, dict[str, Any]], tmp_path: Path
) -> None:
    console, _ = store
    said = await cli(console, tmp_path, "stats")
    page = pages(console, "/stats")[0]
    assert "Answered by a human: 3   time to resolution: median 10 min, 95th percentile 2 h" in said
    assert "Resolved within 1 hour (target 95%): 2 of 3 (66.7%): not met" in said
    assert "<dt>Median time to answer</dt><dd>10 min</dd><dt>95th percentile</dt><dd>2 h</dd>" in page
    assert "p95" not in said
    assert "NOT met" not in said


async def test_failures_show_gives_its_times_in_readable_utc(
    store: tuple[RunningConsole, dict[str, Any]], tmp_path: Path
) -> None:
    console, made = store
    said = await cli(console, tmp_path, "failures", "show", made["failure"])
    lines = said.splitlines()
    assert any(re.fullmatch(rf"Seen      2 times, first {UTC_TIME}", line) for line in lines), said
    assert any(re.fullmatch(rf" +last {UTC_TIME}", line) for line in lines), said
    assert any(re.fullmatch(rf"Occurrence 2 of 2  {UTC_TIME}  agent \S+", line) for line in lines), said
    assert not re.search(r"\d\dT\d\d:\d\d", said), said


async def test_a_delivery_no_retry_follows_says_so_and_why(tmp_path: Path) -> None:
    db_path = str(tmp_path / "notified.db")
    async with connect(db_path) as agent:
        await agent.call("start_task", title="Ask", task_id="asked")
        raised = await agent.call("raise_escalation", task_id="asked", reason="Which?")
    escalation_id = raised["escalation"]["escalation_id"]
    with receiver([500] * 5) as hook:
        config = write_config(tmp_path / "notify.toml", webhook_url=hook.url)
        sent = await run_cli("--db", db_path, "--config", str(config), "escalations", "list", home=tmp_path)
    assert sent[0] == 0, sent[2]
    async with open_runtime(Settings(db_path=db_path, project_root="/p")) as rt:
        await escalation_answers.resolve_escalation(
            rt, escalation_id=escalation_id, response_type="guidance", content="This.", role="operator"
        )
    code, shown, err = await run_cli(
        "--db", db_path, "escalations", "show", str(escalation_id), home=tmp_path, COLUMNS="200"
    )
    assert code == 0, err
    notified = shown.split("\nNotified\n", 1)[1].splitlines()
    assert re.fullmatch(
        r"  created  webhook:[0-9a-f]+  not delivered after 1 attempt; no retry planned: the "
        r"escalation is resolved; last error: HTTP 500 Internal Server Error",
        notified[0],
    ), notified
    # An older announcement a re-notification replaced is not retried either.
    older = Delivery(
        outbox_id=1,
        escalation_id=1,
        event="created",
        notifier="webhook:ab12",
        attempts=2,
        next_attempt_at="2026-11-28T10:00:05.000Z",
        lease_until=None,
        delivered_at=None,
        last_error=None,
    )
    assert delivery_lines([older], 200, "pending", 2)[2] == (
        "  created  webhook:ab12  not delivered after 2 attempts; "
        "no retry planned: a later announcement replaced it"
    )
    assert delivery_lines([older], 200, "pending", 1)[2] == (
        "  created  webhook:ab12  not delivered after 2 attempts; next try 2026-11-28 10:00:05 UTC"
    )


def test_the_timeline_says_no_files_where_an_entry_touched_none(
    store: tuple[RunningConsole, dict[str, Any]],
) -> None:
    console, _ = store
    page = pages(console, "/tasks/fail")[0]
    timeline = page.split('id="timeline"', 1)[1]
    assert "<td>no files</td></tr>" in timeline
    assert "(none)" not in timeline


async def test_the_stats_say_no_error_for_a_notifier_that_never_failed(tmp_path: Path) -> None:
    db_path = str(tmp_path / "delivered.db")
    async with connect(db_path) as agent:
        await agent.call("start_task", title="Ask", task_id="told")
        await agent.call("raise_escalation", task_id="told", reason="Which?")
    with receiver() as hook:
        config = write_config(tmp_path / "notify.toml", webhook_url=hook.url)
        sent = await run_cli("--db", db_path, "--config", str(config), "escalations", "list", home=tmp_path)
        code, said, err = await run_cli(
            "--db", db_path, "--config", str(config), "stats", home=tmp_path, COLUMNS="200"
        )
    assert sent[0] == 0, sent[2]
    assert code == 0, err
    [row] = [line for line in said.split("\nNotifications\n", 1)[1].splitlines() if "webhook:" in line]
    assert row.split()[1:] == ["1", "0", "0", "no", "error"], row


def test_the_queue_filters_by_kind_in_words_and_sends_the_key(
    store: tuple[RunningConsole, dict[str, Any]],
) -> None:
    console, made = store
    page = pages(console, "/?type=scope_deviation")[0]
    form = page.split('<form class="filters"', 1)[1].split("</form>", 1)[0]
    assert '<label>Kind <select name="type"><option value="">any kind</option>' in form
    assert '<option value="scope_deviation" selected>scope deviation</option>' in form
    assert '<option value="ask_human">question from the agent</option>' in form
    assert f'<a href="/escalations/{made["scope"]}">' in page
    shown = re.sub(r"<[^>]*>", " ", form)
    assert "_" not in shown, shown


async def test_a_scope_check_reads_as_the_rule_it_is(
    store: tuple[RunningConsole, dict[str, Any]], tmp_path: Path
) -> None:
    console, made = store
    page = html.unescape(pages(console, f"/escalations/{made['scope']}")[0])
    said = await cli(console, tmp_path, "escalations", "show", str(made["scope"]))
    assert f"Threshold: {SCOPE_RULE}. Measured:" in page
    assert f"    threshold {SCOPE_RULE}" in said.splitlines()
    assert "checks its scope" not in page + said


def test_the_escalation_page_shows_no_revision_yet_its_form_still_carries_it(
    store: tuple[RunningConsole, dict[str, Any]],
) -> None:
    console, made = store
    page = pages(console, f"/escalations/{made['scope']}")[0]
    assert "Revision" not in page
    assert form_values(page)["revision"] == "1"
