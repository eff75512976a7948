"""Each kind of escalation as ``escalations show`` prints it: a view written for the kind, the
same as the console's (the error once with each occurrence's place and attempted action; the
pass-rate history; the paths against the scope; the budget used; the question and its
options), compared with golden text in tests/golden/cli_show_*.txt.

Times are those of the run, written as a person writes them; the comparison replaces each with
``<time>``. The store is the per-user default of the test's home, so no ``--db`` path (which
differs from run to run) is printed. After an intended change, regenerate with
``UPDATE_GOLDEN=1 python -m pytest tests/test_cli_views.py`` and review the diff.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from console_support import run_async
from escalation_kinds import Raised, raise_every_kind
from mcp_server_escalation.locations import default_store
from operator_support import run_cli
from test_readable_words import KINDS

GOLDEN = Path(__file__).parent / "golden"
TIME = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC")
# What no view may print: a stored field's name, a Python flag, a brace of JSON or a repr.
KEY_NAME = re.compile(r"(?<![\w./*-])[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?![\w./(-])")


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cli-views")


@pytest.fixture(scope="module")
def raised(home: Path) -> Raised:
    store = Path(default_store({"XDG_DATA_HOME": str(home)}))
    store.parent.mkdir(parents=True, exist_ok=True)
    return run_async(lambda: raise_every_kind(str(store)))


def shown(home: Path, escalation_id: int) -> str:
    code, out, err = run_async(
        lambda: run_cli("escalations", "show", str(escalation_id), home=home, COLUMNS="100")
    )
    assert code == 0, err
    return out


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_is_shown_in_the_view_written_for_it(kind: str, raised: Raised, home: Path) -> None:
    text = TIME.sub("<time>", shown(home, raised.ids[kind]))
    path = GOLDEN / f"cli_show_{kind}.txt"
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"differs from tests/golden/{path.name}"
    assert "True" not in text
    assert "False" not in text
    assert "{" not in text
    assert "[" not in text.replace("[TEXT]", "").replace("[--file-limit N] [--add-scope GLOB]", "")
    assert KEY_NAME.findall(text) == []
    assert all(len(line) <= 100 for line in text.splitlines())


def test_the_views_say_what_the_consoles_do(raised: Raised, home: Path) -> None:
    repeated = shown(home, raised.ids["repeated_error"])
    assert repeated.count("assert 9 == 10") == 1  # the error once
    for line in (31, 31, 33):
        assert f"tests/test_cart.py:{line}  rounded the tax" in repeated
    assert "failures show F-1" in repeated
    stall = shown(home, raised.ids["test_stall"])
    assert "pass rate when the task started: 60%" in stall
    assert "pass rates over 5 runs, oldest first: 60% -> 60% -> 60% -> 60% -> 60%" in stall
    scope = shown(home, raised.ids["scope_deviation"])
    assert (
        "outside the scope:\n      web/payments/checkout.py\n    the task's scope:\n      web/auth/**"
        in scope
    )
    budget = shown(home, raised.ids["budget"])
    assert re.search(r"used 2 of 2 \(tool calls\) since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", budget)
    question = shown(home, raised.ids["ask_human"])
    assert (
        "Question  Which database should the reports use?\n  option 1: SQLite\n  option 2: PostgreSQL"
        in question
    )
    assert "\nEvidence\n" not in question  # the question is its evidence, said once


def test_a_task_is_shown_in_words_with_the_command_for_its_timeline(raised: Raised, home: Path) -> None:
    code, out, err = run_async(lambda: run_cli("tasks", "show", "kinds-stall", home=home, COLUMNS="100"))
    assert code == 0, err
    text = TIME.sub("<time>", out)
    path = GOLDEN / "cli_tasks_show.txt"
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"differs from tests/golden/{path.name}"
    # The directive is the model's own message: it names the tool call to make, arguments and all.
    assert KEY_NAME.findall(re.sub(r"get_escalation\([^)]*\)", "", text)) == []
    for unwanted in ("True", "False", "{", "T13:", "fp-"):
        assert unwanted not in text, unwanted
    assert "mcp-server-escalation tasks timeline kinds-stall" in " ".join(text.split())


AGE = re.compile(r"\b\d+ (?:s|min|h|d) ago\b")


@pytest.fixture(scope="module")
def answered_home(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Raised]:
    """A store of every kind where the operator answered two (one judged useful) and the
    agent of a third ended its task, so each answered state is listed."""
    home = tmp_path_factory.mktemp("cli-answered")
    store = Path(default_store({"XDG_DATA_HOME": str(home)}))
    store.parent.mkdir(parents=True, exist_ok=True)
    raised = run_async(lambda: raise_every_kind(str(store)))
    answers = [
        (
            "respond",
            str(raised.ids["repeated_error"]),
            "--guidance",
            "Round each line's tax first.",
            "--verdict",
            "useful",
        ),
        ("respond", str(raised.ids["file_limit"]), "--approve", "--file-limit", "6"),
    ]
    for answer in answers:
        code, _, err = run_async(lambda answer=answer: run_cli("escalations", *answer, home=home))  # type: ignore[misc]
        assert code == 0, err
    return home, raised


def test_the_list_names_agent_project_age_and_each_answer_with_its_verdict(
    answered_home: tuple[Path, Raised],
) -> None:
    home, _ = answered_home
    code, out, err = run_async(
        lambda: run_cli("escalations", "list", "--status", "resolved", home=home, COLUMNS="80")
    )
    assert code == 0, err
    text = re.sub(r"cli:[\w.-]+", "cli:<user>", AGE.sub("<age>", out))
    path = GOLDEN / "cli_list_resolved.txt"
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"differs from tests/golden/{path.name}"
    assert re.search(r"agent agent, project \S*shop, raised <age>", text), text
    assert "answer guidance by cli:<user>, <age>; verdict useful, by cli:<user>" in text
    assert "resolved with approval" in text
    assert KEY_NAME.findall(text) == []
    assert all(len(line) <= 80 for line in text.splitlines())


def test_show_gives_the_verdict_of_an_answered_escalation(answered_home: tuple[Path, Raised]) -> None:
    home, raised = answered_home
    judged = TIME.sub("<time>", shown(home, raised.ids["repeated_error"]))
    assert re.search(r"^Verdict   useful, by cli:\S+, <time>$", judged, re.MULTILINE), judged
    unjudged = shown(home, raised.ids["file_limit"])
    assert re.search(r"^Verdict   no verdict yet$", unjudged, re.MULTILINE), unjudged


@pytest.mark.parametrize("status", ["pending", "resolved", "all"])
def test_an_empty_list_says_no_escalations_in_words(status: str, answered_home: tuple[Path, Raised]) -> None:
    home, _ = answered_home
    code, out, err = run_async(
        lambda: run_cli("escalations", "list", "--status", status, "--task", "no-such-task", home=home)
    )
    assert code == 0, err
    assert out.startswith("no escalations"), out
    assert f"no {status} escalations" not in out
    assert out.rstrip().endswith("for task no-such-task")
