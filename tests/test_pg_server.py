"""The session's own PostgreSQL (scripts/pg_local.py, the ``pg_server`` and ``pg_url``
fixtures): a real server, a database per test, nothing left running after the session, and
a loud failure, never a skip, where the binaries are missing."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest

import pg_local as pg

TESTS = Path(__file__).resolve().parent
SCRIPTS = TESTS.parent / "scripts"

# A session of its own: it records where its server lived, then fails, so the stop on the
# way out is the one a failing session gets.
LIFECYCLE_TEST = """
import json, os, sys

def test_uses_the_server(pg_server, pg_url):
    record = {
        "root": str(pg_server.root),
        "port": pg_server.port,
        "pid": pg_server.postmaster_pid(),
        "url": pg_url,
    }
    with open(os.environ["RECORD_TO"], "w") as out:
        json.dump(record, out)
    assert False, "this session fails on purpose"
"""

# A session killed outright runs no teardown at all.
KILLED_SESSION = """
import json, os, signal

def test_dies_holding_the_server(pg_server):
    record = {"root": str(pg_server.root), "port": pg_server.port, "pid": pg_server.postmaster_pid()}
    with open(os.environ["RECORD_TO"], "w") as out:
        json.dump(record, out)
    os.kill(os.getpid(), signal.SIGKILL)
"""

USES_POSTGRES = """
def test_needs_postgres(pg_url):
    pass
"""


@pytest.fixture
def inner_temp() -> Iterator[Path]:
    """A short temp folder for an inner session's own temp folders (its server's, its relay
    sockets'), removed once the test has checked them: a session killed outright cannot remove
    what it made, and it must not stay in /tmp after every run of the suite."""
    folder = Path(tempfile.mkdtemp(prefix="esc-inner-"))  # short: a socket path has ~100 bytes
    folder.chmod(0o755)  # run as root, the server runs as postgres, which must reach its folder
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def session(
    tmp_path: Path, inner_temp: Path, test_source: str, **env: str
) -> subprocess.CompletedProcess[str]:
    """``python -m pytest`` on one file with this suite's conftest as a plugin, in one process."""
    (tmp_path / "test_inner.py").write_text(test_source, encoding="utf-8")
    environ = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(TESTS), str(SCRIPTS), os.environ.get("PYTHONPATH", "")]),
        "TMPDIR": str(inner_temp),
    }
    environ.update(env)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "conftest", "-p", "no:cacheprovider", "-n", "0",
         "-o", "addopts=", "-q", "test_inner.py"],
        cwd=tmp_path, env=environ, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


def port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def processes_mentioning(text: str) -> list[str]:
    """Command lines of running processes that contain ``text``."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            args = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # the process ended while we looked
            continue
        if text in args:
            found.append(args)
    return found


def test_the_fixture_gives_a_real_postgresql_15_or_newer(pg_url: str) -> None:
    with psycopg.connect(pg_url) as conn:
        version = conn.execute("SELECT version()").fetchone()
        number = conn.execute("SHOW server_version_num").fetchone()
        database = conn.execute("SELECT current_database()").fetchone()
    assert version is not None
    assert version[0].startswith("PostgreSQL ")
    assert number is not None
    assert int(number[0]) >= 150000
    assert database is not None
    assert pg_url.endswith(f"/{database[0]}")
    assert pg_url.startswith("postgresql://esc@127.0.0.1:")


SEEN: list[str] = []


@pytest.mark.parametrize("turn", [1, 2])
def test_each_test_gets_an_empty_database_of_its_own(turn: int, pg_url: str, pg_server: pg.PgServer) -> None:
    # Both turns look for the table the other made first, so the order they run in is moot.
    with psycopg.connect(pg_url) as conn:
        tables = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
        ).fetchall()
        assert tables == []
        conn.execute("CREATE TABLE made_here (turn integer)")
        conn.execute("INSERT INTO made_here VALUES (%s)", (turn,))
    assert pg_url not in SEEN
    with pg_server.connect() as admin:
        databases = {row[0] for row in admin.execute("SELECT datname FROM pg_database").fetchall()}
    # The earlier turn's database was dropped when that test ended.
    assert not {url.rsplit("/", 1)[1] for url in SEEN} & databases
    SEEN.append(pg_url)


def test_a_template_with_a_schema_is_copied_into_each_new_database(pg_server: pg.PgServer) -> None:
    def migrate(url: str) -> None:
        with psycopg.connect(url) as conn:
            conn.execute("CREATE TABLE tasks (task_id text PRIMARY KEY)")

    saved = pg_server.template
    try:
        pg_server.make_template("migrated_probe", migrate)
        name = pg_server.create_database()
        with psycopg.connect(pg_server.url(name)) as conn:
            assert conn.execute("SELECT count(*) FROM tasks").fetchone() == (0,)
        pg_server.drop_database(name)
    finally:
        pg_server.template = saved
        with pg_server.connect() as admin:
            admin.execute("ALTER DATABASE migrated_probe IS_TEMPLATE false")
        pg_server.drop_database("migrated_probe")


def test_no_postgres_process_outlives_a_failing_session(tmp_path: Path, inner_temp: Path) -> None:
    record = tmp_path / "record.json"
    done = session(tmp_path, inner_temp, LIFECYCLE_TEST, RECORD_TO=str(record))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 failed" in done.stdout, done.stdout
    seen = json.loads(record.read_text(encoding="utf-8"))
    assert seen["pid"] is not None
    assert seen["url"].startswith(f"postgresql://esc@127.0.0.1:{seen['port']}/")
    assert not Path(seen["root"]).exists()  # data directory, socket and log removed
    assert not pg.running_pid(seen["pid"])
    assert processes_mentioning(seen["root"]) == []
    assert not port_open(seen["port"])


def wait_until(condition: Callable[[], bool], limit_s: float = 60) -> bool:
    """Whether ``condition`` came true within ``limit_s`` (a bound, not the measure)."""
    deadline = time.monotonic() + limit_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_a_session_killed_outright_leaves_no_server_behind(tmp_path: Path, inner_temp: Path) -> None:
    record = tmp_path / "record.json"
    done = session(tmp_path, inner_temp, KILLED_SESSION, RECORD_TO=str(record))
    assert done.returncode == -signal.SIGKILL, done.stdout + done.stderr
    seen = json.loads(record.read_text(encoding="utf-8"))
    assert seen["pid"] is not None
    # The watcher notices within a second or so; the bound only keeps a failure from hanging.
    assert wait_until(lambda: not pg.running_pid(seen["pid"])), processes_mentioning(seen["root"])
    assert wait_until(lambda: not Path(seen["root"]).exists())
    # The watcher's own shell and its rm end just after the folder is gone: waited for too.
    assert wait_until(lambda: processes_mentioning(seen["root"]) == []), processes_mentioning(seen["root"])
    assert not port_open(seen["port"])


def test_missing_binaries_fail_the_tests_that_need_them_never_skip(tmp_path: Path, inner_temp: Path) -> None:
    empty = tmp_path / "no-postgres"
    empty.mkdir()
    done = session(tmp_path, inner_temp, USES_POSTGRES, ESCALATION_TEST_PG_BINDIR=str(empty), CI="")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 error" in done.stdout, done.stdout
    assert "skipped" not in done.stdout
    assert "install Debian's `postgresql` package" in done.stdout
    assert "In CI, .ci/run installs it" not in done.stdout


def test_in_ci_the_missing_binaries_message_says_that_ci_installs_them(tmp_path: Path) -> None:
    said = pg.missing_message({"ESCALATION_TEST_PG_BINDIR": str(tmp_path), "CI": "1"})
    assert "install Debian's `postgresql` package" in said
    assert "In CI, .ci/run installs it" in said


def fake_bindir(path: Path) -> Path:
    path.mkdir(parents=True)
    for name in ("initdb", "pg_ctl", "postgres"):
        (path / name).write_text("#!/bin/sh\n", encoding="utf-8")
    return path


def test_the_newest_debian_version_is_chosen_when_pg_config_is_absent(tmp_path: Path) -> None:
    roots = tmp_path / "postgresql"
    fake_bindir(roots / "9.6" / "bin")
    newest = fake_bindir(roots / "16" / "bin")
    fake_bindir(roots / "15" / "bin")
    (roots / "17" / "bin").mkdir(parents=True)  # a client-only install: no server binaries
    assert pg.find_bindir({"PATH": str(tmp_path / "nothing")}, roots=roots) == newest
    assert pg.find_bindir({"PATH": str(tmp_path / "nothing")}, roots=tmp_path / "none") is None


def test_the_script_serves_a_database_by_hand_until_told_to_stop() -> None:
    with subprocess.Popen(
        [sys.executable, str(SCRIPTS / "pg_local.py"), "--database", "by_hand"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as script:
        try:
            assert script.stdout is not None
            url = script.stdout.readline().strip()  # printed once the server accepts connections
            assert url.startswith("postgresql://esc@127.0.0.1:"), url
            assert url.endswith("/by_hand")
            with psycopg.connect(url) as conn:
                assert conn.execute("SELECT current_database()").fetchone() == ("by_hand",)
                root = conn.execute("SHOW data_directory").fetchone()
            assert root is not None
            pid = int((Path(root[0]) / "postmaster.pid").read_text(encoding="ascii").split()[0])
            script.send_signal(signal.SIGTERM)
            assert script.wait(timeout=120) == 0
        finally:
            if script.poll() is None:
                script.kill()
    assert not pg.running_pid(pid)
    assert not Path(root[0]).exists()
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    assert not port_open(port)
