"""Every outcome of a hook event, through every door that takes one: the same words and the
same answer shape from the command hook, the relay daemon and the hook route over HTTP
(``hooks/outcome.py`` words them once for all three).

Real parts throughout: the installed script as the hook a host runs (by itself, with
``ESCALATION_HOOK_RELAY=off``), the relay daemon a hook run starts (``hook daemon``, then a
run that must be answered by it), and the app ``serve --transport http`` serves; real SQLite
files (read-only, broken under a running server) and a PostgreSQL server of this module's
own, stopped under the hook. Each door meets the same scenario on a store made afresh at
the same path, so the words it says (the spool, the log) are the same; the command hook and
the relay must answer byte for byte alike, and the route with the status and body of the
outcome.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import sqlite3
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import pytest

import pg_local as pg
from conftest import connect, own_pg_server
from hooks_support import (
    PROJECT,
    Run,
    bash_failure,
    claude,
    daemon_running,
    hook_log,
    pre_edit,
    pre_tool,
    run_script,
    socket_of,
    stop_daemons,
)
from http_support import AGENT_TOKEN, TEST_TOKENS, http_in_thread, start_http, stop_http
from mcp_server_escalation.datafiles import data_dir
from mcp_server_escalation.errors import ConfigError
from mcp_server_escalation.hooks.outcome import Outcome
from mcp_server_escalation.hooks.relay_spawn import lock_path
from mcp_server_escalation.hooks.spool import MAX_SPOOLED, Spool, Spooled, spool_folder
from mcp_server_escalation.prompts import PromptBook
from mcp_server_escalation.settings import Settings
from mcp_server_escalation.store.backends import open_store
from store_faults import read_only

# Its store-down scenarios stop a real PostgreSQL server under each door.
pytestmark = pytest.mark.interop

BOOK = PromptBook.load(data_dir("prompts"))
PREFIX = "mcp-server-escalation hook: "
TASK = "outcome-task"
ROUTES = ("command", "relay", "http")
# A hook run that only reads: it starts the store's relay daemon and needs nothing of it.
A_READ = pre_tool("Read", {"file_path": f"{PROJECT}/src/app.py"}, "toolu_read")


@dataclass(frozen=True)
class Place:
    """Where one scenario runs: its store, the state folder of every process (their spools),
    and what the words name: the spool and the log beside the store's relay socket."""

    db: str
    tmp: Path

    @property
    def state(self) -> Path:
        return self.tmp / "state"

    @property
    def spool(self) -> Path:
        return spool_folder(self.db, {"XDG_STATE_HOME": str(self.state)})

    @property
    def log(self) -> Path:
        return hook_log(self.db, self.tmp)


def said(*lines: str) -> str:
    """What a command hook writes on stderr: one line per thing said."""
    return "".join(f"{PREFIX}{line}\n" for line in lines)


def store_details(place: Place) -> str:
    return BOOK.render("hook_store_details", log=str(place.log))


def no_decision(template: str) -> str:
    return BOOK.render("hook_http_no_decision", reason=BOOK.render(template)) + "\n"


@dataclass(frozen=True)
class Scenario:
    """One outcome made to happen: the ``event``, what the store is given before the door
    starts (``ready``), what holds while the door starts and answers (``held``: a read-only
    file) and only around the event (``during``: a lock, a damage), and what each door must
    answer: the command hook's stdout and stderr, the route's status and body (None: the
    answer is the host's JSON, the same from every door)."""

    outcome: Outcome
    event: dict[str, Any] | bytes
    command: Callable[[Place], str] | None = None
    http: tuple[int, str] | None = None
    ready: Callable[[str], Awaitable[None]] | None = None
    held: Callable[[Place], AbstractContextManager[None]] = lambda _place: nullcontext()
    during: Callable[[Place], AbstractContextManager[None]] = lambda _place: nullcontext()
    routes: tuple[str, ...] = ROUTES
    options: tuple[str, ...] = field(default=())


async def _start_task(db: str) -> None:
    async with connect(db) as agent:
        await agent.call("start_task", title="Outcomes", task_id=TASK, scope=["src/**"])


@contextmanager
def _behind(place: Place, fillers: int = 0) -> Iterator[None]:
    """An earlier event waits in the spool (``fillers`` more with it) and another run holds
    the spool's turn: a report now waits behind them."""
    earlier = bash_failure("npm test", "Error: earlier", "toolu_earlier")
    Spool(place.spool).keep(Spooled("claude-code", json.dumps(earlier), {}, str(place.tmp)))
    for n in range(fillers):
        (place.spool / f"{n:020d}-filler.json").touch()
    with (place.spool / ".lock").open("a") as turn:
        fcntl.flock(turn, fcntl.LOCK_EX)
        yield


@contextmanager
def _damaged(place: Place, damage: str) -> Iterator[None]:
    with contextlib.closing(sqlite3.connect(place.db)) as conn:
        conn.execute(damage)
        conn.commit()
    yield


def _config_problem() -> str:
    """What the settings say of a config file that is not there (the hook says it as it is)."""
    try:
        Settings.from_sources(config="/nonexistent/escalation.toml")
    except ConfigError as exc:
        return str(exc)
    raise AssertionError("a missing config file was taken")


REPORT = bash_failure("npm test", "Error: boom", "toolu_report")

SCENARIOS = [
    Scenario(
        Outcome.ANSWERED,
        pre_edit(f"{PROJECT}/docs/notes.md", "toolu_edit", tool="Write"),  # out of the task's scope
        ready=_start_task,
    ),
    Scenario(
        Outcome.INPUT_PROBLEM,
        b"{not json",
        command=lambda _p: said(BOOK.render("hook_input_malformed_json", line=1, column=2)),
        http=(400, BOOK.render("hook_input_malformed_json", line=1, column=2) + "\n"),
    ),
    Scenario(
        Outcome.KEPT,
        REPORT,
        command=lambda p: said(BOOK.render("hook_kept_behind", spool=str(p.spool), waiting=2)),
        http=(200, ""),
        during=_behind,
    ),
    Scenario(
        Outcome.DROPPED,
        REPORT,
        command=lambda p: said(BOOK.render("hook_dropped_behind", spool=str(p.spool), limit=MAX_SPOOLED)),
        http=(
            507,
            BOOK.render(
                "hook_http_not_recorded", reason=BOOK.render("hook_http_spool_full", limit=MAX_SPOOLED)
            )
            + "\n",
        ),
        during=lambda p: _behind(p, fillers=MAX_SPOOLED - 1),
    ),
    Scenario(
        Outcome.STORE_UNWRITABLE,
        REPORT,
        command=lambda p: said(BOOK.render("hook_store_unwritable", details=store_details(p))),
        http=(503, no_decision("hook_http_store_unwritable")),
        held=lambda p: read_only(Path(p.db)),
    ),
    Scenario(
        Outcome.DATABASE_FAILED,
        REPORT,
        command=lambda p: said(BOOK.render("hook_store_failed", log=str(p.log))),
        http=(503, no_decision("hook_http_store_failed")),
        during=lambda p: _damaged(p, "DROP TABLE tasks"),
    ),
    Scenario(
        Outcome.BUG,  # a task row no code path expects: thresholds that are not JSON
        REPORT,
        command=lambda p: said(BOOK.render("hook_failed", log=str(p.log))),
        http=(500, no_decision("hook_http_failed")),
        ready=_start_task,
        during=lambda p: _damaged(p, "UPDATE tasks SET thresholds_json = '{not json'"),
    ),
    # A store that cannot be opened, and a config file that cannot be read, meet only the
    # command hook: a relay hands a hook whose config it has not loaded back to it (the hook
    # runs itself), and a relay and the route have opened their store and read their config
    # at their start.
    Scenario(
        Outcome.STORE_UNOPENED,
        REPORT,
        command=lambda p: said(BOOK.render("hook_store_unopened", details=store_details(p))),
        routes=("command",),
    ),
    Scenario(
        Outcome.SETTINGS_PROBLEM,
        REPORT,
        command=lambda _p: said(f"no decision: {_config_problem()}"),
        routes=("command",),
        options=("--config", "/nonexistent/escalation.toml"),
    ),
]
# The outcome only a database that stops answering gives every door (a relay and the route
# open a SQLite store without a hook run's bound): the PostgreSQL test below.
STORE_DOWN_TESTED_BELOW = Outcome.STORE_DOWN


def test_every_outcome_has_a_scenario_through_every_door_it_can_meet() -> None:
    covered = [scenario.outcome for scenario in SCENARIOS] + [STORE_DOWN_TESTED_BELOW]
    assert sorted(covered, key=str) == sorted(Outcome, key=str)


def _environment(place: Place, **env: str) -> dict[str, str]:
    return {"XDG_STATE_HOME": str(place.state), "ESCALATION_TASK": TASK, **env}


async def _hook_run(scenario: Scenario, place: Place, mode: str) -> Run:
    raw = scenario.event if isinstance(scenario.event, bytes) else json.dumps(scenario.event).encode()
    return await run_script(
        "--db",
        place.db,
        *scenario.options,
        "hook",
        "claude-code",
        stdin=raw,
        tmp=place.tmp,
        **_environment(place, ESCALATION_HOOK_RELAY=mode),
    )


async def by_command(scenario: Scenario, place: Place) -> tuple[int, str, str]:
    with scenario.held(place), scenario.during(place):
        run = await _hook_run(scenario, place, "off")
    return run.returncode, run.stdout, run.stderr


async def by_daemon(scenario: Scenario, place: Place, sockets: Path) -> tuple[int, str, str]:
    """The run answered by the store's relay daemon, which a first run started."""
    with scenario.held(place):
        try:
            started = await _hook_run(Scenario(scenario.outcome, A_READ), place, "on")
            assert (started.returncode, started.stdout, started.stderr) == (0, "", "")
            assert daemon_running(Path(lock_path(socket_of(place.db, place.tmp))))
            with scenario.during(place):
                run = await _hook_run(scenario, place, "require")  # no relay answered: it says so
        finally:
            stop_daemons(sockets)
    return run.returncode, run.stdout, run.stderr


def by_route(scenario: Scenario, place: Place) -> tuple[int, str, str | None]:
    """The event posted to the app ``serve --transport http`` serves: its status, body and
    Retry-After. In a thread of this process, unless the outcome is a bug: that one logs a
    traceback, which a server in a thread may not, so it is the installed script's."""
    body = scenario.event if isinstance(scenario.event, bytes) else json.dumps(scenario.event).encode()
    headers = {
        "Content-Type": "application/json",
        "Authorization": f"Bearer {AGENT_TOKEN}",
        "X-Escalation-Task": TASK,
    }
    with (
        scenario.held(place),
        _served(scenario, place) as port,
        scenario.during(place),
        httpx2.Client(timeout=60) as client,
    ):
        answer = client.post(f"http://127.0.0.1:{port}/hooks/claude-code", content=body, headers=headers)
    return answer.status_code, answer.text, answer.headers.get("retry-after")


@contextmanager
def _served(scenario: Scenario, place: Place) -> Iterator[int]:
    """The HTTP server on the scenario's store, its spool in the scenario's state folder."""
    if scenario.outcome.http_status != 500:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("XDG_STATE_HOME", str(place.state))  # the server's own spool
            with http_in_thread(place.tmp, "--db", place.db) as port:
                yield port
        return
    env = {k: v for k, v in os.environ.items() if not k.startswith("ESCALATION_")}
    env.update(TEST_TOKENS)
    env["XDG_STATE_HOME"] = str(place.state)
    process, port, _log = start_http(place.tmp, "--db", place.db, env=env, wait_seconds=60)
    try:
        yield port
    finally:
        stop_http(process)


def _fresh_store(scenario: Scenario, tmp_path: Path, template: Path) -> str:
    """The scenario's store, made again at the same path for each door."""
    if scenario.outcome is Outcome.STORE_UNOPENED:
        blocker = tmp_path / "not-a-folder"
        blocker.write_text("a file where the store's folder would be\n")
        return str(blocker / "escalations.db")
    store = tmp_path / "store" / "escalations.db"
    shutil.rmtree(store.parent, ignore_errors=True)
    store.parent.mkdir()
    shutil.copyfile(template, store)
    return str(store)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.outcome.name.lower() for s in SCENARIOS])
async def test_each_door_answers_an_outcome_with_the_same_words(
    scenario: Scenario, tmp_path: Path, sqlite_template: Path, private_relay_sockets: Path
) -> None:
    answers: dict[str, Any] = {}
    for route in scenario.routes:
        db = _fresh_store(scenario, tmp_path, sqlite_template)
        shutil.rmtree(tmp_path / "state", ignore_errors=True)
        place = Place(db, tmp_path)
        if scenario.ready is not None:
            await scenario.ready(db)
        if route == "command":
            answers[route] = await by_command(scenario, place)
        elif route == "relay":
            answers[route] = await by_daemon(scenario, place, private_relay_sockets)
        else:
            answers[route] = by_route(scenario, place)

    command = answers["command"]
    if "relay" in answers:
        assert answers["relay"] == command  # byte for byte: the relay answers as the hook would
    if scenario.command is None:  # the host's JSON: a decision
        code, stdout, stderr = command
        assert (code, stderr) == (0, "")
        decided = json.loads(stdout)["hookSpecificOutput"]
        assert decided["permissionDecision"] == "deny"
        assert answers["http"] == (200, stdout.removesuffix("\n"), None)
        return
    place = Place(db, tmp_path)
    assert command == (0, "", scenario.command(place))
    if "http" in answers:
        assert scenario.http is not None
        assert answers["http"] == (*scenario.http, None)


# --- A store that stops answering: PostgreSQL stopped under each door ---------------------


@pytest.fixture(scope="module")
def stoppable_pg() -> Iterator[pg.PgServer]:
    with own_pg_server() as server:
        yield server


@contextmanager
def stopped(server: pg.PgServer) -> Iterator[None]:
    pg.stop_fast(server)
    try:
        yield
    finally:
        pg.start_again(server)


async def _each_door(scenario: Scenario, place: Place, sockets: Path) -> list[tuple[int, str, str | None]]:
    """The command hook's, the relay daemon's and the route's answers, each from an empty spool."""
    shutil.rmtree(place.state, ignore_errors=True)
    command = await by_command(scenario, place)
    shutil.rmtree(place.state, ignore_errors=True)
    relayed = await by_daemon(scenario, place, sockets)
    shutil.rmtree(place.state, ignore_errors=True)
    return [command, relayed, by_route(scenario, place)]


async def test_each_door_says_a_store_that_does_not_answer_in_the_same_words(
    tmp_path: Path, stoppable_pg: pg.PgServer, private_relay_sockets: Path
) -> None:
    url = stoppable_pg.url(stoppable_pg.create_database())
    await (await open_store(url)).close()
    check = claude(
        "PreToolUse", tool_name="Bash", tool_input={"command": "npm test"}, tool_use_id="toolu_down"
    )
    down = Scenario(Outcome.STORE_DOWN, check, during=lambda _place: stopped(stoppable_pg))
    kept = Scenario(Outcome.KEPT, REPORT, during=lambda _place: stopped(stoppable_pg))
    place = Place(url, tmp_path)

    command, relayed, posted = await _each_door(down, place, private_relay_sockets)
    command_kept, relayed_kept, posted_kept = await _each_door(kept, place, private_relay_sockets)

    details = BOOK.render("hook_store_down_details", log=str(place.log))
    assert command == (0, "", said(BOOK.render("hook_store_down", details=details)))
    assert relayed == command
    assert posted == (503, no_decision("hook_http_store_down"), "30")
    # A report is kept for later (what the database said is in the log, as for a check).
    kept_words = BOOK.render("hook_store_down_kept", spool=str(place.spool), waiting=1, details=details)
    assert command_kept == (0, "", said(kept_words))
    assert relayed_kept == command_kept
    assert posted_kept == (200, "", None)  # an event taken, as far as the host needs to know
