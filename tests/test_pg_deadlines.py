"""Every tool call and every hook within its bound on a PostgreSQL store, whatever the database
does: a real PostgreSQL behind a link that makes each of its answers slow (every operation
within its own bound, their sum not), and one stopped (``SIGSTOP``) while hooks run.

Real processes: the SDK's client in memory against the real database, the installed script as
a stdio server (whose relay answers hook runs), as the hook a host runs, and as an HTTP server
whose hook route a host posts to.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx2
import pytest

import pg_local as pg
from conftest import connect, database_of, migrate_store, own_pg_server
from hooks_support import hook_process, pre_edit
from http_support import AGENT_TOKEN, TEST_TOKENS, start_http, stop_http
from mcp_server_escalation.hooks.relay import ANSWER_TIMEOUT, SERVED_HOOK_SECONDS
from mcp_server_escalation.models.store_config import StoreConfig
from pg_proxy import slow_link
from test_hook_bounds import (
    FAILED_RUN,
    RELAY_ONLY,
    hooks_alone_answer_within_the_limit,
    spooled,
)
from test_hooks_relay import serving

pytestmark = pytest.mark.interop

# Short bounds, so the test is: an operation gets 2 s, and so does the whole call.
BOUND = 2.0
BOUNDS = StoreConfig(operation_timeout_seconds=BOUND, statement_timeout_seconds=1, connect_timeout_seconds=2)
# Each answer of the database this late: a read (its connection checked, BEGIN, a statement or
# two, ROLLBACK) takes about a second, under its bound; a call of several takes longer in all.
ANSWER_DELAY = 0.25
NOTHING_RECORDED = "Nothing of this call was recorded"
MAYBE_RECORDED = "it may or may not have been recorded"
# Servers started beside a busy suite took over 20 s to listen.
START_SECONDS = 60


def _stored_failures(server: pg.PgServer, dbname: str) -> int:
    with server.connect(dbname) as conn:
        row = conn.execute("SELECT COUNT(*) FROM failure_occurrences").fetchone()
    return int(row[0]) if row else 0


async def test_a_tool_call_of_several_slow_operations_ends_within_one_bound(
    pg_server: pg.PgServer, pg_url: str
) -> None:
    dbname = pg_url.rsplit("/", 1)[-1]
    with slow_link(pg_server.port) as link:
        url = pg_url.replace(f":{pg_server.port}/", f":{link.port}/") + "?sslmode=disable"
        async with connect(url, store=BOUNDS) as agent:
            await agent.call("start_task", title="Slow link", task_id="slow")
            await agent.call("get_task", task_id="slow")  # a reader's connection, made at full speed
            link.delay = ANSWER_DELAY
            started = time.monotonic()
            said = await agent.error("record_failure", task_id="slow", message="RuntimeError: slow link")
            took = time.monotonic() - started
            link.delay = 0.0

    # One deadline for the call: its operations used to get 2 s each, one after the other.
    assert took < BOUND + 1.0, f"the call ended after {took:.1f} s: {said}"
    stored = _stored_failures(pg_server, dbname)
    # What the model reads is true of what was stored: "nothing" only when nothing was.
    if NOTHING_RECORDED in said:
        assert stored == 0
    else:
        assert MAYBE_RECORDED in said, said
        assert stored <= 1


@pytest.fixture(scope="module")
def stall_pg() -> Iterator[pg.PgServer]:
    """A PostgreSQL server of this module's own, which its tests stop (the session's serves
    every other test)."""
    with own_pg_server(pg.COMMITS_SURVIVE_A_KILL) as server:
        server.make_template("deadlines_template", migrate_store)
        yield server


@pytest.fixture
def stall_url(stall_pg: pg.PgServer) -> Iterator[str]:
    with database_of(stall_pg) as url:
        yield url


@contextmanager
def stalled(server: pg.PgServer) -> Iterator[None]:
    """Every process of the database stopped: it takes connections and answers nothing."""
    pg.signal_all(server, signal.SIGSTOP)
    try:
        yield
    finally:
        pg.signal_all(server, signal.SIGCONT)


async def test_a_relayed_hook_answers_within_the_hosts_limit_while_the_database_stalls(
    tmp_path: Path, stall_pg: pg.PgServer, stall_url: str
) -> None:
    state = tmp_path / "state"
    took: list[float] = []
    runs = []
    with serving(stall_url, tmp_path, XDG_STATE_HOME=str(state)):
        # The relay's connections are made before the stall, as a session's are.
        await hook_process("claude-code", pre_edit("src/warm.py"), db=stall_url, tmp=tmp_path, **RELAY_ONLY)
        with stalled(stall_pg):
            for event in (pre_edit("src/app.py"), FAILED_RUN):
                started = time.monotonic()
                run = await hook_process("claude-code", event, db=stall_url, tmp=tmp_path, **RELAY_ONLY)
                runs.append(run)
                took.append(time.monotonic() - started)

    # The relay answers by its own deadline, before the hook would give up on it (8 s) and
    # do the work again itself with what is left of its own budget.
    assert max(took) < ANSWER_TIMEOUT, (took, [run.stderr for run in runs])
    check, report = runs
    assert (check.returncode, check.stdout) == (0, "")
    assert "the store is not answering" in check.stderr, check.stderr
    assert (report.returncode, report.stdout) == (0, "")
    assert "will be recorded once the store is back" in report.stderr, report.stderr
    assert len(spooled(state)) == 1


async def test_a_hook_that_runs_itself_answers_within_the_hosts_limit_while_the_database_stalls(
    tmp_path: Path, stall_pg: pg.PgServer, stall_url: str
) -> None:
    await hooks_alone_answer_within_the_limit(stalled(stall_pg), stall_url, tmp_path)


def test_hook_events_posted_over_http_answer_within_the_hosts_limit_while_the_database_stalls(
    tmp_path: Path, stall_pg: pg.PgServer, stall_url: str
) -> None:
    state = tmp_path / "state"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ESCALATION_")}
    env.update(TEST_TOKENS, XDG_STATE_HOME=str(state))
    process, port, _log = start_http(tmp_path, "--db", stall_url, env=env, wait_seconds=START_SECONDS)
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {AGENT_TOKEN}"}
    check = {**pre_edit("/tmp/remote/src/app.py"), "cwd": "/tmp/remote"}
    report = {**FAILED_RUN, "cwd": "/tmp/remote"}
    took: list[float] = []
    answers = []
    try:
        client = httpx2.Client(base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=30)
        with client as host:
            host.post("/hooks/claude-code", content=json.dumps(check))  # its connections made
            with stalled(stall_pg):
                for event in (check, report):
                    started = time.monotonic()
                    answers.append(host.post("/hooks/claude-code", content=json.dumps(event)))
                    took.append(time.monotonic() - started)
    finally:
        stop_http(process)

    # Within the deadline of a hook event a server answers (the route used to wait out the
    # store's 8 s operation bound, and a replay of the spool before it another 8 s).
    assert max(took) < SERVED_HOOK_SECONDS + 1.5, took
    down, kept = answers
    assert down.status_code == 503, down.text
    assert "nothing was recorded; no decision" in down.text
    assert (kept.status_code, kept.text) == (200, "")  # no decision; kept for later
    assert len(spooled(state)) == 1
