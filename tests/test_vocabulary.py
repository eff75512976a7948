"""Each fact of the product's vocabulary is defined once, and the words that name it agree.

Where the model's words (``prompts/``) or the docs name a rule the code defines (the
conditions that refuse ``end_task(completed)``, the statuses the schema admits, the text
limit), a change to the code without its words fails here, saying which words are missing.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import get_args

import pytest

from conftest import connect
from mcp_server_escalation.datafiles import data_dir
from mcp_server_escalation.models.limits import TEXT_MAX, EscalationStatus, TaskStatus
from mcp_server_escalation.prompts import TEMPLATES, PromptBook
from mcp_server_escalation.rules.bounds.token_scope import ScopeRefusal, Side
from mcp_server_escalation.rules.wording.scope_refusals import scope_refusal_words
from mcp_server_escalation.services.tasks import COMPLETION_REFUSALS
from mcp_server_escalation.store.db import Database
from mcp_server_escalation.store.postgres import migrations as pg_migrations

ROOT = Path(__file__).resolve().parents[1]

# How the tool's description and the docs name each condition of the double-entry rule.
COMPLETION_WORDS = {
    "escalation_holds": r"escalation\s+hold",
    "tests_fail": r"tests?\s+(run\s+)?(fail|has\s+failures)|failing\s+tests",
    "attempt_rejected": r"attempt\s+(of any step\s+)?is\s+rejected|rejected\s+attempt",
    "findings_outstanding": r"(outstanding|open)\s+findings",
}


def _end_task_description() -> str:
    tools = tomllib.loads((ROOT / "prompts" / "tools.toml").read_text(encoding="utf-8"))
    return str(tools["tools"]["end_task"]["description"])


def _double_entry_in_docs() -> str:
    text = (ROOT / "docs" / "tools.md").read_text(encoding="utf-8")
    found = re.search(r"- \*\*Double entry\.\*\*(.*?)(?=\n- \*\*|\n\n)", text, re.DOTALL)
    assert found, "docs/tools.md has no **Double entry.** paragraph"
    return " ".join(found.group(1).split())


def test_every_condition_that_refuses_completion_has_its_words() -> None:
    assert set(COMPLETION_WORDS) == set(COMPLETION_REFUSALS), (
        "a condition of end_task(completed) was added or removed: name it in prompts/tools.toml"
        " (tools.end_task) and docs/tools.md (Double entry), then in COMPLETION_WORDS here"
    )
    unworded = [name for name in COMPLETION_REFUSALS if f"completion_refused_{name}" not in TEMPLATES]
    assert not unworded, f"no completion_refused_<condition> template (prompts/tools.toml) for {unworded}"


@pytest.mark.parametrize(
    ("where", "read"),
    [
        ("prompts/tools.toml, tools.end_task", _end_task_description),
        ("docs/tools.md", _double_entry_in_docs),
    ],
)
def test_the_model_and_the_docs_name_every_condition_that_refuses_completion(
    where: str, read: Callable[[], str]
) -> None:
    text = read()
    missing = [name for name, words in COMPLETION_WORDS.items() if not re.search(words, text)]
    assert not missing, f"{where} does not name {missing}: {text}"


async def test_each_refusal_of_completion_says_in_words_what_holds_the_task(db_path: str) -> None:
    """Every condition's own words, with the names it lists plainly: the first few and how
    many more, never a Python list or quoted repr."""
    async with connect(db_path) as agent:
        await agent.call("start_task", title="held", task_id="held")
        for _ in range(3):
            await agent.call("record_failure", task_id="held", message="AssertionError: assert 1 == 2")
        held = await agent.error("end_task", task_id="held", outcome="completed")

        await agent.call("start_task", title="tests", task_id="tests")
        await agent.call(
            "report_progress", task_id="tests", files_modified=["a.py"], tests_passed=8, tests_failed=2
        )
        failing = await agent.error("end_task", task_id="tests", outcome="completed")

        await agent.call("start_task", title="steps", task_id="steps")
        for step in ("s1", "s2", "s3", "s4", "s5", "s6", "s7"):
            await agent.call("record_attempt", task_id="steps", step=step, status="rejected", feedback="no")
        rejected = await agent.error("end_task", task_id="steps", outcome="completed")

        await agent.call("start_task", title="review", task_id="review")
        for stage in ("review_security", "review_code"):
            await agent.call(
                "report_review", task_id="review", stage=stage, status="fail", failure_reason="x"
            )
        findings = await agent.error("end_task", task_id="review", outcome="completed")

    assert held == (
        "Error executing tool end_task: "
        "outcome: task held cannot be completed while escalation 1 holds it: wait for its answer"
        " and acknowledge it (acknowledge_response) first."
    )
    assert failing == (
        "Error executing tool end_task: "
        "outcome: task tests cannot be completed: the latest test run has 2 failing tests. Fix them"
        " and report a passing run with report_progress, or end the task with outcome abandoned."
    )
    assert rejected == (
        "Error executing tool end_task: "
        "outcome: task steps cannot be completed: the latest attempt of"
        " s1, s2, s3, s4, s5 and 2 more was rejected. Record an accepted attempt of each"
        " (record_attempt) first, or end the task with outcome abandoned."
    )
    assert findings == (
        "Error executing tool end_task: "
        "outcome: task review cannot be completed: review findings from"
        " review_code, review_security are outstanding. Fix them and report each stage passing"
        " with report_review."
    )


def test_the_readme_names_no_condition_of_its_own_and_points_to_the_rule() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    [step] = [line for line in readme.split("\n\n") if "end_task(task_id" in line]
    flat = " ".join(step.split())
    assert "(docs/tools.md)" in flat
    assert not [name for name, words in COMPLETION_WORDS.items() if re.search(words, flat)], flat


def _statuses(check: str) -> set[str]:
    return set(re.findall(r"'(\w+)'", check))


async def test_the_schema_of_both_backends_admits_exactly_the_statuses_the_models_name(
    tmp_path: Path,
) -> None:
    db = await Database.open(str(tmp_path / "schema.db"))
    try:
        tables = await db.read(
            lambda conn: dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'"))
        )
    finally:
        await db.close()
    checks = {
        name: re.search(r"status TEXT NOT NULL CHECK \(status IN \(([^)]*)\)\)", tables[name])
        for name in ("tasks", "escalations")
    }
    escalations, tasks = checks["escalations"], checks["tasks"]
    assert escalations is not None
    assert tasks is not None
    assert _statuses(escalations.group(1)) == set(get_args(EscalationStatus))
    assert _statuses(tasks.group(1)) == set(get_args(TaskStatus))
    # PostgreSQL's migrations check the same statuses, with the same text.
    postgres = " ".join(s for m in pg_migrations.MIGRATIONS for s in m.statements)
    assert escalations.group(1) in postgres
    assert tasks.group(1) in postgres


def test_no_prompt_writes_the_text_limit_as_a_number() -> None:
    # A template gets the limit as a value (``{limit}``): a number written in would stay
    # behind when the limit changes.
    for path in sorted(data_dir("prompts").glob("*.toml")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.lstrip().startswith("#"):
                continue
            assert not re.search(rf"\b{TEXT_MAX}\b|\b{TEXT_MAX:,}\b", line), f"{path.name}:{number}: {line}"


def test_every_side_of_a_scope_refusal_has_words_of_its_own_without_reprs() -> None:
    # A side added to ScopeRefusal without its template would be worded as another side's.
    book = PromptBook.load(data_dir("prompts"))
    worded = {
        side: scope_refusal_words(book, ScopeRefusal(side, "web-3", ("api-", "ops-")), "task_id")
        for side in get_args(Side)
    }
    assert len(set(worded.values())) == len(worded), worded
    assert not [text for text in worded.values() if re.search(r"[\[\]\"]|'", text.replace("token's", ""))]
