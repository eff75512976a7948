"""Every hook answers within the host's limit, and every tool call within its documented bound,
whatever the store does: here, another process holds a SQLite store's write lock for longer
than either.

Real processes: the installed script as a stdio server (whose relay answers hook runs) and as
the hook a host runs; the lock is held by a connection of the test's own, as another process
writing a long transaction would.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from conftest import connect
from hooks_support import hook_process, pre_edit
from mcp_server_escalation.store.db import BUSY_TIMEOUT_MS
from test_hooks_relay import serving

# The hosts kill a hook at 15 s; a hook answers within this, with room for a busy machine.
HOOK_ANSWERS_WITHIN = 14.0
# Longer than any bound: the lock is held until the test lets it go.
LOCK_HELD_SECONDS = 45.0


@contextmanager
def write_lock_held(db: str) -> Iterator[threading.Event]:
    """The store's write lock, held by another connection until the event is set (or 45 s)."""
    release = threading.Event()
    taken = threading.Event()

    def hold() -> None:
        conn = sqlite3.connect(db, timeout=5, isolation_level=None)
        try:
            conn.execute("BEGIN IMMEDIATE")
            taken.set()
            release.wait(LOCK_HELD_SECONDS)
            conn.execute("ROLLBACK")
        finally:
            conn.close()

    holder = threading.Thread(target=hold)
    holder.start()
    assert taken.wait(10), "the lock was not taken"
    try:
        yield release
    finally:
        release.set()
        holder.join()


async def test_a_relayed_check_before_an_edit_answers_within_the_hosts_limit_while_the_store_is_locked(
    tmp_path: Path,
) -> None:
    db = str(tmp_path / "locked.db")
    with serving(db, tmp_path), write_lock_held(db):
        started = time.monotonic()
        run = await hook_process("claude-code", pre_edit("src/app.py"), db=db, tmp=tmp_path)
        took = time.monotonic() - started

    assert took < HOOK_ANSWERS_WITHIN, f"the hook answered after {took:.1f} s: {run.stderr}"
    assert (run.returncode, run.stdout) == (0, "")  # no decision: the host goes on
    assert "the store is not answering" in run.stderr, run.stderr


async def test_a_tool_call_ends_within_its_bound_while_another_process_holds_the_stores_lock(
    tmp_path: Path,
) -> None:
    db = str(tmp_path / "locked.db")
    async with connect(db) as agent:
        await agent.call("start_task", title="Locked", task_id="locked")
        with write_lock_held(db):
            started = time.monotonic()
            said = await agent.error("record_failure", task_id="locked", message="RuntimeError: locked out")
            took = time.monotonic() - started

    bound = BUSY_TIMEOUT_MS / 1000  # the 30 s docs/architecture.md gives a call
    assert bound - 1 < took < bound + 3, f"the call ended after {took:.1f} s"
    assert "Nothing of this call was recorded" in said, said
    with sqlite3.connect(db) as conn:  # the failure was not kept
        assert conn.execute("SELECT COUNT(*) FROM failure_occurrences").fetchone() == (0,)
