"""Words a person or the model reads where a key, a flag or another command's words stood: an
external blocker's threshold as a rule, not "immediate no"; a missing dependency's headline
naming what is missing; the briefing prompt offering the answers it lists, and only those;
``console`` refusing to start in its own words."""

from __future__ import annotations

from pathlib import Path

from mcp.types import TextContent

from conftest import connect
from escalation_kinds import PYTEST_RUN, raise_every_kind
from operator_support import run_cli, run_script

NO_MODULE = "Traceback (most recent call last):\nModuleNotFoundError: No module named 'babel'"


async def test_an_external_blockers_threshold_is_a_rule_in_words(db_path: str, tmp_path: Path) -> None:
    raised = await raise_every_kind(db_path)
    async with connect(db_path) as agent:
        await agent.call("start_task", title="Read off", task_id="read-off")
        for _ in range(3):  # blocker_repeated
            found = await agent.call("record_failure", task_id="read-off", message=NO_MODULE)
    read_off = int(found["escalation"]["escalation_id"])
    declared = raised.ids["external_blocker"]
    shown = {}
    for escalation_id in (declared, read_off):
        code, out, err = await run_cli(
            "--db", db_path, "escalations", "show", str(escalation_id), home=tmp_path
        )
        assert code == 0, err
        shown[escalation_id] = " ".join(out.split())
    assert (
        "threshold a blocker (missing dependency, permission denied, api unavailable) escalates at once"
        in (shown[declared])
    )
    assert "escalates once it repeats, not at once" in shown[read_off]
    assert all("immediate" not in text for text in shown.values())


async def test_a_missing_dependencys_headline_names_what_is_missing(db_path: str) -> None:
    raised = await raise_every_kind(db_path)
    async with connect(db_path) as agent:
        shown = await agent.call("get_escalation", escalation_id=raised.ids["external_blocker"])
    summary = shown["escalation"]["triggers"][0]["summary"]
    assert summary.startswith("missing dependency: lodash@4.17.21 "), summary
    assert "npm install failed for a required package" in summary  # the error, after it


async def test_the_briefing_offers_exactly_the_answers_it_lists(db_path: str) -> None:
    raised = await raise_every_kind(db_path)
    texts = {}
    async with connect(db_path, mode="legacy") as agent:
        for kind in ("repeated_error", "file_limit"):
            prompt = await agent.client.get_prompt(
                "escalation_briefing", {"escalation_id": str(raised.ids[kind])}
            )
            content = prompt.messages[0].content
            assert isinstance(content, TextContent)
            texts[kind] = content.text
    repeated = texts["repeated_error"]
    assert "Possible responses: guidance, override, terminate." in repeated
    assert repeated.rstrip().endswith("--guidance TEXT | --override TEXT | --terminate [TEXT]")
    assert "--approve" not in repeated  # a repeated error has nothing to approve
    limit = texts["file_limit"]
    assert "Possible responses: guidance, override, approve, terminate." in limit
    assert "--approve [--file-limit N] [--add-scope GLOB]" in limit
    assert PYTEST_RUN not in repeated  # the briefing names the error, not the whole run


async def test_console_without_a_token_says_what_the_console_needs(tmp_path: Path) -> None:
    # No token of any kind (an empty one counts as none).
    none = dict.fromkeys(
        ("ESCALATION_AGENT_TOKEN", "ESCALATION_OPERATOR_TOKEN", "ESCALATION_TOKENS_FILE"), ""
    )
    store = tmp_path / "store.db"
    code, _, err = await run_script("--db", str(store), "db", "init", home=tmp_path)
    assert code == 0, err
    code, out, err = await run_script("--db", str(store), "console", home=tmp_path, **none)
    said = " ".join(err.split())
    assert code != 0
    assert out == ""
    assert said.startswith("error: the console opens only with an operator's token"), said
    assert "ESCALATION_OPERATOR_TOKEN" in said
    assert "serving over HTTP" not in said
    assert "ESCALATION_AGENT_TOKEN" not in said
