"""Counts read as a person writes them, on the console's pages and in the CLI's lines: "seen 1
time", "seen 4 times", "1 escalation", "3 escalations", never "time(s)".

One store, written by a real server (the SDK's in-memory client) and an operator's answers,
read by a console in this process over HTTP and by the operator CLI's ``main`` run in this process
(``in_process.py``: the words are the point, not the process boundary).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import connect
from console_support import RunningConsole, console_in_thread, logged_in, run_async
from mcp_server_escalation.cli.monitor import delivery_lines
from mcp_server_escalation.models.reports import Delivery
from mcp_server_escalation.services import escalation_answers
from mcp_server_escalation.services.runtime import open_runtime
from mcp_server_escalation.settings import Settings
from operator_support import receiver, run_cli, write_config

ERROR = "AssertionError: assert total() == 10\nE   assert 9 == 10"


async def fail(agent: Any, task_id: str, times: int) -> dict[str, Any]:
    """The same error ``times`` times on ``task_id``; the last result."""
    result: dict[str, Any] = {}
    for n in range(times):
        result = await agent.call(
            "record_failure",
            task_id=task_id,
            message=ERROR,
            file="tests/test_cart.py",
            line=31,
            attempted_action=f"rounded the tax, try {n}",
        )
    return result


async def write_the_store(db_path: str) -> dict[str, Any]:
    """Each count once as one and once as several; the ids to look at."""
    made: dict[str, Any] = {}
    async with connect(db_path) as agent:
        # An error seen once fires at a limit of 1; seen 4 times past the default of 3.
        once = {"same_error_repeated": 1}
        await agent.call("start_task", title="Once", task_id="once", project="p-once", thresholds=once)
        made["once"] = (await fail(agent, "once", 1))["escalation"]["escalation_id"]
        await agent.call("start_task", title="Four times", task_id="four", project="p-four")
        result = await fail(agent, "four", 4)
        made["four"] = result["failure"]["failure_id"]
        # A file limit of 1 with one file modified; a scope that refuses three paths.
        await agent.call(
            "start_task",
            title="Files",
            task_id="files",
            project="p-files",
            scope=["src/**"],
            thresholds={"files_modified_exceeds": 1},
        )
        await agent.call("report_progress", task_id="files", files_modified=["src/a.py"])
        await agent.call("check_edit", task_id="files", paths=["src/a.py"])
        gate = await agent.call("check_edit", task_id="files", paths=["src/b.py", "src/c.py"])
        made["files"] = gate["escalation"]["escalation_id"]
        # Three test runs at 80% pass after the first: stalled at a limit of 2.
        stall = {"no_test_improvement_after": 2}
        await agent.call("start_task", title="Stall", task_id="stall", project="p-stall", thresholds=stall)
        for _ in range(3):
            result = await agent.call("report_progress", task_id="stall", tests_passed=8, tests_failed=2)
        made["stall"] = result["escalation"]["escalation_id"]
        alarms = (("alarm-1", "p-one-alarm"), ("alarm-2", "p-two-alarms"), ("alarm-3", "p-two-alarms"))
        for task_id, project in alarms:
            await agent.call("start_task", title="Alarm", task_id=task_id, project=project)
            made[task_id] = (await fail(agent, task_id, 3))["escalation"]["escalation_id"]
    async with open_runtime(Settings(db_path=db_path, project_root="/p")) as rt:
        for task_id in ("alarm-1", "alarm-2", "alarm-3"):
            await escalation_answers.resolve_escalation(
                rt,
                escalation_id=made[task_id],
                response_type="guidance",
                content="Go on.",
                role="operator",
                verdict="false_alarm",
            )
    return made


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunningConsole, dict[str, Any]]]:
    with console_in_thread(tmp_path_factory.mktemp("counts")) as running:
        made = run_async(lambda: write_the_store(running.db_path))
        yield running, made


def pages(console: RunningConsole, *paths: str) -> list[str]:
    with logged_in(console) as operator:
        return [operator.get(path).text for path in paths]


def test_an_escalation_and_a_failure_say_seen_1_time_and_seen_4_times(
    store: tuple[RunningConsole, dict[str, Any]],
) -> None:
    console, made = store
    four = pages(console, "/tasks/four")[0]
    found = re.search(r'<a href="/escalations/(\d+)">#\d+ repeated error, pending</a>', four)
    assert found is not None, four
    once, several, failure = pages(
        console, f"/escalations/{made['once']}", f"/escalations/{found.group(1)}", f"/failures/{made['four']}"
    )
    assert "<p>Seen 1 time: first " in once
    assert "<p>Seen 4 times: first " in several
    assert "<dt>Seen</dt><dd>4 times, first " in failure
    assert all("(s)" not in page for page in (once, several, failure, four))


def test_the_task_page_names_its_escalations_and_says_no_limit(
    store: tuple[RunningConsole, dict[str, Any]],
) -> None:
    console, made = store
    page = pages(console, "/tasks/once")[0]
    assert f'<a href="/escalations/{made["once"]}">#{made["once"]} repeated error, pending</a>' in page
    for counter in ("tool calls", "failing test runs"):
        assert re.search(rf"<tr><td>{counter}</td><td>\d+</td><td>no limit</td></tr>", page), counter
    assert "(none)" not in page.split('id="timeline"')[0]


def test_a_measured_pass_rate_reads_as_a_percentage(store: tuple[RunningConsole, dict[str, Any]]) -> None:
    console, made = store
    page = pages(console, f"/escalations/{made['stall']}")[0]
    measured = re.search(r"Measured: ([^<]*)\. Fired", page)
    assert measured is not None, page
    said = sorted(measured.group(1).split(", "))
    assert said == ["best pass rate 80%", "latest pass rate 80%", "test runs without improvement 2"]


def test_the_queue_counts_one_escalation_and_several(store: tuple[RunningConsole, dict[str, Any]]) -> None:
    console, _ = store
    one, both = pages(console, "/?project=p-once", "/?project=p-two-alarms")
    assert '<p class="count">1 escalation in the queue.</p>' in one
    assert '<p class="count">2 escalations in the queue.</p>' in both
    assert "(s)" not in one + both


def test_the_file_limit_the_answered_list_and_the_stats_count_in_words(
    store: tuple[RunningConsole, dict[str, Any]],
) -> None:
    console, made = store
    files, answered, stats = pages(console, f"/escalations/{made['files']}", "/answered", "/stats")
    assert "<p>1 file modified so far, 2 more proposed; the limit is 1.</p>" in files
    assert "<p>3 answered or closed escalations, newest first.</p>" in answered
    assert re.search(r"in \S*p-one-alarm: 1 false alarm against 0 useful", stats)
    assert re.search(r"in \S*p-two-alarms: 2 false alarms against 0 useful", stats)
    replayed = re.findall(r" of (\d+) paused real (runs?) of ", stats)
    assert replayed
    assert all((count == "1") == (noun == "run") for count, noun in replayed)
    assert all("(s)" not in page for page in (files, answered, stats))


async def test_the_cli_counts_one_and_several_in_its_lines(
    store: tuple[RunningConsole, dict[str, Any]], tmp_path: Path
) -> None:
    console, made = store
    db = ("--db", console.db_path)
    wide = {"COLUMNS": "200"}
    said: dict[str, str] = {}
    for name, args in {
        "once": ("escalations", "show", str(made["once"])),
        "files": ("escalations", "show", str(made["files"])),
        "failure": ("failures", "show", made["four"]),
        "task": ("tasks", "show", "four"),
        "timeline": ("tasks", "timeline", "files"),
        "stats": ("stats",),
        "stall": ("escalations", "show", str(made["stall"])),
    }.items():
        code, out, err = await run_cli(*db, *args, home=tmp_path, **wide)
        assert code == 0, err
        said[name] = out
    lines = {name: [line.strip() for line in out.splitlines()] for name, out in said.items()}
    assert any(line.startswith("seen 1 time: first ") for line in lines["once"]), said["once"]
    assert "1 file modified so far, 2 more proposed; the limit is 1" in lines["files"]
    assert any(line.startswith("Seen      4 times, first ") for line in said["failure"].splitlines())
    assert "Failures: 1 record, 4 occurrences" in lines["task"]
    assert "step main: neutral; 1 file" in lines["timeline"]
    assert "1 path allowed" in lines["timeline"]
    assert "2 paths refused" in lines["timeline"]
    assert any(
        line.startswith("measured best pass rate 80%, latest pass rate 80%, test runs without improvement 2;")
        for line in lines["stall"]
    ), said["stall"]
    flat = " ".join(said["stats"].split())
    assert re.search(r"in \S*p-one-alarm: 1 false alarm against 0 useful", flat)
    assert re.search(r"in \S*p-two-alarms: 2 false alarms against 0 useful", flat)
    assert all("(s)" not in out for out in said.values())


async def test_a_failed_delivery_counts_its_attempts_and_says_its_next_time_in_words(tmp_path: Path) -> None:
    db_path = str(tmp_path / "notified.db")
    async with connect(db_path) as agent:
        await agent.call("start_task", title="Ask", task_id="notified")
        raised = await agent.call("raise_escalation", task_id="notified", reason="Which?")
    escalation_id = str(raised["escalation"]["escalation_id"])
    with receiver([500] * 5) as hook:
        config = write_config(tmp_path / "notify.toml", webhook_url=hook.url)
        sent = await run_cli("--db", db_path, "--config", str(config), "escalations", "list", home=tmp_path)
        code, shown, err = await run_cli(
            "--db", db_path, "escalations", "show", escalation_id, home=tmp_path, COLUMNS="200"
        )
    assert sent[0] == 0, sent[2]
    assert code == 0, err
    notified = shown.split("\nNotified\n", 1)[1].splitlines()
    assert re.fullmatch(
        r"  created  webhook:[0-9a-f]+  not delivered after 1 attempt; "
        r"next try 20\d\d-\d\d-\d\d \d\d:\d\d:\d\d UTC; last error: HTTP 500 Internal Server Error",
        notified[0],
    ), notified
    # Several attempts: the same line, from the same function, for a later try.
    later = Delivery(
        outbox_id=1,
        escalation_id=1,
        event="created",
        notifier="webhook:ab12",
        attempts=3,
        next_attempt_at="2026-11-28T10:00:05.000Z",
        lease_until=None,
        delivered_at=None,
        last_error=None,
    )
    assert delivery_lines([later], 200, "pending", 1)[2] == (
        "  created  webhook:ab12  not delivered after 3 attempts; next try 2026-11-28 10:00:05 UTC"
    )
