"""The operator CLI on an 80-column, non-tty stdout, on a store holding real-looking escalations.

A real server (the SDK's in-memory client) writes a long pytest traceback against a deep path
under a long task id, a file-limit and scope refusal, and a question; the installed console
script reads them in another process with ``COLUMNS=80`` and its stdout a pipe.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from conftest import connect
from operator_support import SCRIPT, cli_env, flat, run_cli

TASK = "billing-rounding-per-currency-2026-11-23-a-long-task-identifier"
DEEP = (
    "services/billing-and-invoicing/src/billing_and_invoicing/domain/invoices/rounding/"
    "currency_specific_rounding_strategies.py"
)
SALIENT = "AssertionError: assert Decimal('10.00') == Decimal('10.01')"
TRACEBACK = "\n".join(
    [
        "============================= test session starts ==============================",
        "platform linux -- Python 3.12.3, pytest-8.3.2, pluggy-1.5.0",
        "rootdir: /home/dev/projects/very-long-organisation-name/monorepo/services/billing",
        "collected 214 items",
        "",
        "tests/integration/billing/test_invoice_generation_with_multiple_currencies.py F",
        "",
        "=================================== FAILURES ===================================",
        "________ test_invoice_totals_are_rounded_per_currency_before_summing ________",
        "",
        "    def test_invoice_totals_are_rounded_per_currency_before_summing():",
        '        invoice = build_invoice(lines=[Line(amount=Decimal("10.005"), currency="EUR")])',
        '>       assert invoice.total == Decimal("10.01")',
        f"E       {SALIENT}",
        "E        +  where Decimal('10.00') = Invoice(lines=[...], customer=None).total",
        "",
        "tests/integration/billing/test_invoice_generation_with_multiple_currencies.py:142: AssertionError",
        "=========================== short test summary info ============================",
        "FAILED tests/integration/billing/test_invoice_generation_with_multiple_currencies.py::"
        f"test_invoice_totals_are_rounded_per_currency_before_summing - {SALIENT}",
        "============================== 1 failed, 213 passed in 12.34s ==============================",
    ]
)
COMMANDS = (
    ("escalations", "list"),
    ("escalations", "list", "--status", "all"),
    ("tasks", "list"),
    ("tasks", "show", TASK),
    ("stats",),
)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """An XDG data folder of the test's own, so no run can touch the real per-user store."""
    path = tmp_path / "xdg-data"
    path.mkdir()
    return path


async def populate(db_path: str) -> dict[str, dict[str, Any]]:
    """A repeated pytest failure, a refused edit over the limit and outside the scope, a question."""
    with anyio.fail_after(30):
        async with connect(db_path) as agent:
            await agent.call(
                "start_task",
                title="Round invoice totals per currency before summing them for the monthly statement",
                task_id=TASK,
                scope=["services/billing-and-invoicing/src/**", "services/billing-and-invoicing/tests/**"],
                thresholds={"files_modified_exceeds": 2},
            )
            result: dict[str, Any] = {}
            for line in (142, 151, 163):
                result = await agent.call(
                    "record_failure",
                    task_id=TASK,
                    message=TRACEBACK,
                    file=DEEP,
                    line=line,
                    attempted_action=f"changed the rounding mode to ROUND_HALF_UP at line {line} "
                    "and re-ran the whole billing integration suite",
                )
            await agent.call(
                "start_task",
                title="Refactor the parser",
                task_id="cli-limit",
                scope=["src/**"],
                thresholds={"files_modified_exceeds": 2},
            )
            gate = await agent.call(
                "check_edit", task_id="cli-limit", paths=["src/a.py", "src/b.py", "src/c.py", "docs/x.md"]
            )
            await agent.call("start_task", title="Choose a store", task_id="cli-question")
            asked = await agent.call(
                "raise_escalation",
                task_id="cli-question",
                reason="Which database should the new reporting service use for its read replicas?",
                options=["postgres", "sqlite"],
                blocking=False,
            )
    return {"repeated": result["escalation"], "limit": gate["escalation"], "question": asked["escalation"]}


def _narrow(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if len(line) > 80]


async def test_every_operator_command_fits_80_columns_with_the_salient_error_and_no_json(
    db_path: str, home: Path
) -> None:
    made = await populate(db_path)
    shows = [("escalations", "show", str(e["escalation_id"])) for e in made.values()]
    for command in (*COMMANDS, *shows):
        code, out, err = await run_cli("--db", db_path, *command, home=home, COLUMNS="80")
        assert code == 0, (command, err)
        assert _narrow(out) == [], command
        assert "{" not in out, command  # no JSON: no braces at all
        assert '"line"' not in out, command
    code, shown, _ = await run_cli(
        "--db",
        db_path,
        "escalations",
        "show",
        str(made["repeated"]["escalation_id"]),
        home=home,
        COLUMNS="80",
    )
    lines = shown.splitlines()
    assert lines[1].startswith(SALIENT)  # the headline, right under the escalation's number
    assert f"Task      {TASK}" in lines  # the id whole, on its own line
    # Each occurrence as file:line, attempted action; the path is cut across lines only
    # because it is longer than a line.
    flat = " ".join(line.strip() for line in lines)
    for line in (142, 151, 163):
        assert f"changed the rounding mode to ROUND_HALF_UP at line {line}" in flat
    # The deep path is longer than a line: cut across lines, whole when they are joined.
    assert f"{DEEP}:142" in "".join(line.strip() for line in lines)
    assert "E       " not in shown  # the traceback itself is not dumped
    assert "\\n" not in shown
    code, listed, _ = await run_cli("--db", db_path, "escalations", "list", home=home, COLUMNS="80")
    rows = listed.splitlines()
    assert f"  task {TASK}" in rows  # too long for the row: on a line of its own, whole
    assert any(line.startswith(f"  {SALIENT}") for line in rows)
    assert any("scope deviation + file limit" in line for line in rows)  # every trigger
    code, tasks, _ = await run_cli("--db", db_path, "tasks", "list", home=home, COLUMNS="80")
    assert TASK in tasks.splitlines()


async def test_a_wider_terminal_is_used_whole(db_path: str, home: Path) -> None:
    made = await populate(db_path)
    escalation_id = str(made["repeated"]["escalation_id"])
    code, out, err = await run_cli(
        "--db", db_path, "escalations", "show", escalation_id, home=home, COLUMNS="120"
    )
    assert code == 0, err
    widths = [len(line) for line in out.splitlines()]
    assert max(widths) <= 120
    assert max(widths) > 80


async def test_json_keeps_the_full_records(db_path: str, home: Path) -> None:
    made = await populate(db_path)
    escalation_id = made["repeated"]["escalation_id"]
    code, out, err = await run_cli(
        "--db", db_path, "escalations", "show", str(escalation_id), "--json", home=home, COLUMNS="80"
    )
    assert code == 0, err
    assert json.loads(out) == made["repeated"]
    code, out, err = await run_cli("--db", db_path, "escalations", "list", "--json", home=home, COLUMNS="80")
    assert code == 0, err
    assert json.loads(out)["total"] == 3


async def test_the_answer_hint_offers_only_what_the_escalation_accepts_from_an_operator(
    db_path: str, home: Path
) -> None:
    made = await populate(db_path)
    hints = {}
    for kind, escalation in made.items():
        _, out, _ = await run_cli(
            "--db", db_path, "escalations", "show", str(escalation["escalation_id"]), home=home, COLUMNS="80"
        )
        hints[kind] = " ".join(out.split("Answer it:")[1].split())
    assert "--approve" not in hints["repeated"]
    assert "--guidance TEXT" in hints["repeated"]
    assert "--terminate" in hints["repeated"]
    assert "--approve" in hints["limit"]
    assert all("withdraw" not in hint for hint in hints.values())


async def test_a_refused_answer_is_explained_in_the_cli_s_words(db_path: str, home: Path) -> None:
    made = await populate(db_path)
    escalation_id = made["repeated"]["escalation_id"]
    code, out, err = await run_cli(
        "--db", db_path, "escalations", "respond", str(escalation_id), "--approve", home=home
    )
    # Each error is wrapped to the terminal's width, where the store's path (as long as the
    # test's temp folder) falls: the words are read unwrapped.
    err = flat(err)
    assert code == 1
    assert out == ""
    assert f"escalation {escalation_id} is a repeated error escalation: --approve is not an answer" in err
    assert "response_type" not in err
    code, _, err = await run_cli("--db", db_path, "escalations", "show", "999", home=home)
    err = flat(err)
    assert code == 1
    assert "escalations list --status all" in err
    assert "list_escalations" not in err
    code, _, err = await run_cli("--db", db_path, "tasks", "show", "no-such-task", home=home)
    err = flat(err)
    assert code == 1
    assert "there is no task no-such-task" in err
    assert "tasks list" in err


async def test_a_reader_that_closes_the_pipe_early_gets_no_broken_pipe_message(
    db_path: str, home: Path, tmp_path: Path
) -> None:
    made = await populate(db_path)
    escalation_id = made["repeated"]["escalation_id"]
    for command in (["escalations", "show", str(escalation_id)], ["escalations", "list"]):
        # ``| true``: the reader goes before the command writes (as ``head`` does once it has
        # its lines), so every write meets a closed pipe. stderr and the status are kept.
        errors = tmp_path / "stderr.txt"
        script = '"$@" 2>"$ERRORS" | true; echo "${PIPESTATUS[0]}"'
        with anyio.fail_after(60):
            done = await anyio.run_process(
                ["bash", "-c", script, "bash", str(SCRIPT), "--db", db_path, *command],
                check=False,
                env=cli_env(home, COLUMNS="80", ERRORS=str(errors)),
            )
        said = errors.read_text()
        assert "Broken pipe" not in said, said
        assert "BrokenPipeError" not in said, said
        assert done.stdout.decode().strip() == "0"


def test_every_flag_and_argument_says_what_it_is_and_its_default_in_help() -> None:
    import argparse

    from mcp_server_escalation.cli.parsers import build_parser

    parsers = [build_parser()]
    undescribed = []
    while parsers:
        parser = parsers.pop()
        # The answers of `respond`: one of them is required, so none has a default.
        required = {a for g in parser._mutually_exclusive_groups if g.required for a in g._group_actions}
        for action in parser._actions:
            name = f"{parser.prog} {'/'.join(action.option_strings) or action.dest}"
            if isinstance(action, argparse._SubParsersAction):
                parsers.extend(action.choices.values())
                if action.metavar is None:  # else a line of every choice, wider than 80 columns
                    undescribed.append(f"{name}: no metavar")
                continue
            if isinstance(action, argparse._HelpAction | argparse._VersionAction):
                continue
            if not action.help:
                undescribed.append(name)
            elif action.option_strings and action not in required and "default" not in action.help:
                undescribed.append(f"{name}: default {action.default!r} not said")
    assert undescribed == []


async def test_the_help_of_every_operator_command_fits_80_columns(home: Path) -> None:
    commands = [
        (),
        ("escalations",),
        *((("escalations", action)) for action in ("list", "show", "respond", "watch")),
        ("tasks", "list"),
        ("tasks", "show"),
        ("stats",),
        ("db", "backup"),
        ("db", "check"),
        ("serve",),
        ("demo",),
        ("console",),
        ("hook",),
        ("hook", "claude-code"),
        ("hook", "daemon"),
        ("hook", "install"),
        ("db",),
        ("tasks",),
    ]
    for command in commands:
        code, out, err = await run_cli(*command, "--help", home=home, COLUMNS="80")
        assert code == 0, (command, err)
        assert _narrow(out) == [], command


async def test_an_answer_without_its_text_or_with_approve_only_flags_is_refused_in_flag_terms(
    db_path: str, home: Path
) -> None:
    made = await populate(db_path)
    escalation_id = str(made["repeated"]["escalation_id"])
    code, _, err = await run_cli(
        "--db", db_path, "escalations", "respond", escalation_id, "--guidance", " ", home=home
    )
    assert code == 1
    assert "--guidance needs a text" in err
    assert "content" not in err
    code, _, err = await run_cli(
        "--db",
        db_path,
        "escalations",
        "respond",
        escalation_id,
        "--terminate",
        "--file-limit",
        "9",
        home=home,
    )
    assert code == 1
    assert "--file-limit and --add-scope go only with --approve" in err
    assert "new_file_limit" not in err


async def test_a_test_stall_shows_its_pass_rate_history_as_one_short_line(db_path: str, home: Path) -> None:
    with anyio.fail_after(30):
        async with connect(db_path) as agent:
            await agent.call(
                "start_task",
                title="Stalled",
                task_id="cli-stall",
                thresholds={"no_test_improvement_after": 3},
            )
            for passed in (6, 7, 7, 7, 7):
                result = await agent.call(
                    "report_progress", task_id="cli-stall", tests_passed=passed, tests_failed=10 - passed
                )
    escalation_id = str(result["escalation"]["escalation_id"])
    code, out, err = await run_cli(
        "--db", db_path, "escalations", "show", escalation_id, home=home, COLUMNS="80"
    )

    assert code == 0, err
    assert "pass rates over 5 runs, oldest first: 60% -> 70% -> 70% -> 70% -> 70%" in out
    assert "pass_rate" not in out
    assert _narrow(out) == []


def _wrapped_whole(text: str, *whole: str) -> None:
    """Every line fits 80 columns but a word longer than a line, which is never cut."""
    for line in text.splitlines():
        assert len(line) <= 80 or " " not in line.strip(), line
    words = text.split()
    for item in whole:
        assert item in words, item


async def test_a_long_error_wraps_to_80_columns_after_a_stable_prefix_with_paths_and_ids_whole(
    db_path: str, home: Path, tmp_path: Path
) -> None:
    await populate(db_path)
    deep = tmp_path / "a-folder-whose-name-is-long-enough" / "and-another-one-below-it" / "stores"
    missing = str(deep / "the-store-the-operator-meant-to-give-but-mistyped.db")
    task_id = f"{TASK}-and-then-some-more-words-to-be-sure"

    no_store = await run_cli("--db", missing, "escalations", "list", home=home, COLUMNS="80")
    no_task = await run_cli("--db", db_path, "tasks", "show", task_id, home=home, COLUMNS="80")

    assert no_store[0] == no_task[0] == 1  # the exit code a script checks is unchanged
    assert no_store[2].startswith("error: no store at")
    assert no_task[2].startswith("error: there is no task")
    _wrapped_whole(no_store[2], missing)
    _wrapped_whole(no_task[2], task_id, db_path + ".")
    assert len(no_store[2].splitlines()) > 1


async def test_a_mistyped_command_line_is_refused_in_80_columns_with_exit_2(home: Path) -> None:
    refusals = [
        (("escalations", "list", "--limit", "abc"), "argument --limit: 'abc' is not a whole number"),
        (("escalations", "respond"), "the following arguments are required: ID"),
        (("tasks", "show", "--no-such-flag", "x"), "unrecognized arguments: --no-such-flag"),
    ]
    for command, words in refusals:
        code, out, err = await run_cli(*command, home=home, COLUMNS="80")
        assert code == 2, (command, err)  # argparse's exit code, which scripts check
        assert out == ""
        assert _narrow(err) == [], (command, err)
        assert words in flat(err), (command, err)
        assert "usage: mcp-server-escalation" in err
