"""A task's timeline: every failure, attempt, progress report, edit check, escalation and answer
of a 200-action task, in order, a bounded page at a time, with the files each touched; read
through ``tasks timeline`` (text and ``--json``) and the console's task page."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import connect
from console_support import RunningConsole, console_in_thread, logged_in, run_async
from mcp_server_escalation.services.tasks import TIMELINE_PAGE
from operator_support import flat, run_cli

TASK = "story-200"
ROUNDS = 49  # four actions a round, with the start and an answered question: 200 actions
QUIET = {
    "same_error_repeated": 1000,
    "blocker_repeated": 1000,
    "files_modified_exceeds": 1000,
    "total_verification_attempts": 1000,
    "no_file_changes_after_attempts": 1000,
    "stagnation_patience": 1000,
}
EXPECTED = Counter(
    {
        "task started": 1,
        "failure": ROUNDS,
        "progress report": ROUNDS,
        "edit check": ROUNDS,
        "attempt": ROUNDS,
        "escalation": 1,
        "answer": 1,
        "answer received": 1,
    }
)
NEXT = re.compile(r"next page: .* --after ([0-9]+)")


async def tell_the_story(db_path: str) -> None:
    """200 actions of one agent on one task, a question among them answered by the operator."""
    async with connect(db_path) as agent, connect(db_path, "operator") as operator:
        await agent.call("start_task", title="A long task", task_id=TASK, project="shop", thresholds=QUIET)
        for n in range(ROUNDS):
            await agent.call(
                "record_failure",
                task_id=TASK,
                message=f"AssertionError: round {n} of the cart totals\nE   assert total() == {n}",
                file=f"tests/test_cart{n}.py",
                line=n + 1,
                attempted_action=f"rounded the tax, try {n}",
            )
            await agent.call(
                "report_progress", task_id=TASK, files_modified=[f"src/cart{n}.py"], note=f"fix {n}"
            )
            await agent.call("check_edit", task_id=TASK, paths=[f"src/price{n}.py"])
            await agent.call("record_attempt", task_id=TASK, step="fix", status="accepted")
        raised = await agent.call(
            "raise_escalation", task_id=TASK, reason="Round per line?", question="Which?"
        )
        escalation_id = raised["escalation"]["escalation_id"]
        await operator.call(
            "resolve_escalation", escalation_id=escalation_id, response_type="guidance", content="Per line."
        )
        await agent.call("acknowledge_response", escalation_id=escalation_id)


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningConsole]:
    with console_in_thread(tmp_path_factory.mktemp("timeline")) as running:
        run_async(lambda: tell_the_story(running.db_path))
        yield running


def _entries_by_json(console: RunningConsole, home: Path) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    after = 0
    for _ in range(20):  # bounded: 200 entries are 4 pages of 50
        args = ("tasks", "timeline", TASK, "--after", str(after), "--json", "--db", console.db_path)
        code, out, err = run_async(lambda args=args: run_cli(*args, home=home))  # type: ignore[misc]
        assert code == 0, err
        page = json.loads(out)
        assert len(page["entries"]) <= TIMELINE_PAGE
        entries += page["entries"]
        if page["next_after"] is None:
            return entries
        after = page["next_after"]
    pytest.fail("the timeline never ended")


def test_the_cli_pages_through_every_action_of_a_200_action_task_in_order(
    console: RunningConsole, tmp_path: Path
) -> None:
    entries = _entries_by_json(console, tmp_path)
    assert [e["number"] for e in entries] == list(range(1, 201))
    ids = [e["action_id"] for e in entries]
    assert ids == sorted(ids)
    assert len(set(ids)) == 200
    assert Counter(e["what"] for e in entries) == EXPECTED
    failures = [e for e in entries if e["what"] == "failure"]
    assert failures[7]["files"] == ["tests/test_cart7.py"]
    assert "tests/test_cart7.py:8" in failures[7]["said"]
    assert "tried: rounded the tax, try 7" in failures[7]["said"]
    # The same error each time (numbers aside): one record, F-1, named by its salient line.
    assert "F-1, test failure" in failures[7]["said"]
    assert "assert total() == 0" in failures[7]["said"]
    assert [e["files"] for e in entries if e["what"] == "progress report"][3] == ["src/cart3.py"]
    assert [e["files"] for e in entries if e["what"] == "edit check"][3] == ["src/price3.py"]
    answer = next(e for e in entries if e["what"] == "answer")
    assert answer["said"].endswith(": guidance by operator") or "guidance" in answer["said"]


def test_the_cli_timeline_is_words_and_prints_the_command_for_the_next_page(
    console: RunningConsole, tmp_path: Path
) -> None:
    code, out, err = run_async(
        lambda: run_cli("tasks", "timeline", TASK, "--db", console.db_path, home=tmp_path, COLUMNS="100")
    )
    assert code == 0, err
    assert out.startswith(f"Task {TASK}: timeline 1-{TIMELINE_PAGE} of 200, oldest first")
    assert "\n2. " in out
    assert "  failure\n" in out
    assert "files: tests/test_cart0.py" in out
    assert "failures show F-1" in out
    found = NEXT.search(flat(out))
    assert found is not None, out
    for unwanted in ("True", "False", "{", "_id", "record_failure", "check_edit"):
        assert unwanted not in out, unwanted
    assert all(len(line) <= 100 for line in out.splitlines())
    code, last, err = run_async(
        lambda: run_cli(
            "tasks", "timeline", TASK, "--after", "999999", "--db", console.db_path, home=tmp_path
        )
    )
    assert code == 0, err
    assert "nothing in its timeline past this point (200 entries in all)" in last


def test_the_task_page_pages_through_the_whole_timeline_with_the_files_touched(
    console: RunningConsole,
) -> None:
    seen: list[int] = []
    with logged_in(console) as client:
        link = f"/tasks/{TASK}"
        for _ in range(20):
            page = client.get(link)
            assert page.status_code == 200, page.text
            numbers = [int(n) for n in re.findall(r'<tr id="action-([0-9]+)">', page.text)]
            assert 0 < len(numbers) <= TIMELINE_PAGE
            seen += numbers
            following = re.search(r'<a rel="next" href="([^"]+)">', page.text)
            if following is None:
                break
            link = following.group(1).replace("&amp;", "&")
        assert seen == list(range(1, 201))
        first = client.get(f"/tasks/{TASK}").text
        assert "1-50 of 200" in first
        assert "<code>tests/<wbr>test_cart0.py</code>" in first  # it may wrap after the slash
        assert 'href="/failures/F-1"' in first
        assert "True" not in first
        assert "record_failure" not in first
        last = client.get(link).text
        assert "151-200 of 200" in last
        assert 'href="/tasks/story-200#timeline"' in last  # back to the first page
        refused = client.get(f"/tasks/{TASK}?after=abc")
        assert refused.status_code == 400
        assert "after" in refused.text
