"""What a person (or the model) reads when a hook run cannot open its store at all (not a
store that is down: a path no store can be made at, a file that is no store, a store of a
newer schema) or its store refuses the write: the prompts' words on stderr (the hook could
not open its store, or the store refused to record the event; nothing recorded, no decision
so the host goes on; which setting to check, the command that says why, where the details
are), never the store's path or URL, its host and port, or what the driver said; those are
in the log of the store's relay daemons beside its socket, as for an outage
(``test_hook_outage_words.py``).

Real parts throughout: the installed script as the hook (by itself and through ``hook
relay``), real SQLite files and folders, the suite's PostgreSQL server; the hook route of
``serve --transport http`` (in a thread) says a refused write is its store's, with a 503.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from urllib.parse import urlsplit

import httpx2
import pytest

import pg_local as pg
from hooks_support import bash_failure, hook_log, hook_process, relaying
from http_support import AGENT_TOKEN, http_in_thread
from mcp_server_escalation.datafiles import data_dir
from mcp_server_escalation.prompts import PromptBook
from mcp_server_escalation.store.backends import open_store
from store_faults import read_only

PREFIX = "mcp-server-escalation hook: "
BOOK = PromptBook.load(data_dir("prompts"))
OFF = {"ESCALATION_HOOK_RELAY": "off"}
FUTURE = 9999  # a schema version no release of this one knows
PASSWORD = "hunter2-secret"


def report() -> dict[str, object]:
    """A report to record: the hook must open its store for it."""
    return bash_failure("npm test", "Error: boom", "toolu_open")


async def hook_run(db: str, tmp: Path, **env: str) -> tuple[int, str, str]:
    run = await hook_process(
        "claude-code", report(), db=db, tmp=tmp, XDG_STATE_HOME=str(tmp / "state"), **{**OFF, **env}
    )
    return run.returncode, run.stdout, run.stderr


def unopened(log: Path) -> str:
    """The exact line on stderr: the words, and the log the details are in."""
    details = BOOK.render("hook_store_details", log=str(log))
    return PREFIX + BOOK.render("hook_store_unopened", details=details) + "\n"


def refused(log: Path) -> str:
    """The exact line on stderr for a write the store refused."""
    details = BOOK.render("hook_store_details", log=str(log))
    return PREFIX + BOOK.render("hook_store_unwritable", details=details) + "\n"


def spool_files(tmp_path: Path) -> list[Path]:
    return list((tmp_path / "state").rglob("*.json"))


# A row of schema_migrations that only a newer release would write.
FUTURE_ROW = (FUTURE, "from a newer release", "2026-11-28T00:00:00Z")


async def test_a_store_path_under_a_file_says_the_hook_could_not_open_its_store(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the store's folder would be\n")
    store = str(blocker / "escalations.db")
    log = hook_log(store, tmp_path)

    code, out, err = await hook_run(store, tmp_path)

    assert (code, out) == (0, "")  # no decision: the host goes on
    assert err == unopened(log)
    assert str(blocker) not in err
    assert "Errno" not in err
    assert "exists" not in err.lower()
    assert spool_files(tmp_path) == []  # nothing kept for a "later" that needs the setting fixed
    # The details are where the words say: the store's path and what opening it met.
    text = log.read_text(encoding="utf-8")
    assert f"store {store}: " in text
    assert "made no decision" in text


async def test_a_store_path_in_a_folder_that_refuses_writes_says_the_same(tmp_path: Path) -> None:
    folder = tmp_path / "read-only"
    folder.mkdir()
    store = str(folder / "escalations.db")
    log = hook_log(store, tmp_path)

    with read_only(folder):
        code, out, err = await hook_run(store, tmp_path)

    assert (code, out, err) == (0, "", unopened(log))
    assert str(folder) not in err
    assert "unable to open" not in err
    assert f"store {store}: unable to open database file" in log.read_text(encoding="utf-8")


async def read_only_store(tmp_path: Path) -> str:
    store = str(tmp_path / "escalations.db")
    await (await open_store(store)).close()
    return store


async def test_a_store_file_that_refuses_writes_says_so_in_words_and_only_them(tmp_path: Path) -> None:
    store = await read_only_store(tmp_path)
    log = hook_log(store, tmp_path)

    with read_only(Path(store)):
        code, out, err = await hook_run(store, tmp_path)

    # One line: neither the error's text nor the store's own warning of the refused write.
    assert (code, out, err) == (0, "", refused(log))
    assert store not in err
    assert "readonly database" not in err
    assert f"the store {store} is read-only" in log.read_text(encoding="utf-8")


async def test_a_relay_whose_store_refuses_writes_says_the_same(tmp_path: Path) -> None:
    store = await read_only_store(tmp_path)
    log = hook_log(store, tmp_path)

    with read_only(Path(store)), relaying(store, tmp_path):
        code, out, err = await hook_run(store, tmp_path, ESCALATION_HOOK_RELAY="require")

    assert (code, out, err) == (0, "", refused(log))
    assert store not in err
    assert f"the store {store} is read-only" in log.read_text(encoding="utf-8")


async def test_the_hook_route_says_its_store_refused_the_write_not_that_the_server_failed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = await read_only_store(tmp_path)
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {AGENT_TOKEN}"}

    with read_only(Path(store)), http_in_thread(tmp_path, "--db", store) as port:
        answer = httpx2.post(
            f"http://127.0.0.1:{port}/hooks/claude-code",
            content=json.dumps(report()).encode(),
            headers=headers,
            timeout=60,
        )

    assert (answer.status_code, answer.text) == (
        503,
        "the store refused to record the event (its file, folder or file system is read-only, "
        "or the disk is full), so nothing was recorded; the server's log says why; no decision\n",
    )
    assert store not in answer.text
    assert f"the store {store} is read-only" in caplog.text  # the details: the server's log


async def test_a_folder_or_a_file_that_is_no_store_says_the_same(tmp_path: Path) -> None:
    folder = tmp_path / "a-folder.db"
    folder.mkdir()
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is no SQLite database, just text long enough to be read\n" * 64)

    for store, driver in ((str(folder), "unable to open"), (str(garbage), "not a database")):
        log = hook_log(store, tmp_path)
        code, out, err = await hook_run(store, tmp_path)
        assert (code, out, err) == (0, "", unopened(log)), store
        assert driver not in err
        assert driver in log.read_text(encoding="utf-8")


async def test_a_sqlite_store_of_a_newer_schema_says_the_same(tmp_path: Path) -> None:
    store = str(tmp_path / "newer.db")

    async def create() -> None:
        await (await open_store(store)).close()

    await create()
    with sqlite3.connect(store) as conn:
        conn.execute("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)", FUTURE_ROW)
    log = hook_log(store, tmp_path)

    code, out, err = await hook_run(store, tmp_path)

    assert (code, out, err) == (0, "", unopened(log))
    assert "newer" not in err
    assert store not in err
    assert f"store {store} has schema version {FUTURE}" in log.read_text(encoding="utf-8")


async def test_without_a_log_the_words_name_the_command_that_says_why(tmp_path: Path) -> None:
    runtime = tmp_path / "runtime"
    shared = runtime / "mcp-server-escalation"
    shared.mkdir(parents=True)
    shared.chmod(0o755)  # others may enter it: the hook refuses the folder, so no log
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x\n")
    store = str(blocker / "escalations.db")

    code, out, err = await hook_run(store, tmp_path, XDG_RUNTIME_DIR=str(runtime))

    details = BOOK.render("hook_store_unlogged")
    assert (code, out) == (0, "")
    assert err == PREFIX + BOOK.render("hook_store_unopened", details=details) + "\n"
    assert str(blocker) not in err
    assert list(shared.iterdir()) == []


def assert_no_database_words(stderr: str, url: str) -> None:
    """Neither where the store is nor what the database said."""
    assert "postgresql://" not in stderr
    assert urlsplit(url).netloc.rsplit("@", maxsplit=1)[-1] not in stderr  # host:port
    assert PASSWORD not in stderr
    assert "FATAL" not in stderr


def with_password(url: str) -> str:
    """The URL with a password in it (the suite's server trusts its user: any password does)."""
    parts = urlsplit(url)
    return parts._replace(netloc=parts.netloc.replace("@", f":{PASSWORD}@", 1)).geturl()


async def test_a_postgresql_store_of_a_newer_schema_says_the_same_and_logs_the_url_without_its_password(
    tmp_path: Path, pg_server: pg.PgServer
) -> None:
    name = pg_server.create_database()
    try:
        url = with_password(pg_server.url(name))

        async def create() -> None:
            await (await open_store(url)).close()

        await create()
        with pg_server.connect(name) as conn:
            conn.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (%s, %s, %s)", FUTURE_ROW
            )
            conn.commit()
        log = hook_log(url, tmp_path)

        code, out, err = await hook_run(url, tmp_path)
    finally:
        pg_server.drop_database(name)

    assert (code, out, err) == (0, "", unopened(log))
    assert_no_database_words(err, url)
    assert name not in err
    text = log.read_text(encoding="utf-8")
    assert f"/{name} has PostgreSQL schema version {FUTURE}" in text
    assert PASSWORD not in text  # hidden in the log too


@pytest.mark.parametrize("what", ["database", "role"])
async def test_a_postgresql_database_or_login_that_does_not_exist_keeps_its_words_off_stderr(
    tmp_path: Path, pg_server: pg.PgServer, what: str
) -> None:
    parts = urlsplit(with_password(pg_server.url("postgres")))
    if what == "database":
        url = parts._replace(path="/no_such_database").geturl()
    else:
        url = parts._replace(netloc=parts.netloc.replace("esc:", "no_such_role:", 1)).geturl()
    log = hook_log(url, tmp_path)

    code, out, err = await hook_run(url, tmp_path)

    assert (code, out) == (0, "")
    assert_no_database_words(err, url)
    assert "does not exist" not in err
    assert str(log) in err  # the words say where the details are
    text = log.read_text(encoding="utf-8")
    assert f'{what} "no_such_' in text
    assert "does not exist" in text
    assert PASSWORD not in text
