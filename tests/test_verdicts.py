"""Operators' verdicts: answering an escalation may say whether it was useful or a false alarm.
Kept with the answer and who gave it, counted by ``stats`` per type and project (naming the
threshold to raise where false alarms dominate), shown on the console's stats page; an agent
can neither give one nor read one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import connect
from console_support import RunningConsole, console_in_thread, form_values, logged_in
from mcp_server_escalation.errors import Forbidden, InvalidInput
from mcp_server_escalation.services import escalation_answers, escalations, reports
from mcp_server_escalation.services.runtime import open_runtime
from mcp_server_escalation.settings import Settings
from mcp_server_escalation.store import verdicts as verdict_store
from operator_support import run_cli

pytestmark = pytest.mark.both_backends


async def repeat(db_path: str, task_id: str, project: str) -> int:
    """A repeated error in ``project``; its escalation's id."""
    async with connect(db_path) as agent:
        await agent.call("start_task", title="Fix it", task_id=task_id, project=project)
        for _ in range(3):
            result = await agent.call("record_failure", task_id=task_id, message="KeyError: 'EUR'")
    return int(result["escalation"]["escalation_id"])


async def test_verdicts_are_kept_with_the_answer_and_counted_per_type_and_project(
    db_path: str, tmp_path: Path
) -> None:
    judged = {}
    for n, (project, verdict) in enumerate(
        (("shop", "useful"), ("shop", "false-alarm"), ("shop", "false-alarm"), ("blog", "useful"))
    ):
        escalation_id = await repeat(db_path, f"v-{n}", project)
        code, _, err = await run_cli(
            "--db",
            db_path,
            "escalations",
            "respond",
            str(escalation_id),
            "--guidance",
            "Look again",
            "--verdict",
            verdict,
            "--responder",
            "cli:alice",
            home=tmp_path,
        )
        assert code == 0, err
        judged[escalation_id] = verdict
    code, out, _ = await run_cli("--db", db_path, "stats", "--json", home=tmp_path)
    report = json.loads(out)
    counts = {
        (v["type"], Path(v["project"]).name): (v["useful"], v["false_alarm"]) for v in report["verdicts"]
    }
    assert counts == {("repeated_error", "shop"): (1, 2), ("repeated_error", "blog"): (1, 0)}
    advice = [(a["type"], Path(a["project"]).name, a["threshold"]) for a in report["raise_thresholds"]]
    assert advice == [("repeated_error", "shop", "same_error_repeated")]
    code, text, _ = await run_cli("--db", db_path, "stats", home=tmp_path)
    flat = " ".join(text.split())
    assert "Verdicts" in flat
    assert "raise same_error_repeated there" in flat
    settings = Settings(db_path=db_path, project_root=str(tmp_path))
    async with open_runtime(settings) as rt:
        first = next(iter(judged))
        kept = await rt.db.read(lambda conn: verdict_store.verdict_of(conn, first))
    assert kept is not None
    assert kept[:2] == ("useful", "cli:alice")


async def test_an_agent_gives_no_verdict_and_reads_none(db_path: str, tmp_path: Path) -> None:
    escalation_id = await repeat(db_path, "v-agent", "shop")
    settings = Settings(db_path=db_path, project_root=str(tmp_path))
    async with open_runtime(settings) as rt:
        with pytest.raises(Forbidden, match="verdict"):
            await escalation_answers.resolve_escalation(
                rt, escalation_id=escalation_id, response_type="withdraw", role="agent", verdict="false_alarm"
            )
        with pytest.raises(InvalidInput, match="verdict"):
            await escalation_answers.resolve_escalation(
                rt,
                escalation_id=escalation_id,
                response_type="guidance",
                content="x",
                role="operator",
                verdict="meh",
            )
        still = await escalations.show_escalation(rt, escalation_id)
        assert still.status == "pending"  # nothing of either refused call was stored
        await escalation_answers.resolve_escalation(
            rt,
            escalation_id=escalation_id,
            response_type="guidance",
            content="Use the rates table",
            role="operator",
            responder="cli:bob",
            verdict="useful",
        )
        assert (await reports.stats(rt)).verdicts[0].useful == 1
    async with connect(db_path) as agent:
        seen = await agent.call("get_escalation", escalation_id=escalation_id)
        tools = await agent.client.list_tools()
    assert "useful" not in json.dumps(seen)
    assert "verdict" not in json.dumps(seen)
    assert all("verdict" not in json.dumps(tool.input_schema) for tool in tools.tools)


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningConsole]:
    with console_in_thread(tmp_path_factory.mktemp("console-verdicts")) as running:
        yield running


@pytest.mark.sqlite_only
async def test_the_console_asks_for_a_verdict_with_the_answer_and_counts_it(console: RunningConsole) -> None:
    escalation_id = await repeat(console.db_path, "v-console", "shop")
    with logged_in(console) as operator:
        page = operator.get(f"/escalations/{escalation_id}").text
        assert 'name="verdict" value="false_alarm"' in page
        data = {**form_values(page), "response_type": "guidance", "content": "Fine", "verdict": "false_alarm"}
        assert operator.post(f"/escalations/{escalation_id}/answer", data=data).status_code == 303
        stats = operator.get("/stats").text
        answered = operator.get(f"/escalations/{escalation_id}").text
    assert "<dt>Verdict</dt><dd>false alarm, by console:operator</dd>" in answered
    assert "<h2>Verdicts</h2>" in stats
    assert "raise same_error_repeated there" in stats
