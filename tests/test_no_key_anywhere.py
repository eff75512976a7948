"""Every console page and every CLI view of a populated store, scanned as a reader sees it:
no store key (a snake_case name), no "(s)" plural, no status key, no corpus file name.

The store holds one escalation of every kind; two are answered (one with a verdict), one task
was abandoned (its escalation closed with it), so every status a page or a view names is
there. What the agent wrote (its error output, a test's name) is shown as written: a name
inside a path or followed by "(" is code, not a key.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import get_args

import pytest

from conftest import connect
from console_support import RunningConsole, console_in_thread, logged_in, run_async
from escalation_kinds import Raised, raise_every_kind
from mcp_server_escalation.models.limits import EscalationStatus, TaskStatus
from operator_support import run_cli
from test_readable_words import page_text

KEY = re.compile(r"(?<![\w./:@'-])[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?![\w./(:'-])")
STATUS_KEYS = sorted(s for s in (*get_args(EscalationStatus), *get_args(TaskStatus)) if "_" in s)
CORPUS = re.compile(r"trajectories|\.jsonl")


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("no-key-home")


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningConsole]:
    with console_in_thread(tmp_path_factory.mktemp("no-key-console")) as running:
        yield running


@pytest.fixture(scope="module")
def raised(console: RunningConsole, home: Path) -> Raised:
    made = run_async(lambda: raise_every_kind(console.db_path))

    async def answer_and_abandon() -> None:
        db = ("--db", console.db_path)
        for answer in (
            ("respond", str(made.ids["repeated_error"]), "--guidance", "Round first.", "--verdict", "useful"),
            ("respond", str(made.ids["file_limit"]), "--approve", "--file-limit", "6"),
            ("respond", str(made.ids["budget"]), "--terminate", "Out of budget."),
        ):
            code, _, err = await run_cli(*db, "escalations", *answer, home=home)
            assert code == 0, err
        async with connect(console.db_path) as agent:
            await agent.call("end_task", task_id="kinds-system", outcome="abandoned", note="gave up")

    run_async(answer_and_abandon)
    return made


# The model's messages shown to the operator name the tool calls to make: code, not keys.
TOOL_CALL = re.compile(r"\b\w+\([^)]*\)")


def _found(text: str) -> list[str]:
    text = TOOL_CALL.sub("", text)
    found = [f"key {key}" for key in sorted(set(KEY.findall(text)))]
    found += ["a (s) plural"] if "(s)" in text else []
    found += [f"status key {status}" for status in STATUS_KEYS if status in text]
    found += [f"corpus file {name}" for name in sorted(set(CORPUS.findall(text)))]
    return found


# The task of each escalation raise_every_kind raises.
TASKS = [
    f"kinds-{name}"
    for name in (
        "repeat",
        "idle",
        "stall",
        "verify",
        "files",
        "scope",
        "blocker",
        "budget",
        "question",
        "system",
    )
]


def test_no_console_page_shows_a_key_a_plural_in_brackets_a_status_key_or_a_corpus_file(
    console: RunningConsole, raised: Raised
) -> None:
    paths = ["/", "/answered", "/stats", "/failures/F-1", "/failures/F-2"]
    paths += [f"/escalations/{escalation_id}" for escalation_id in raised.ids.values()]
    paths += [f"/tasks/{task_id}" for task_id in TASKS]
    found = {}
    with logged_in(console) as operator:
        for path in paths:
            page = operator.get(path)
            assert page.status_code == 200, (path, page.status_code)
            found[path] = _found(page_text(page.text))
    assert {path: seen for path, seen in found.items() if seen} == {}


def test_no_cli_view_shows_a_key_a_plural_in_brackets_a_status_key_or_a_corpus_file(
    console: RunningConsole, raised: Raised, home: Path
) -> None:
    views: list[tuple[str, ...]] = [
        ("escalations", "list"),
        ("escalations", "list", "--status", "resolved"),
        ("escalations", "list", "--status", "all"),
        ("escalations", "list", "--status", "all", "--task", "none-such"),
        ("tasks", "list"),
        ("stats",),
        ("failures", "show", "F-1"),
        ("failures", "show", "F-2"),
    ]
    views += [("escalations", "show", str(escalation_id)) for escalation_id in raised.ids.values()]
    for task_id in TASKS:
        views += [("tasks", "show", task_id), ("tasks", "timeline", task_id)]

    async def read() -> dict[str, list[str]]:
        found = {}
        for view in views:
            code, out, err = await run_cli("--db", console.db_path, *view, home=home, COLUMNS="80")
            assert code == 0, (view, err)
            found[" ".join(view)] = _found(out)
        return found

    found = run_async(read)
    assert {view: seen for view, seen in found.items() if seen} == {}
