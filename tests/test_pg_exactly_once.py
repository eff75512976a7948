"""A write on PostgreSQL is recorded once, or not at all, or its caller is told it may have
been: never twice, never "not recorded" when it was.

Real PostgreSQL, real servers (the SDK's client in memory, each agent a server of its own
with its own connections), writing failures and progress reports while a proxy loses the
answer to a COMMIT the database applied, another connection terminates their sessions in a
loop (``pg_terminate_backend``), or the database stops fast (``pg_ctl stop -m fast``). Then
each answer is compared with what the database holds. (``benchmarks/bench_exactly_once.py``
runs the loop for 20,000 writes.)
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

import anyio
import anyio.to_thread
import pytest

import pg_local as pg
from conftest import Agent, ToolCallError, connect, migrate_store, own_pg_server
from pg_proxy import Loss, commit_losing_proxy
from session_kills import (
    AGAIN,
    MAYBE_RECORDED,
    NO_TRIGGERS,
    NOTHING_RECORDED,
    call_text,
    stored,
    terminate_in_a_loop,
)

pytestmark = pytest.mark.interop

AGENTS = 4
# How often the loop terminates every session of the agents' database.
KILL_EVERY_SECONDS = 0.2
# Each agent's calls alternate record_failure and report_progress.
CALLS_PER_AGENT = 250
# Every commit flushed and, before its flush, delayed (commit_delay, in microseconds): the
# time in which a terminated session has applied its COMMIT but not yet answered it.
SLOW_COMMITS = (
    "-c fsync=on",
    "-c synchronous_commit=on",
    "-c full_page_writes=off",
    "-c commit_delay=5000",
    "-c commit_siblings=0",
)
# How often the fast-stop test stops the database under writes.
STOPS = 3


@dataclass
class Answers:
    """What each call was answered: recorded, not recorded, or maybe; keyed by its text."""

    recorded: list[str] = field(default_factory=list)
    not_recorded: list[str] = field(default_factory=list)
    maybe: list[str] = field(default_factory=list)
    other: list[str] = field(default_factory=list)


async def _agent(
    url: str,
    name: str,
    calls: int,
    answers: Answers,
    ready: list[str] | None = None,
    done: anyio.Event | None = None,
) -> None:
    """One agent's server, its task started, then ``calls`` writes (once every agent is ready
    when ``ready`` counts them; until ``done`` is set, when given)."""
    async with connect(url) as agent:
        await agent.call("start_task", title=f"Agent {name}", task_id=name, thresholds=NO_TRIGGERS)
        if ready is not None:
            ready.append(name)
            while len(ready) < AGENTS + 1:  # the agents and the loop that kills
                await anyio.sleep(0.01)
        for n in range(calls):
            if done is not None and done.is_set():
                return
            await _write(agent, name, n, answers)


async def _write(agent: Agent, name: str, n: int, answers: Answers) -> None:
    """One write, made again as the words ask when it was not recorded (a few times at most)."""
    text = call_text(name, n)
    for _ in range(AGAIN):
        try:
            if n % 2:
                await agent.call("report_progress", task_id=name, note=text, tests_passed=n)
            else:
                await agent.call("record_failure", task_id=name, message=f"RuntimeError: {text}")
        except ToolCallError as exc:
            said = str(exc)
            if NOTHING_RECORDED in said:
                continue  # "make this call again"
            if MAYBE_RECORDED in said:
                answers.maybe.append(text)
            else:
                answers.other.append(said)
        else:
            answers.recorded.append(text)
        return
    answers.not_recorded.append(text)


def _assert_true_to_the_store(answers: Answers, held: Counter[str]) -> None:
    doubled = sorted(text for text, count in held.items() if count > 1)
    assert doubled == [], f"{len(doubled)} writes stored twice: {doubled[:5]}"
    lost = [text for text in answers.recorded if text not in held]
    assert lost == [], f"answered recorded, not stored: {lost[:5]}"
    false_nothing = [text for text in answers.not_recorded if text in held]
    assert false_nothing == [], f"answered not recorded, stored: {false_nothing[:5]}"
    assert answers.other == [], answers.other[:3]  # no bare internal error


@pytest.mark.parametrize("loss", ["terminated", "cut"])
async def test_a_commit_whose_answer_was_lost_is_answered_as_recorded_once(
    loss: Loss, pg_server: pg.PgServer, pg_url: str
) -> None:
    with commit_losing_proxy(pg_server.port) as proxy:
        url = pg_url.replace(f":{pg_server.port}/", f":{proxy.port}/") + "?sslmode=disable"
        async with connect(url) as agent:
            await agent.call("start_task", title="Lost answers", task_id="lost", thresholds=NO_TRIGGERS)
            proxy.arm(loss)
            failure = await agent.call("record_failure", task_id="lost", message="RuntimeError: first lost")
            proxy.arm(loss)
            progress = await agent.call("report_progress", task_id="lost", note="second lost", tests_passed=1)
            task = await agent.call("get_task", task_id="lost")

    assert proxy.lost == 2  # each COMMIT was applied and its answer lost
    assert stored(pg_url) == Counter({"first lost": 1, "second lost": 1})
    # Each answer is the outcome its one committed run left: counted once.
    assert failure["failure"]["occurrence_count"] == 1
    assert progress["counters"]["tool_calls"] == 2
    assert task["task"]["counters"]["tool_calls"] == 2


@pytest.fixture(scope="module")
def slow_commits() -> Iterator[pg.PgServer]:
    """A server of this module's own whose commits each take a few milliseconds, as on a disk
    that syncs: a session terminated while it commits is then common, not rare."""
    with own_pg_server(SLOW_COMMITS) as server:
        server.make_template("exactly_once_template", migrate_store)
        yield server


async def test_sessions_terminated_in_a_loop_leave_no_write_doubled_and_every_answer_true(
    slow_commits: pg.PgServer,
) -> None:
    pg_server = slow_commits
    dbname = pg_server.create_database()
    url = pg_server.url(dbname)
    answers = Answers()
    stop = threading.Event()
    killed: list[int] = []
    ready: list[str] = []
    killer = threading.Thread(
        target=terminate_in_a_loop, args=(pg_server, dbname, KILL_EVERY_SECONDS, stop, killed)
    )
    try:
        try:
            with anyio.fail_after(120):
                async with anyio.create_task_group() as tg:
                    for i in range(AGENTS):
                        tg.start_soon(_agent, url, f"agent-{i}", CALLS_PER_AGENT, answers, ready)
                    while len(ready) < AGENTS:
                        await anyio.sleep(0.01)
                    killer.start()
                    ready.append("the loop")
        finally:
            stop.set()
            if killer.is_alive():
                await anyio.to_thread.run_sync(killer.join)
        held = stored(url)
    finally:
        pg_server.drop_database(dbname)

    assert sum(killed) > 100, "the loop terminated too few sessions to prove anything"
    assert len(answers.recorded) > AGENTS * CALLS_PER_AGENT // 4, "too few calls got through"
    _assert_true_to_the_store(answers, held)


async def test_a_fast_stop_during_writes_tells_no_committed_write_not_recorded(
    slow_commits: pg.PgServer,
) -> None:
    stopped_pg = slow_commits
    dbname = stopped_pg.create_database()
    url = stopped_pg.url(dbname)
    answers = Answers()

    async def stop_and_start(done: anyio.Event, ready: list[str]) -> None:
        while len(ready) < AGENTS:
            await anyio.sleep(0.01)
        ready.append("the stop")
        await anyio.sleep(0.5)  # writes are under way
        await anyio.to_thread.run_sync(pg.stop_fast, stopped_pg)
        await anyio.sleep(0.5)
        await anyio.to_thread.run_sync(pg.start_again, stopped_pg)
        await anyio.sleep(0.5)  # writes again
        done.set()

    try:
        for round_ in range(STOPS):
            done = anyio.Event()
            ready: list[str] = []
            with anyio.fail_after(60):
                async with anyio.create_task_group() as tg:
                    for i in range(AGENTS):
                        tg.start_soon(_agent, url, f"fast-{round_}-{i}", 10_000, answers, ready, done)
                    tg.start_soon(stop_and_start, done, ready)
        held = stored(url)
    finally:
        if stopped_pg.postmaster_pid() is None:
            pg.start_again(stopped_pg)
        stopped_pg.drop_database(dbname)

    assert answers.not_recorded or answers.maybe, "the stop failed no call: it proved nothing"
    _assert_true_to_the_store(answers, held)
