"""The store's edges (issue 16, items 3, 5 and 6), each kept as the attack that found it.

- ``db backup`` onto the store's own WAL (or its shared memory, its journal, the store
  itself) destroyed acknowledged writes: every file of the live store is refused as a target.
- Edges that reached the model as a bare "Error executing tool": ids beyond what SQLite
  holds, a read-only store, a full disk. Each now says what is wrong, the server stays up and
  nothing stored changes.
- A store written by a newer version was used silently: every door refuses it, naming both
  schema versions.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError

from conftest import connect, make_settings
from hooks_support import bash_failure, environment, hook
from mcp_server_escalation.adapters.composition.server import build_server
from mcp_server_escalation.datafiles import data_dir
from mcp_server_escalation.errors import InvalidInput, StoreError
from mcp_server_escalation.hooks.relay import socket_path
from mcp_server_escalation.hooks.relay_spawn import log_path
from mcp_server_escalation.models.limits import SQLITE_INTEGER_MAX
from mcp_server_escalation.prompts import PromptBook
from mcp_server_escalation.services import reports
from mcp_server_escalation.services.runtime import open_runtime
from mcp_server_escalation.settings import Settings
from mcp_server_escalation.store import db as db_module
from mcp_server_escalation.store.db import Database
from mcp_server_escalation.store.migrations import MIGRATIONS
from operator_support import SCRIPT, cli_env, flat, run_cli
from store_contents import contents
from store_faults import read_only

TOO_BIG = SQLITE_INTEGER_MAX + 1  # 2**63: no SQLite INTEGER holds it
LATEST = MIGRATIONS[-1].version
BOOK = PromptBook.load(data_dir("prompts"))


def dump(db_path: str) -> list[Any]:
    """Every row and definition of the store (what "nothing stored changed" compares)."""
    return contents(db_path)


async def _store_with_a_task(db_path: str, task_id: str = "edge") -> None:
    async with connect(db_path) as agent:
        await agent.call("start_task", title="Edges", task_id=task_id)


@contextmanager
def _open_writer(db_path: str) -> Iterator[sqlite3.Connection]:
    """Another process's view of the store, holding the WAL open with unchecked-in writes."""
    conn = sqlite3.connect(db_path, isolation_level=None)
    conn.execute("PRAGMA wal_autocheckpoint = 0")  # the writes stay in the WAL
    try:
        yield conn
    finally:
        conn.close()


# --- Item 3: db backup onto the live store's own files -----------------------------------


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "xdg-data"
    path.mkdir()
    return path


async def test_db_backup_onto_the_live_wal_is_refused_and_every_acknowledged_write_survives(
    db_path: str, home: Path
) -> None:
    await _store_with_a_task(db_path)
    with _open_writer(db_path) as writer:
        for n in range(20):
            writer.execute("UPDATE tasks SET title = ? WHERE task_id = 'edge'", (f"acknowledged write {n}",))
        wal = Path(f"{db_path}-wal")
        before = wal.read_bytes()
        code, out, err = await run_cli("--db", db_path, "db", "backup", str(wal), "--force", home=home)
        assert wal.read_bytes() == before
        title = writer.execute("SELECT title FROM tasks WHERE task_id = 'edge'").fetchone()[0]

    assert code == 1
    assert out == ""
    assert f"{wal} is the store's write-ahead log" in flat(err)
    assert "Traceback" not in err
    assert title == "acknowledged write 19"


@pytest.mark.parametrize(
    ("suffix", "what"),
    [
        ("", "the store itself"),
        ("-wal", "write-ahead log"),
        ("-shm", "shared memory"),
        ("-journal", "journal"),
    ],
)
async def test_db_backup_refuses_every_file_of_the_live_store_also_through_a_symlink(
    suffix: str, what: str, db_path: str, tmp_path: Path
) -> None:
    await _store_with_a_task(db_path)
    own = Path(f"{db_path}{suffix}")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    link = elsewhere / "innocent.db"
    link.symlink_to(own)
    async with open_runtime(Settings(db_path=db_path)) as rt:
        existing = {path: path.read_bytes() for path in (Path(db_path), own) if path.exists()}
        for target in (own, link):
            with pytest.raises(InvalidInput) as refused:
                await reports.backup(rt, str(target), overwrite=True)
            assert what in str(refused.value)
            assert str(own) in str(refused.value)
        assert {path: path.read_bytes() for path in existing} == existing


async def test_db_backup_refuses_a_destination_whose_temporary_copy_would_be_the_store(
    tmp_path: Path,
) -> None:
    # The copy is written beside the destination as .NAME.partial first: a store by that
    # name would have been deleted before the copy began.
    db_path = str(tmp_path / ".copy.db.partial")
    await _store_with_a_task(db_path)
    async with open_runtime(Settings(db_path=db_path)) as rt:
        with pytest.raises(InvalidInput) as refused:
            await reports.backup(rt, str(tmp_path / "copy.db"))
    assert db_path in str(refused.value)
    assert Path(db_path).exists()
    assert not (tmp_path / "copy.db").exists()


@pytest.mark.parametrize("suffix", ["-wal", "-shm", "-journal"])
async def test_a_stores_wal_shm_or_journal_is_never_opened_as_a_store_of_its_own(
    suffix: str, db_path: str
) -> None:
    await _store_with_a_task(db_path)
    with _open_writer(db_path) as writer:
        writer.execute("UPDATE tasks SET title = 'kept' WHERE task_id = 'edge'")
        companion = Path(f"{db_path}{suffix}")
        existed = companion.exists()
        before = companion.read_bytes() if existed else b""
        with pytest.raises(StoreError) as refused:
            await Database.open(str(companion))
        assert companion.exists() is existed
        assert (companion.read_bytes() if existed else b"") == before
        assert writer.execute("SELECT title FROM tasks").fetchone()[0] == "kept"
    assert f"{companion} belongs to the store {db_path}" in str(refused.value)


# --- Item 5: ids beyond SQLite's INTEGER ---------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "arguments", "field"),
    [
        ("get_escalation", {"escalation_id": TOO_BIG}, "escalation_id"),
        ("get_escalation", {"escalation_id": 1, "known_revision": TOO_BIG}, "known_revision"),
        ("acknowledge_response", {"escalation_id": 2**64}, "escalation_id"),
        (
            "raise_escalation",
            {"task_id": "edge", "reason": "Which?", "follow_up_of": TOO_BIG},
            "follow_up_of",
        ),
    ],
)
async def test_an_id_beyond_sqlite_integers_is_refused_naming_the_field_and_the_limit(
    tool: str, arguments: dict[str, Any], field: str, db_path: str
) -> None:
    async with connect(db_path) as agent:
        await agent.call("start_task", title="Edges", task_id="edge")
        error = await agent.error(tool, **arguments)
        still_up = await agent.call("list_escalations")

    assert field in error
    assert f"{SQLITE_INTEGER_MAX}" in error
    assert still_up["total"] == 0


async def test_the_operators_resolve_escalation_bounds_its_id_too(db_path: str) -> None:
    async with connect(db_path, role="operator") as operator:
        error = await operator.error(
            "resolve_escalation", escalation_id=TOO_BIG, response_type="guidance", content="x"
        )
    assert "escalation_id" in error
    assert f"{SQLITE_INTEGER_MAX}" in error


async def test_an_escalation_resource_beyond_sqlite_integers_is_not_found(db_path: str) -> None:
    settings = make_settings(db_path)
    async with Client(build_server(settings)) as client:  # type: ignore[arg-type]
        with pytest.raises(MCPError) as missing:
            await client.read_resource(f"escalation://{TOO_BIG}")
    assert f"escalation://{TOO_BIG}" in str(missing.value)
    assert "no escalation" in str(missing.value)


@pytest.mark.parametrize(
    "command",
    [
        ["escalations", "show", str(TOO_BIG)],
        ["escalations", "respond", str(TOO_BIG), "--guidance", "x"],
        ["escalations", "respond", "1", "--approve", "--file-limit", str(TOO_BIG)],
        ["tasks", "list", "--limit", str(TOO_BIG)],
    ],
)
async def test_the_cli_refuses_numbers_beyond_their_limit_with_a_usage_error(
    command: list[str], db_path: str, home: Path
) -> None:
    await _store_with_a_task(db_path)
    code, _out, err = await run_cli("--db", db_path, *command, home=home)
    assert code == 2
    assert "Traceback" not in err
    assert "at most" in err


# --- Item 5: a read-only store, a full disk ------------------------------------------------


async def test_a_read_only_store_answers_writes_with_a_tool_error_and_still_serves_reads(
    db_path: str,
) -> None:
    await _store_with_a_task(db_path)
    before = dump(db_path)
    with read_only(Path(db_path)):
        async with connect(db_path) as agent:
            errors = [
                await agent.error("record_failure", task_id="edge", message="ImportError: no module x"),
                await agent.error("report_progress", task_id="edge", files_modified=["src/a.py"]),
                await agent.error("start_task", title="Another", task_id="other"),
            ]
            task = await agent.call("get_task", task_id="edge")
    after = dump(db_path)

    for error in errors:
        assert "read-only" in error
        assert "tell the operator" in error
        assert db_path in error
    assert task["task"]["task_id"] == "edge"
    assert after == before


async def test_a_full_disk_answers_with_a_tool_error_and_the_server_goes_on(
    db_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    await _store_with_a_task(db_path)
    before = dump(db_path)
    real_connect = db_module._connect

    def full_disk(path: str, *, create: bool) -> sqlite3.Connection:
        # SQLite's own page limit: the file may not grow by one page, as on a full disk.
        conn = real_connect(path, create=create)
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages}")
        return conn

    monkeypatch.setattr(db_module, "_connect", full_disk)
    async with connect(db_path) as agent:
        big = "ValueError: " + "x" * 60_000  # needs new pages whatever the free space
        first = await agent.error("record_failure", task_id="edge", message=big)
        second = await agent.error("record_failure", task_id="edge", message=big)
        task = await agent.call("get_task", task_id="edge")
    after = dump(db_path)

    for error in (first, second):
        assert "disk is full" in error
        assert "tell the operator" in error
    assert task["task"]["task_id"] == "edge"
    assert after == before


# --- Item 6: a store written by a newer version -------------------------------------------


def _newer(db_path: str, version: int) -> None:
    conn = sqlite3.connect(db_path)
    with conn:
        conn.execute(
            "INSERT INTO schema_migrations (version, name, applied_at)"
            " VALUES (?, 'from the future', '2030-01-01T00:00:00.000Z')",
            (version,),
        )
    conn.close()


async def test_a_store_of_a_newer_schema_is_refused_naming_both_versions(db_path: str) -> None:
    await _store_with_a_task(db_path)
    _newer(db_path, LATEST + 2)
    before = dump(db_path)
    with pytest.raises(StoreError) as refused:
        await Database.open(db_path)
    assert f"schema version {LATEST + 2}" in str(refused.value)
    assert f"knows schema version {LATEST}" in str(refused.value)
    assert dump(db_path) == before


async def test_db_migrate_and_every_command_refuse_a_newer_store_with_a_non_zero_exit(
    db_path: str, home: Path
) -> None:
    await _store_with_a_task(db_path)
    _newer(db_path, LATEST + 2)
    before = dump(db_path)
    runs = [
        await run_cli("--db", db_path, "db", "migrate", home=home),
        await run_cli("--db", db_path, "tasks", "list", home=home),
        await run_cli("--db", db_path, "db", "init", home=home),
    ]
    with anyio.fail_after(60):
        served = await anyio.run_process(
            [str(SCRIPT), "--db", db_path], input=b"", check=False, env=cli_env(home)
        )

    for code, out, err in runs:
        assert code == 1
        assert f"schema version {LATEST + 2}" in err
        assert f"knows schema version {LATEST}" in err
        assert "Traceback" not in err
        assert out == ""
    assert served.returncode == 1
    assert f"schema version {LATEST + 2}" in served.stderr.decode()
    assert served.stdout == b""
    assert dump(db_path) == before


async def test_a_hook_on_a_newer_store_says_why_and_records_nothing(db_path: str, tmp_path: Path) -> None:
    await _store_with_a_task(db_path)
    _newer(db_path, LATEST + 1)
    before = dump(db_path)
    run = await hook("claude-code", bash_failure("npm test", "Error: boom"), db=db_path, tmp=tmp_path)
    assert run.returncode == 0  # a hook never blocks its host
    # Its host may show the model its stderr: the words say it could not open its store and
    # where why is; the store's location and versions are in that log (test_hook_open_words.py).
    socket_file = socket_path(db_path, environment(tmp_path), str(Path.cwd()))
    assert socket_file is not None
    details = BOOK.render("hook_store_details", log=log_path(socket_file))
    assert (
        run.stderr
        == "mcp-server-escalation hook: " + BOOK.render("hook_store_unopened", details=details) + "\n"
    )
    logged = Path(log_path(socket_file)).read_text(encoding="utf-8")
    assert f"schema version {LATEST + 1}" in logged
    assert f"knows schema version {LATEST}" in logged
    assert dump(db_path) == before
