"""The operator CLI as a subprocess on a temp-file store that a real server populated.

A server (the SDK's in-memory client, see conftest) writes tasks and escalations to the
file; the console script from the interpreter's own ``bin`` folder reads and answers them
in another process; a new client reads the outcome back from the store.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from bounds import HUNG_AFTER
from conftest import Agent, connect
from in_process import run_main
from mcp_server_escalation.store.migrations import MIGRATIONS
from operator_support import flat

SCRIPT = Path(sys.executable).parent / "mcp-server-escalation"
STORE_ENV = ("ESCALATION_DB", "ESCALATION_CONFIG", "ESCALATION_PROMPTS", "XDG_DATA_HOME")


@dataclass
class Run:
    """One finished CLI process."""

    returncode: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        """stdout parsed as JSON."""
        return json.loads(self.stdout)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """An XDG data folder of the test's own, so no run can touch the real per-user store."""
    path = tmp_path / "xdg-data"
    path.mkdir()
    return path


def _environment(home: Path, **env: str) -> dict[str, str]:
    """The store comes only from the arguments and ``env``."""
    environment = {k: v for k, v in os.environ.items() if k not in STORE_ENV}
    environment["XDG_DATA_HOME"] = str(home)
    environment.update(env)
    return environment


async def cli(*args: str, home: Path, **env: str) -> Run:
    """The console script's ``main`` with ``args``, in this process (``in_process.py``)."""
    code, out, err = await run_main(list(args), env=_environment(home, **env))
    return Run(code, out.decode(), err.decode())


async def cli_process(*args: str, home: Path, **env: str) -> Run:
    """The installed console script with ``args``, as a process."""
    with anyio.fail_after(HUNG_AFTER):
        done = await anyio.run_process([str(SCRIPT), *args], check=False, env=_environment(home, **env))
    return Run(done.returncode, done.stdout.decode(), done.stderr.decode())


async def _repeat_failure(agent: Agent, task_id: str) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for line in (11, 22, 33):
        result = await agent.call(
            "record_failure",
            task_id=task_id,
            message="TypeError: unsupported operand type(s) for +: 'int' and 'str'",
            file="src/calc.py",
            line=line,
            attempted_action=f"wrapped the operand in int() at line {line}",
        )
    assert result["escalation"] is not None
    return result["escalation"]  # type: ignore[no-any-return]


async def populate(db_path: str) -> dict[str, dict[str, Any]]:
    """Two escalated tasks: a repeated error and a refused edit over the file limit."""
    with anyio.fail_after(30):
        async with connect(db_path) as agent:
            await agent.call(
                "start_task",
                title="Fix the adder",
                specification="add() sums two ints",
                task_id="cli-repeat",
                scope=["src/**"],
            )
            repeated = await _repeat_failure(agent, "cli-repeat")
            await agent.call(
                "start_task",
                title="Refactor the parser",
                task_id="cli-limit",
                scope=["src/**"],
                thresholds={"files_modified_exceeds": 2},
            )
            gate = await agent.call(
                "check_edit", task_id="cli-limit", paths=["src/a.py", "src/b.py", "src/c.py"]
            )
            await agent.call("start_task", title="Quiet task", task_id="cli-quiet")
    assert gate["allowed"] is False
    return {"repeated": repeated, "limit": gate["escalation"]}


async def read_back(db_path: str, escalation_id: int, task_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The escalation and the task as a new server process on the store sees them."""
    with anyio.fail_after(30):
        async with connect(db_path) as agent:
            escalation = await agent.call("list_escalations", status="all", task_id=task_id)
            task = await agent.call("get_task", task_id=task_id)
    (summary,) = [e for e in escalation["escalations"] if e["escalation_id"] == escalation_id]
    return summary, task


async def test_escalations_list_shows_pending_escalations_as_table_and_json(db_path: str, home: Path) -> None:
    made = await populate(db_path)
    table = await cli("--db", db_path, "escalations", "list", home=home)
    as_json = await cli("--db", db_path, "escalations", "list", "--json", home=home)

    assert table.returncode == 0, table.stderr
    *lines, footer = table.stdout.strip().splitlines()
    assert footer == "(2 of 2)"
    # Each escalation: a row (number, triggers, priority, status, task), then its headline.
    by_id = {int(line.split()[0][1:]): line.split() for line in lines if line.startswith("#")}
    assert set(by_id) == {made["repeated"]["escalation_id"], made["limit"]["escalation_id"]}
    assert by_id[made["repeated"]["escalation_id"]][1:5] == ["repeated", "error", "normal", "pending"]
    assert by_id[made["repeated"]["escalation_id"]][-2:] == ["task", "cli-repeat"]
    assert by_id[made["limit"]["escalation_id"]][1:5] == ["file", "limit", "normal", "pending"]
    assert "  TypeError: unsupported operand type(s) for +: 'int' and 'str'" in " ".join(lines)
    assert as_json.returncode == 0, as_json.stderr
    listed = as_json.json()
    assert listed["total"] == 2
    assert {e["escalation_id"]: (e["task_id"], e["type"]) for e in listed["escalations"]} == {
        made["repeated"]["escalation_id"]: ("cli-repeat", "repeated_error"),
        made["limit"]["escalation_id"]: ("cli-limit", "file_limit"),
    }


async def test_escalations_list_status_all_includes_answered_escalations(db_path: str, home: Path) -> None:
    made = await populate(db_path)
    answered = made["repeated"]["escalation_id"]
    respond = await cli(
        "--db", db_path, "escalations", "respond", str(answered), "--guidance", "Use int()", home=home
    )
    pending = (await cli("--db", db_path, "escalations", "list", "--json", home=home)).json()
    everything = (
        await cli("--db", db_path, "escalations", "list", "--status", "all", "--json", home=home)
    ).json()
    table = await cli("--db", db_path, "escalations", "list", "--status", "all", home=home)

    assert respond.returncode == 0, respond.stderr
    assert [e["escalation_id"] for e in pending["escalations"]] == [made["limit"]["escalation_id"]]
    assert pending["total"] == 1
    statuses = {e["escalation_id"]: e["status"] for e in everything["escalations"]}
    assert statuses == {answered: "resolved", made["limit"]["escalation_id"]: "pending"}
    assert everything["total"] == 2
    listed = table.stdout.splitlines()
    assert any(line.startswith(f"#{answered}  repeated error  normal  resolved") for line in listed)


async def test_escalations_show_prints_type_triggers_evidence_and_response_options(
    db_path: str, home: Path
) -> None:
    made = await populate(db_path)
    escalation_id = made["repeated"]["escalation_id"]
    # A terminal wide enough for the hint's store path whole, however long the test's
    # folder is: at 80 columns a path is wrapped at one of its hyphens.
    wide = {"COLUMNS": "400"}
    shown = await cli("--db", db_path, "escalations", "show", str(escalation_id), home=home, **wide)

    assert shown.returncode == 0, shown.stderr
    text = shown.stdout
    lines = text.splitlines()
    assert lines[0] == f"Escalation {escalation_id}  repeated error  pending  priority normal  blocking"
    assert lines[1].startswith("TypeError: unsupported operand type(s) for +: 'int' and 'str'")
    assert "Task      cli-repeat" in lines
    assert "          Fix the adder" in lines
    assert "Triggers" in lines
    assert "    threshold same error repeated 3" in lines
    assert "Evidence" in lines
    # Each occurrence of the repeated error with its file, line and attempted action.
    for line in (11, 22, 33):
        assert f"src/calc.py:{line}  wrapped the operand in int() at line {line}" in text
    flat = " ".join(text.split())
    assert "with one of --guidance TEXT | --override TEXT | --terminate [TEXT]" in flat
    # The store is not the default one: the hint must answer in this store, not another.
    assert f"mcp-server-escalation --db {db_path} escalations respond {escalation_id}" in flat


async def test_escalations_show_json_is_the_full_record_the_agent_got(db_path: str, home: Path) -> None:
    made = await populate(db_path)
    for kind in ("repeated", "limit"):
        escalation_id = made[kind]["escalation_id"]
        shown = await cli("--db", db_path, "escalations", "show", str(escalation_id), "--json", home=home)
        assert shown.returncode == 0, shown.stderr
        assert shown.json() == made[kind]
    assert made["limit"]["response_options"] == ["approve", "guidance", "override", "terminate"]
    assert "src/c.py" in made["limit"]["context"]["evidence"]["file_limit"]["proposed_files"]


@pytest.mark.parametrize(
    ("flags", "status", "task_status", "said"),
    [
        (
            ["--guidance", "Cast both operands with int() first."],
            "resolved",
            "paused",
            "resolved; task cli-repeat is paused",
        ),
        (
            ["--override", "Rewrite add() with explicit types."],
            "resolved_with_override",
            "paused",
            "resolved with override; task cli-repeat is paused",
        ),
        (
            ["--terminate", "Out of budget."],
            "resolved_with_termination",
            "terminated_by_human",
            "resolved with termination; task cli-repeat is terminated by a human",
        ),
        (
            ["--terminate"],
            "resolved_with_termination",
            "terminated_by_human",
            "resolved with termination; task cli-repeat is terminated by a human",
        ),
    ],
    ids=["guidance", "override", "terminate-with-text", "terminate-bare"],
)
async def test_escalations_respond_answers_and_changes_status(
    db_path: str, home: Path, flags: list[str], status: str, task_status: str, said: str
) -> None:
    made = await populate(db_path)
    escalation_id = made["repeated"]["escalation_id"]
    answer = await cli("--db", db_path, "escalations", "respond", str(escalation_id), *flags, home=home)
    summary, task = await read_back(db_path, escalation_id, "cli-repeat")
    with anyio.fail_after(30):
        async with connect(db_path) as agent:
            full = (await agent.call("get_escalation", escalation_id=escalation_id))["escalation"]

    assert answer.returncode == 0, answer.stderr
    assert " ".join(answer.stdout.split()) == (f"escalation {escalation_id} is now {said}")
    assert summary["status"] == status
    assert full["status"] == status
    response = full["response"]
    assert response["response_type"] == flags[0].removeprefix("--")
    assert response["content"] == (flags[1] if len(flags) > 1 else "")
    assert response["responder"].startswith("cli")
    assert task["task"]["status"] == task_status
    if flags[0] == "--override":
        assert task["task"]["approach"] == flags[1]
    if task_status == "terminated_by_human":
        assert task["directive"] == "stop"
    else:
        # Answered but not yet acknowledged: the agent still holds.
        assert task["directive"] == "pause"


async def test_escalations_respond_approve_applies_file_limit_and_scope(db_path: str, home: Path) -> None:
    made = await populate(db_path)
    escalation_id = made["limit"]["escalation_id"]
    answer = await cli(
        "escalations",
        "respond",
        str(escalation_id),
        "--approve",
        "--file-limit",
        "5",
        "--add-scope",
        "docs/**",
        "--add-scope",
        "tests/**",
        "--db",
        db_path,
        home=home,
    )
    summary, task = await read_back(db_path, escalation_id, "cli-limit")

    assert answer.returncode == 0, answer.stderr
    assert f"escalation {escalation_id} is now resolved with approval" in answer.stdout
    assert summary["status"] == "resolved_with_approval"
    assert task["thresholds"]["files_modified_exceeds"] == 5
    assert task["task"]["scope"] == ["docs/**", "src/**", "tests/**"]


async def test_escalations_respond_refuses_an_option_the_escalation_does_not_offer(
    db_path: str, home: Path
) -> None:
    made = await populate(db_path)
    escalation_id = made["repeated"]["escalation_id"]
    refused = await cli("--db", db_path, "escalations", "respond", str(escalation_id), "--approve", home=home)
    summary, _ = await read_back(db_path, escalation_id, "cli-repeat")

    assert refused.returncode != 0
    assert "approve" in refused.stderr
    assert refused.stdout == ""
    assert summary["status"] == "pending"


@pytest.mark.parametrize(
    ("command", "runner"),
    [
        (["escalations", "show", "4242"], cli_process),  # once as a process: the status a shell sees
        (["escalations", "show", "4242", "--json"], cli),
        (["escalations", "respond", "4242", "--guidance", "anything"], cli),
    ],
    ids=["show", "show-json", "respond"],
)
async def test_unknown_escalation_id_exits_non_zero_naming_the_id(
    db_path: str, home: Path, command: list[str], runner: Callable[..., Awaitable[Run]]
) -> None:
    await populate(db_path)
    run = await runner("--db", db_path, *command, home=home)

    assert run.returncode != 0
    assert run.stdout == ""
    assert "4242" in run.stderr
    assert "escalation" in run.stderr
    assert "Traceback" not in run.stderr


async def test_db_option_is_accepted_before_and_after_the_subcommand(db_path: str, home: Path) -> None:
    made = await populate(db_path)
    before = await cli("--db", db_path, "escalations", "list", "--json", home=home)
    after = await cli("escalations", "list", "--json", "--db", db_path, home=home)
    # Without --db the CLI would read the per-user store under XDG_DATA_HOME: there is none.
    default = await cli("escalations", "list", "--json", home=home)

    assert before.returncode == after.returncode == 0
    assert before.json()["total"] == 2
    assert after.json() == before.json()
    assert default.returncode == 1
    assert default.stdout == ""
    assert f"no store at {home / 'mcp-server-escalation' / 'escalations.db'}" in flat(default.stderr)
    assert made["repeated"]["escalation_id"] in [e["escalation_id"] for e in after.json()["escalations"]]


async def test_db_path_honours_flag_environment_and_xdg_default(tmp_path: Path, home: Path) -> None:
    flag_path = str(tmp_path / "flag.db")
    env_path = str(tmp_path / "env.db")
    by_flag = await cli("db", "path", "--db", flag_path, home=home)
    by_flag_first = await cli("--db", flag_path, "db", "path", home=home)
    by_env = await cli("db", "path", home=home, ESCALATION_DB=env_path)
    flag_beats_env = await cli("db", "path", "--db", flag_path, home=home, ESCALATION_DB=env_path)
    by_xdg = await cli("db", "path", home=home)

    assert by_flag.stdout.strip() == flag_path
    assert by_flag_first.stdout.strip() == flag_path
    assert by_env.stdout.strip() == env_path
    assert flag_beats_env.stdout.strip() == flag_path
    assert by_xdg.stdout.strip() == str(home / "mcp-server-escalation" / "escalations.db")
    for run in (by_flag, by_flag_first, by_env, flag_beats_env, by_xdg):
        assert run.returncode == 1  # no store there yet (tests/test_store_and_config.py)
    assert not (tmp_path / "flag.db").exists()  # printing the path creates nothing


async def test_db_init_creates_the_store_and_both_print_the_schema_version(
    tmp_path: Path, home: Path
) -> None:
    store = tmp_path / "nested" / "fresh.db"
    first = await cli("db", "init", "--db", str(store), home=home)
    again = await cli("--db", str(store), "db", "migrate", home=home)

    latest = max(m.version for m in MIGRATIONS)
    for run in (first, again):
        assert run.returncode == 0, run.stderr
        match = re.search(r"schema version (\d+)", run.stdout)
        assert match is not None, run.stdout
        assert int(match.group(1)) == latest
        assert str(store) in run.stdout
    assert store.exists()


async def test_tasks_list_shows_every_task_with_its_status(db_path: str, home: Path) -> None:
    await populate(db_path)
    table = await cli("--db", db_path, "tasks", "list", home=home)
    as_json = await cli("tasks", "list", "--json", "--db", db_path, home=home)
    paused_only = await cli("--db", db_path, "tasks", "list", "--status", "paused", "--json", home=home)

    assert table.returncode == 0, table.stderr
    rows = {line.split()[0]: line.split()[1] for line in table.stdout.strip().splitlines()[1:]}
    assert rows == {"cli-repeat": "paused", "cli-limit": "paused", "cli-quiet": "active"}
    assert as_json.returncode == 0, as_json.stderr
    assert {t["task_id"]: t["status"] for t in as_json.json()} == rows
    assert sorted(t["task_id"] for t in paused_only.json()) == ["cli-limit", "cli-repeat"]


async def test_tasks_show_prints_counters_failures_and_escalations(db_path: str, home: Path) -> None:
    made = await populate(db_path)
    shown = await cli("--db", db_path, "tasks", "show", "cli-repeat", home=home)
    as_json = await cli("--db", db_path, "tasks", "show", "cli-repeat", "--json", home=home)
    missing = await cli("--db", db_path, "tasks", "show", "no-such-task", home=home)
    with anyio.fail_after(30):
        async with connect(db_path) as agent:
            view = await agent.call("get_task", task_id="cli-repeat")

    assert shown.returncode == 0, shown.stderr
    text = shown.stdout
    assert "Task      cli-repeat\n          Fix the adder\nStatus    paused;" in text
    assert re.search(r"^consecutive same error +3 +3 +same error repeated$", text, re.MULTILINE)
    assert "Failures: 1 record, 3 occurrences" in text
    assert re.search(
        rf"^  #{made['repeated']['escalation_id']} +repeated error +normal +pending", text, re.MULTILINE
    )
    assert "Directive: pause" in text
    assert "Failures: 1 record, 3 occurrences" in text
    assert as_json.returncode == 0, as_json.stderr
    assert as_json.json() == view
    assert missing.returncode != 0
    assert "no-such-task" in missing.stderr
    assert missing.stdout == ""


async def test_a_file_that_is_not_a_store_is_one_error_and_no_traceback(tmp_path: Path, home: Path) -> None:
    garbage = tmp_path / "not-a-store.db"
    garbage.write_bytes(b"this is not sqlite at all" * 100)
    run = await cli("--db", str(garbage), "escalations", "list", home=home)
    assert run.returncode == 1
    assert flat(run.stderr) == f"error: store {garbage}: file is not a database"
    assert run.stdout == ""


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["--db", "/tmp/x.db"],
        ["--db=/tmp/x.db", "--config", "c.toml", "--prompts=p"],
        ["--db", "serve"],  # a value that happens to be a command name
        ["--db", ""],
    ],
)
def test_a_launch_line_of_serve_options_parses_as_the_whole_parser_parses_it(argv: list[str]) -> None:
    # The server's start skips building every subcommand's parser (cold start).
    from mcp_server_escalation.cli.parsers import build_parser, serve_options_only, top_parser

    assert serve_options_only(argv)
    whole = vars(build_parser().parse_args(argv))
    alone = vars(top_parser().parse_args(argv))
    assert whole == {**alone, "command": None}


@pytest.mark.parametrize(
    "argv",
    [
        ["serve"],
        ["--db", "x", "serve"],
        ["--help"],
        ["--version"],
        ["--db"],
        ["--pro", "p"],
        ["tasks", "list"],
    ],
)
def test_anything_else_goes_to_the_whole_parser(argv: list[str]) -> None:
    from mcp_server_escalation.cli.parsers import serve_options_only

    assert not serve_options_only(argv)


def _parsed(parser: argparse.ArgumentParser, argv: list[str], capsys: pytest.CaptureFixture[str]) -> object:
    """What a parser makes of ``argv``: the namespace, or the exit code and what it printed."""
    try:
        return vars(parser.parse_args(argv))
    except SystemExit as exc:
        return exc.code, capsys.readouterr()


@pytest.mark.parametrize(
    "argv",
    [
        ["hook", "claude-code"],
        ["--db", "s.db", "hook", "cursor", "--project-root", "/w"],
        ["--db=-odd.db", "hook", "codex"],
        ["--db", "hook", "escalations", "list"],  # a store named like a command
        ["escalations", "respond", "3", "--guidance", "use v2", "--db", "x.db"],
        ["escalations", "show"],  # its id missing: the subcommand's own error
        ["hook", "claude-cod"],  # a typo of the hook's host
        ["tasks", "--bogus"],
        ["tasks", "--help"],
        ["db", "path", "--db", "x.db"],
        ["stats", "--json"],
        ["console", "--port", "8080"],
        ["demo", "--keep"],
        ["serve", "--transport", "http"],
    ],
)
def test_a_command_line_naming_its_subcommand_parses_as_the_whole_parser_parses_it(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    # A hook run builds only the top-level options and its own subcommand (~1 ms of ~4).
    from mcp_server_escalation.cli.parsers import build_parser, named_command

    command = named_command(argv)
    assert command is not None
    assert _parsed(build_parser(only=command), argv, capsys) == _parsed(build_parser(), argv, capsys)


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["--help"],
        ["-h", "hook"],
        ["--version"],
        ["--db", "x.db"],
        ["nosuch", "hook"],
        ["--bogus", "tasks", "list"],
        ["--pro", "hook", "tasks", "list"],  # argparse reads --prompts: its folder is named "hook"
    ],
)
def test_without_a_surely_named_subcommand_the_whole_parser_reads_the_line(argv: list[str]) -> None:
    from mcp_server_escalation.cli.parsers import named_command

    assert named_command(argv) is None


async def test_an_empty_list_says_so_as_a_person_would(db_path: str, home: Path) -> None:
    # "no all escalations" was the answer for every status on an empty store.
    async with connect(db_path) as agent:
        await agent.call("start_task", title="Quiet task", task_id="cli-empty")
    everything = await cli("--db", db_path, "escalations", "list", "--status", "all", home=home)
    pending = await cli("--db", db_path, "escalations", "list", home=home)
    answered = await cli("--db", db_path, "escalations", "list", "--status", "resolved", home=home)

    assert (everything.returncode, everything.stdout) == (0, "no escalations\n")
    assert pending.stdout == "no escalations waiting\n"
    assert answered.stdout == "no escalations answered or closed\n"
