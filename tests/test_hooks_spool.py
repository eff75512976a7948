"""A hook run that meets a SQLite store locked by another process past its bound keeps the
event in the spool instead of holding the host (15 s) or losing the event; the next run
records it, once and in order (``hooks/spool.py``; PostgreSQL's outages:
``test_pg_outage.py``, ``test_hook_outage_words.py``). A report kept behind earlier events,
or dropped with the spool full, says so in the prompts' words too."""

from __future__ import annotations

import fcntl
import json
import shutil
import socket
import sqlite3
import time
from pathlib import Path

import httpx2
import pytest

from hooks_support import bash_failure, environment, hook_process, relaying, socket_of
from http_support import AGENT_TOKEN, http_in_thread
from mcp_server_escalation.datafiles import data_dir
from mcp_server_escalation.hooks.relay import PROTOCOL, socket_path
from mcp_server_escalation.hooks.relay_spawn import log_path
from mcp_server_escalation.hooks.spool import MAX_SPOOLED, Spool, Spooled, spool_folder
from mcp_server_escalation.prompts import PromptBook

BOOK = PromptBook.load(data_dir("prompts"))
PREFIX = "mcp-server-escalation hook: "
BOUND = {
    "ESCALATION_STORE_OPERATION_TIMEOUT_SECONDS": "2",
    "ESCALATION_STORE_STATEMENT_TIMEOUT_SECONDS": "1",
    "ESCALATION_HOOK_RELAY": "off",
}


async def test_a_hook_run_on_a_store_locked_past_the_bound_spools_and_the_next_records_it(
    tmp_path: Path, sqlite_template: Path
) -> None:
    store = tmp_path / "escalations.db"
    shutil.copyfile(sqlite_template, store)
    state = {"XDG_STATE_HOME": str(tmp_path / "state"), **BOUND}
    events = [
        bash_failure("pytest -k lock", f"E   AssertionError: lock{n}", f"toolu_lock_{n}") for n in range(2)
    ]

    holder = sqlite3.connect(store, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process's write, never finished
    try:
        started = time.monotonic()
        locked = await hook_process("claude-code", events[0], db=str(store), tmp=tmp_path, **state)
        took = time.monotonic() - started
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    after = await hook_process("claude-code", events[1], db=str(store), tmp=tmp_path, **state)

    assert locked.returncode == 0
    assert locked.stdout == ""
    # What became of the event in the prompts' words; why, in the log they name.
    socket_file = socket_path(str(store), environment(tmp_path), str(Path.cwd()))
    assert socket_file is not None
    log = log_path(socket_file)
    details = BOOK.render("hook_store_down_details", log=log)
    folder = spool_folder(str(store), state)
    kept = BOOK.render("hook_store_down_kept", spool=str(folder), waiting=1, details=details)
    assert locked.stderr == f"{PREFIX}{kept}\n"
    assert "another process held the store's lock longer than 2 s" in Path(log).read_text(encoding="utf-8")
    assert took < 10.0  # the bound (2 s) and the process's start, well within a host's 15 s
    assert after.returncode == 0
    assert "kept" not in after.stderr
    with sqlite3.connect(store) as conn:
        keys = [row[0] for row in conn.execute("SELECT delivery_key FROM hook_events ORDER BY event_id")]
    assert keys == ["post:toolu_lock_0", "post:toolu_lock_1"]
    assert list((tmp_path / "state").glob("mcp-server-escalation/spool/*/*.json")) == []


async def test_a_report_kept_behind_earlier_events_or_dropped_with_the_spool_full_says_so_in_words(
    tmp_path: Path, sqlite_template: Path
) -> None:
    store = tmp_path / "escalations.db"
    shutil.copyfile(sqlite_template, store)
    state = {"XDG_STATE_HOME": str(tmp_path / "state"), **BOUND}
    folder = spool_folder(str(store), state)
    earlier = bash_failure("pytest -k behind", "E   AssertionError: earlier", "toolu_behind_0")
    Spool(folder).keep(Spooled("claude-code", json.dumps(earlier), {}, str(tmp_path)))
    report = bash_failure("pytest -k behind", "E   AssertionError: later", "toolu_behind_1")
    with (folder / ".lock").open("a") as turn:
        fcntl.flock(turn, fcntl.LOCK_EX)  # another hook run is recording the earlier events
        behind = await hook_process("claude-code", report, db=str(store), tmp=tmp_path, **state)
        for n in range(MAX_SPOOLED - 2):
            (folder / f"{n:020d}-filler.json").touch()
        full = await hook_process("claude-code", report, db=str(store), tmp=tmp_path, **state)
        for filler in folder.glob("*-filler.json"):
            filler.unlink()
    after = await hook_process("claude-code", report, db=str(store), tmp=tmp_path, **state)

    # No outage: the store answers, so there is nothing to look up, only what became of it.
    kept = BOOK.render("hook_kept_behind", spool=str(folder), waiting=2)
    assert (behind.returncode, behind.stdout, behind.stderr) == (0, "", f"{PREFIX}{kept}\n")
    dropped = BOOK.render("hook_dropped_behind", spool=str(folder), limit=MAX_SPOOLED)
    assert (full.returncode, full.stdout, full.stderr) == (0, "", f"{PREFIX}{dropped}\n")
    assert after.returncode == 0
    with sqlite3.connect(store) as conn:
        keys = [row[0] for row in conn.execute("SELECT delivery_key FROM hook_events ORDER BY event_id")]
    assert keys == ["post:toolu_behind_0", "post:toolu_behind_1"]  # in order, each once
    assert list(folder.glob("*.json")) == []


def _relayed(path: str, request: dict[str, object]) -> dict[str, object]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(30)  # bounds a test that fails
        conn.connect(path)
        conn.sendall(json.dumps(request).encode())
        conn.shutdown(socket.SHUT_WR)
        reply = json.loads(b"".join(iter(lambda: conn.recv(65536), b"")))
    assert isinstance(reply, dict)
    return reply


async def test_a_report_dropped_with_the_spool_full_is_told_to_the_host_by_the_route_and_the_relay(
    tmp_path: Path, sqlite_template: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the spool's limit the HTTP hook route answered 200 with an empty body, which the
    host reads as an event taken: now a 507 that says it was dropped; the relay's answer says
    so on the hook's stderr."""
    store = tmp_path / "escalations.db"
    shutil.copyfile(sqlite_template, store)
    state = {"XDG_STATE_HOME": str(tmp_path / "state")}
    monkeypatch.setenv("XDG_STATE_HOME", state["XDG_STATE_HOME"])  # the server's own spool
    folder = spool_folder(str(store), state)
    report = bash_failure("pytest -k full", "E   AssertionError: full", "toolu_full_route")
    Spool(folder).keep(Spooled("claude-code", json.dumps(report), {}, str(tmp_path)))
    for n in range(MAX_SPOOLED - 1):
        (folder / f"{n:020d}-filler.json").touch()
    headers = {"Authorization": f"Bearer {AGENT_TOKEN}", "X-Escalation-Task": "full-1"}
    with (folder / ".lock").open("a") as turn:
        fcntl.flock(turn, fcntl.LOCK_EX)  # another run is recording the earlier events
        with http_in_thread(tmp_path, "--db", str(store)) as port, httpx2.Client(timeout=60) as client:
            posted = client.post(f"http://127.0.0.1:{port}/hooks/claude-code", json=report, headers=headers)
        with relaying(str(store), tmp_path, **state):
            request = {
                "protocol": PROTOCOL,
                "host": "claude-code",
                "options": {"--db": str(store)},
                "env": {**environment(tmp_path), **state},
                "cwd": str(tmp_path),
                "stdin": json.dumps(
                    bash_failure("pytest -k full", "E   AssertionError: x", "toolu_full_relay")
                ),
            }
            relayed = _relayed(socket_of(str(store), tmp_path), request)

    dropped = BOOK.render("hook_http_spool_full", limit=MAX_SPOOLED)
    assert (posted.status_code, posted.text) == (
        507,
        BOOK.render("hook_http_not_recorded", reason=dropped) + "\n",
    )
    told = BOOK.render("hook_dropped_behind", spool=str(folder), limit=MAX_SPOOLED)
    assert relayed["stderr"] == f"{PREFIX}{told}\n"
    assert len(list(folder.glob("*.json"))) == MAX_SPOOLED  # nothing more was kept
