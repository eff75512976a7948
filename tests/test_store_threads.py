"""SQLite never runs on the event loop, and a write waiting for a lock delays no read.

Every transaction is one function handed to a store thread (aiosqlite's): writes to the
process's one writer, reads to reader connections of their own. So while another process
holds the write lock, a write of this process waits in its thread and every other client's
read, tool list and ping on the same server is answered. The tests here take the lock in a
real other process (``BEGIN IMMEDIATE``) and judge by the order of events: the reads return
while the lock is still held, the waiting write only after it is released.
"""

from __future__ import annotations

import sqlite3
import sys
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from anyio.streams.text import TextReceiveStream

from conftest import connect
from http_support import AGENT_TOKEN, http_client, http_in_thread
from mcp_server_escalation.store import db as db_module
from mcp_server_escalation.store import worker
from mcp_server_escalation.store.db import Database

# Another process: take the store's write lock, say so, hold it, say it lets go, and let go
# once told to (the test has then logged it, before anything the release lets through).
HOLDER = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("held", flush=True)
time.sleep(float(sys.argv[2]))
print("releasing", flush=True)
sys.stdin.readline()
conn.execute("COMMIT")
"""
HOLD_SECONDS = 1.0
NO_TRIGGERS = {"same_error_repeated": 1000}


@asynccontextmanager
async def lock_held_by_another_process(
    db_path: str, events: list[str], hold_seconds: float = HOLD_SECONDS
) -> AsyncIterator[None]:
    """The write lock held by another OS process for ``hold_seconds``; "releasing" is logged
    in ``events`` before it lets go. Exits once the process has ended."""
    async with (
        await anyio.open_process([sys.executable, "-c", HOLDER, db_path, str(hold_seconds)]) as holder,
        anyio.create_task_group() as tg,
    ):
        assert holder.stdout is not None
        assert holder.stdin is not None
        lines = TextReceiveStream(holder.stdout)
        held = anyio.Event()

        async def follow() -> None:
            async for chunk in lines:
                for line in chunk.split():
                    if line == "held":
                        held.set()
                        continue
                    events.append(line)
                    if line == "releasing":
                        await holder.stdin.send(b"go\n")

        tg.start_soon(follow)
        await held.wait()
        yield
        assert await holder.wait() == 0


async def test_while_another_process_holds_the_write_lock_a_second_http_client_is_answered(
    tmp_path: Path,
) -> None:
    events: list[str] = []
    with http_in_thread(tmp_path) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        with anyio.fail_after(60):
            async with (
                http_client(url, AGENT_TOKEN, "legacy") as first,
                http_client(url, AGENT_TOKEN, "legacy") as second,
            ):
                await first.call("start_task", title="Locked", task_id="locked", thresholds=NO_TRIGGERS)

                async def first_writes() -> None:
                    await first.call("record_failure", task_id="locked", message="KeyError: 'x'")
                    events.append("first client's write returned")

                async with (
                    # Twelve calls over HTTP while it holds: 1 s was too short for them at a load of 12.
                    lock_held_by_another_process(str(tmp_path / "esc.db"), events, hold_seconds=5.0),
                    anyio.create_task_group() as tg,
                ):
                    tg.start_soon(first_writes)
                    for n in range(10):
                        view = await second.call("get_task", task_id="locked")
                        assert view["task"]["task_id"] == "locked"
                        events.append(f"second client's read {n} returned")
                    await second.client.list_tools()
                    events.append("second client's tools/list returned")
                    await second.client.send_ping()
                    events.append("second client's ping returned")

    released = events.index("releasing")
    assert events[:released] == [
        *(f"second client's read {n} returned" for n in range(10)),
        "second client's tools/list returned",
        "second client's ping returned",
    ], events
    # The write waited for the other process and went through once it let go.
    assert events[released + 1 :] == ["first client's write returned"], events


async def test_a_read_on_the_same_database_completes_while_its_write_waits_for_the_lock(db_path: str) -> None:
    db = await Database.open(db_path)
    events: list[str] = []
    try:
        with anyio.fail_after(30):
            async with lock_held_by_another_process(db_path, events), anyio.create_task_group() as tg:

                async def write() -> None:
                    await db.write(lambda conn: conn.execute("CREATE TABLE later (x)"))
                    events.append("write returned")

                tg.start_soon(write)
                await anyio.wait_all_tasks_blocked()  # the write is now waiting for the lock
                version = await db.schema_version()
                events.append("read returned")
    finally:
        await db.close()
    assert version > 0
    assert events == ["read returned", "releasing", "write returned"]


async def test_no_statement_of_a_tool_call_runs_on_the_event_loops_thread(
    db_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: set[int] = set()
    real_connect = db_module._connect

    def traced(path: str, *, create: bool) -> sqlite3.Connection:
        conn = real_connect(path, create=create)
        conn.set_trace_callback(lambda _statement: threads.add(threading.get_ident()))
        return conn

    monkeypatch.setattr(db_module, "_connect", traced)
    loop_thread = threading.get_ident()
    async with connect(db_path) as agent:
        await agent.call("start_task", title="Threads", task_id="threads")
        await agent.call("record_failure", task_id="threads", message="KeyError: 'x'")
        await agent.call("report_progress", task_id="threads", files_modified=["src/a.py"])
        await agent.call("get_task", task_id="threads")
    assert threads
    assert loop_thread not in threads


async def test_the_aiosqlite_thread_runs_a_whole_function_in_one_hop_and_stops_at_close(
    tmp_path: Path,
) -> None:
    # The store reaches into aiosqlite (store/worker.py) to hand it whole functions; an
    # aiosqlite release that changes what it relies on fails here first.
    opened_in: list[threading.Thread] = []

    def connector() -> sqlite3.Connection:
        opened_in.append(threading.current_thread())
        return sqlite3.connect(tmp_path / "w.db", isolation_level=None)

    lane = await worker.Worker.open(connector)
    try:
        ran_in, total = await lane.run(
            lambda conn: (threading.current_thread(), conn.execute("SELECT 40 + 2").fetchone()[0])
        )
        with pytest.raises(sqlite3.OperationalError, match="no such table"):
            await lane.run(lambda conn: conn.execute("SELECT * FROM missing"))
        assert await lane.run(lambda conn: conn.execute("SELECT 1").fetchone()[0]) == 1
    finally:
        await lane.close()
    assert total == 42
    assert opened_in == [ran_in]
    assert ran_in is not threading.current_thread()
    ran_in.join(10)  # the thread ends right after the close it answered
    assert not ran_in.is_alive()


async def test_a_connection_that_fails_to_open_raises_its_error_and_leaves_no_thread(tmp_path: Path) -> None:
    opened_in: list[threading.Thread] = []

    def refused() -> sqlite3.Connection:
        opened_in.append(threading.current_thread())
        raise sqlite3.OperationalError("unable to open database file")

    with pytest.raises(sqlite3.OperationalError, match="unable to open"):
        await worker.Worker.open(refused)
    [thread] = opened_in
    thread.join(10)  # it has answered its last call; it ends right after
    assert not thread.is_alive()


async def test_eight_reads_at_once_open_four_readers_and_closing_leaves_no_thread(db_path: str) -> None:
    before = set(threading.enumerate())
    db = await Database.open(db_path)
    ran_in: list[threading.Thread] = []

    def read(conn: sqlite3.Connection) -> None:
        ran_in.append(threading.current_thread())
        conn.execute("SELECT count(*) FROM schema_migrations").fetchone()

    try:
        async with anyio.create_task_group() as tg:
            for _ in range(8):
                tg.start_soon(db.read, read)
        await db.write(lambda conn: conn.execute("SELECT 1").fetchone())
        opened = set(threading.enumerate()) - before
    finally:
        await db.close()
    assert len(ran_in) == 8
    assert len(set(ran_in)) == db_module.READERS
    assert len(opened) == 1 + db_module.READERS  # the writer's thread and the readers'
    for thread in opened:
        thread.join(10)  # each has answered its close; it ends right after
    assert not [thread for thread in opened if thread.is_alive()]
