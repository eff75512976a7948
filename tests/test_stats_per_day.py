"""Escalations per day by type, with answered and waiting: counted by a pure rule over the last
14 days (UTC), drawn on the console's stats page as stacked SVG bars with the same counts in a
table (the chart's text alternative), and printed by ``stats``."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from conftest import connect
from console_support import RunningConsole, console_in_thread, logged_in, run_async
from mcp_server_escalation.rules.operators.stats import PER_DAY_DAYS, per_day
from operator_support import run_cli

NOW = datetime(2026, 11, 28, 9, 30, tzinfo=UTC)


def test_each_of_the_last_14_days_is_counted_by_type_with_answered_and_waiting() -> None:
    timings = [
        ("repeated_error", "resolved", "2026-11-28T00:00:00.000Z", "2026-11-28T00:05:00.000Z", "guidance"),
        ("repeated_error", "pending", "2026-11-28T09:00:00.000Z", None, None),
        ("ask_human", "withdrawn", "2026-11-27T23:59:59.999Z", "2026-11-28T00:01:00.000Z", "withdraw"),
        ("budget", "pending", "2026-11-15T00:00:00.000Z", None, None),  # the first day shown
        ("budget", "pending", "2026-11-14T23:59:59.999Z", None, None),  # a day too old
    ]
    days = per_day(timings, NOW)
    assert len(days) == PER_DAY_DAYS
    assert [days[0].day, days[-1].day] == ["2026-11-15", "2026-11-28"]
    assert days[-1].by_type == {"repeated_error": 2}
    assert (days[-1].total, days[-1].answered, days[-1].waiting) == (2, 1, 1)
    assert days[-2].by_type == {"ask_human": 1}
    assert (days[-2].answered, days[-2].waiting) == (0, 0)  # withdrawn: closed, not answered
    assert days[0].by_type == {"budget": 1}
    assert sum(day.total for day in days) == 4
    assert all(day.total == 0 for day in days[1:-2])


async def raise_over_days(db_path: str) -> None:
    """Two questions three days ago, a question and a repeated error today; one answered."""
    now = datetime.now(UTC)
    earlier = now - timedelta(days=3)
    async with connect(db_path, clock=lambda: earlier) as agent:
        for n in range(2):
            await agent.call("start_task", title="Ask", task_id=f"day-ask-{n}", project="shop")
            await agent.call(
                "raise_escalation", task_id=f"day-ask-{n}", reason="Which way?", question="Which?"
            )
    async with connect(db_path) as agent, connect(db_path, "operator") as operator:
        await agent.call("start_task", title="Ask today", task_id="day-ask-today", project="shop")
        raised = await agent.call("raise_escalation", task_id="day-ask-today", reason="Now?", question="Now?")
        await operator.call(
            "resolve_escalation",
            escalation_id=raised["escalation"]["escalation_id"],
            response_type="guidance",
            content="Yes.",
        )
        await agent.call("start_task", title="Repeat", task_id="day-repeat", project="shop")
        for _ in range(3):
            await agent.call("record_failure", task_id="day-repeat", message="KeyError: 'EUR'")


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningConsole]:
    with console_in_thread(tmp_path_factory.mktemp("per-day")) as running:
        run_async(lambda: raise_over_days(running.db_path))
        yield running


def test_the_stats_page_draws_escalations_per_day_by_kind_with_a_table_of_the_same_counts(
    console: RunningConsole,
) -> None:
    today = datetime.now(UTC).date()
    earlier = (today - timedelta(days=3)).isoformat()
    with logged_in(console) as client:
        page = html.unescape(client.get("/stats").text)
    chart = page[
        page.index('<svg class="chart days"') : page.index("</svg>", page.index('<svg class="chart days"'))
    ]
    assert 'role="img"' in chart
    assert 'aria-labelledby="per-day per-day-caption"' in chart
    titles = re.findall(r"<title>([^<]+)</title>", chart)
    assert f"{earlier}: 2 question from the agent" in titles
    assert f"{today.isoformat()}: 1 question from the agent" in titles
    assert f"{today.isoformat()}: 1 repeated error" in titles
    assert chart.count("<rect") == 3  # one bar per kind and day that has any
    assert "<li>" in page
    assert '<span class="swatch kind-' in page
    # The text alternative: a row per day, a column per kind shown, answered and waiting.
    row = re.search(rf"<tr><td>{earlier}</td>((?:<td>\d+</td>)+)</tr>", page)
    assert row is not None
    assert re.findall(r"<td>(\d+)</td>", row.group(1)) == ["0", "2", "2", "0", "2"]
    today_row = re.search(rf"<tr><td>{today.isoformat()}</td>((?:<td>\d+</td>)+)</tr>", page)
    assert today_row is not None
    assert re.findall(r"<td>(\d+)</td>", today_row.group(1)) == ["1", "1", "2", "1", "1"]
    assert "4 raised, 1 answered by a person, 3 still waiting for you" in page
    shown = page[page.index("<main>") :]
    for unwanted in ("ask_human", "repeated_error", "{"):
        assert unwanted not in shown, unwanted
    assert re.search(r"\b(True|False)\b(?! alarm)", shown) is None  # "False alarm" is a heading


def test_stats_prints_the_days_with_escalations_in_words(console: RunningConsole, tmp_path: Path) -> None:
    code, out, err = run_async(
        lambda: run_cli("stats", "--db", console.db_path, home=tmp_path, COLUMNS="120")
    )
    assert code == 0, err
    today = datetime.now(UTC).date().isoformat()
    assert re.search(rf"{today} +2 +1 +1 +1 question from the agent, 1 repeated error", out), out
    assert "KIND" in out
    assert "question from the agent" in out
    assert "ask_human" not in out
    code, out, err = run_async(lambda: run_cli("stats", "--json", "--db", console.db_path, home=tmp_path))
    assert code == 0, err
    days = json.loads(out)["per_day"]
    assert len(days) == PER_DAY_DAYS
    assert days[-1]["by_type"] == {"ask_human": 1, "repeated_error": 1}
