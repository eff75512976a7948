"""What a person (or the model) reads when a hook run meets its store down: the prompts' words
on stderr (what became of the event, no decision so the host goes on, where the details
are), never the store's URL, its host and port, or what the database said; those are in the
log of the store's relay daemons beside its socket, once per outage in a process that
handles many events.

Real parts throughout: a PostgreSQL server of this module's own, stopped under the hook; the
installed script as the hook, run by itself, through ``hook relay`` and through the daemon a
hook run starts. (A report met by an outage is kept and recorded once the store is back:
``test_pg_outage.py``.)
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import pytest

import pg_local as pg
from conftest import own_pg_server
from hooks_support import (
    Run,
    bash_failure,
    claude,
    daemon_running,
    hook_log,
    hook_process,
    relaying,
    socket_of,
    stop_daemons,
)
from mcp_server_escalation.datafiles import data_dir
from mcp_server_escalation.hooks.relay_spawn import lock_path
from mcp_server_escalation.hooks.spool import spool_folder
from mcp_server_escalation.prompts import PromptBook
from mcp_server_escalation.store.backends import open_store

pytestmark = pytest.mark.interop

PREFIX = "mcp-server-escalation hook: "
BOOK = PromptBook.load(data_dir("prompts"))
OFF = {"ESCALATION_HOOK_RELAY": "off"}
REQUIRE = {"ESCALATION_HOOK_RELAY": "require"}
ON = {"ESCALATION_HOOK_RELAY": "on"}
# What libpq says when nothing listens on the port (the database's own words).
REFUSED = "Connection refused"
# The outage line in a hook log: the store (password hidden) and what the database said.
OUTAGE_LINE = re.compile(r"store postgresql://\S+ is unavailable \(")


@pytest.fixture(scope="module")
def down_pg() -> Iterator[pg.PgServer]:
    """A PostgreSQL server of this module's own, which its tests stop and start."""
    with own_pg_server() as server:
        yield server


@pytest.fixture
def url(down_pg: pg.PgServer) -> Iterator[str]:
    """A migrated database of its own, on a server that answers."""
    if down_pg.postmaster_pid() is None:  # a failed test left it down
        pg.start_again(down_pg)
    name = down_pg.create_database()

    async def migrate() -> None:
        store = await open_store(down_pg.url(name))
        await store.close()

    anyio.run(migrate)
    try:
        yield down_pg.url(name)
    finally:
        down_pg.drop_database(name)


@contextmanager
def stopped(server: pg.PgServer) -> Iterator[None]:
    pg.stop_fast(server)
    try:
        yield
    finally:
        pg.start_again(server)


async def hook_run(event: dict[str, Any], *, db: str, tmp: Path, **env: str) -> Run:
    """The installed script as a Claude Code hook; its spool in the test's own state folder."""
    return await hook_process("claude-code", event, db=db, tmp=tmp, XDG_STATE_HOME=str(tmp / "state"), **env)


def pre_tool(tool_use_id: str) -> dict[str, Any]:
    """A check before a tool call: no report, so nothing to keep for later."""
    return claude("PreToolUse", tool_name="Bash", tool_input={"command": "npm test"}, tool_use_id=tool_use_id)


def details(log: Path) -> str:
    return BOOK.render("hook_store_down_details", log=str(log))


def assert_no_database_words(stderr: str, url: str) -> None:
    """Neither where the store is nor what the database said."""
    assert "postgresql://" not in stderr
    assert urlsplit(url).netloc.rsplit("@", maxsplit=1)[-1] not in stderr  # host:port
    assert REFUSED not in stderr
    assert "is unavailable" not in stderr


def outage_lines(log: Path) -> list[str]:
    return [line for line in log.read_text(encoding="utf-8").splitlines() if OUTAGE_LINE.search(line)]


def assert_why_only_in_the_log(line: str, stderr: str) -> None:
    """The database's words, as an outage line of the log gives them, are not on stderr."""
    reason = line.split(" is unavailable (", 1)[1].rsplit(")", 1)[0]
    assert reason, line
    assert reason not in stderr


async def test_a_hook_run_in_an_outage_says_in_words_that_nothing_was_recorded_and_where_why_is(
    tmp_path: Path, down_pg: pg.PgServer, url: str
) -> None:
    log = hook_log(url, tmp_path)
    with stopped(down_pg):
        run = await hook_run(pre_tool("toolu_down"), db=url, tmp=tmp_path, **OFF)

    assert (run.returncode, run.stdout) == (0, "")  # no decision: the host goes on
    assert run.stderr == PREFIX + BOOK.render("hook_store_down", details=details(log)) + "\n"
    assert_no_database_words(run.stderr, url)
    # The details are where the words say: the store (its password hidden) and the reason.
    [line] = outage_lines(log)
    assert f"store {url} is unavailable (" in line
    assert REFUSED in line
    assert_why_only_in_the_log(line, run.stderr)


async def test_without_a_log_the_words_say_where_to_ask_and_still_not_the_databases(
    tmp_path: Path, down_pg: pg.PgServer, url: str
) -> None:
    runtime = tmp_path / "runtime"
    shared = runtime / "mcp-server-escalation"
    shared.mkdir(parents=True)
    shared.chmod(0o755)  # others may enter it: the hook refuses the folder, so no log
    with stopped(down_pg):
        run = await hook_process(
            "claude-code", pre_tool("toolu_down"), db=url, tmp=tmp_path, XDG_RUNTIME_DIR=str(runtime), **OFF
        )

    assert (run.returncode, run.stdout) == (0, "")
    unlogged = BOOK.render("hook_store_down_unlogged")
    assert run.stderr == PREFIX + BOOK.render("hook_store_down", details=unlogged) + "\n"
    assert_no_database_words(run.stderr, url)
    assert list(shared.iterdir()) == []


async def _answered_again(url: str, tmp_path: Path, n: int) -> None:
    """A relayed check answered by the store (nothing on stderr): the outage is over."""
    deadline = time.monotonic() + 30
    while True:
        run = await hook_run(pre_tool(f"toolu_back_{n}"), db=url, tmp=tmp_path, **REQUIRE)
        if run.stderr == "":
            return
        assert time.monotonic() < deadline, run.stderr


async def test_a_relayed_run_says_the_same_and_the_relay_logs_why_once_per_outage(
    tmp_path: Path, down_pg: pg.PgServer, url: str
) -> None:
    log = hook_log(url, tmp_path)
    state = {"XDG_STATE_HOME": str(tmp_path / "state")}
    folder = spool_folder(url, state)
    report = bash_failure("npm test", "Error: relayed", "toolu_relayed")
    with relaying(url, tmp_path, **state) as own_log:  # a relayed report waits in the relay's spool
        with stopped(down_pg):
            kept = await hook_run(report, db=url, tmp=tmp_path, **REQUIRE)
            checks = [
                await hook_run(pre_tool(f"toolu_{n}"), db=url, tmp=tmp_path, **REQUIRE) for n in range(3)
            ]
        await _answered_again(url, tmp_path, 0)
        first_outage = outage_lines(log)
        with stopped(down_pg):
            second = await hook_run(pre_tool("toolu_again"), db=url, tmp=tmp_path, **REQUIRE)
        await _answered_again(url, tmp_path, 1)
    said = kept.stderr + "".join(run.stderr for run in [*checks, second])

    kept_words = BOOK.render("hook_store_down_kept", spool=str(folder), waiting=1, details=details(log))
    assert (kept.returncode, kept.stdout, kept.stderr) == (0, "", PREFIX + kept_words + "\n")
    down = PREFIX + BOOK.render("hook_store_down", details=details(log)) + "\n"
    assert [(run.returncode, run.stdout, run.stderr) for run in [*checks, second]] == [(0, "", down)] * 4
    assert_no_database_words(said, url)
    # The relay handles many events: one line per outage, not one per event.
    assert len(first_outage) == 1, first_outage
    assert_why_only_in_the_log(first_outage[0], said)
    assert len(outage_lines(log)) == 2
    assert list(folder.glob("*.json")) == []  # the kept report was recorded once the store was back
    assert "Traceback" not in own_log.read_text(encoding="utf-8")


async def test_through_the_daemon_the_words_are_the_same_and_its_log_says_why_once(
    tmp_path: Path, down_pg: pg.PgServer, url: str, private_relay_sockets: Path
) -> None:
    log = hook_log(url, tmp_path)
    started = await hook_run(pre_tool("toolu_start"), db=url, tmp=tmp_path, **ON)
    try:
        lock = Path(lock_path(socket_of(url, tmp_path)))
        assert (started.returncode, started.stderr) == (0, "")
        assert daemon_running(lock)
        with stopped(down_pg):
            checks = [
                await hook_run(pre_tool(f"toolu_{n}"), db=url, tmp=tmp_path, **REQUIRE) for n in range(3)
            ]
    finally:
        stop_daemons(private_relay_sockets)

    down = PREFIX + BOOK.render("hook_store_down", details=details(log)) + "\n"
    assert [(run.returncode, run.stdout, run.stderr) for run in checks] == [(0, "", down)] * 3
    assert_no_database_words("".join(run.stderr for run in checks), url)
    # The daemon's log is this one: what the database said is in it once for the outage.
    lines = outage_lines(log)
    assert len(lines) == 1, lines
    assert_why_only_in_the_log(lines[0], "".join(run.stderr for run in checks))
