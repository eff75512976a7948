"""A throw-away PostgreSQL server: ``initdb`` and ``pg_ctl`` into a temp folder, on a free
port of 127.0.0.1, stopped (and its folder removed) by its owner or, should the owner die
first, by a watcher process.

The tests start theirs through the ``pg_server`` fixture (``tests/conftest.py``), the
benchmarks through ``running``; by hand (the URL is printed; Ctrl-C stops it):

    python scripts/pg_local.py                  # postgresql://esc@127.0.0.1:PORT/postgres
    python scripts/pg_local.py --database store # ... and an empty database named store

The binaries come from Debian's ``postgresql`` package (``.ci/run`` installs it when
missing): ``ESCALATION_TEST_PG_BINDIR`` when set, else ``pg_config --bindir``, else the
newest ``/usr/lib/postgresql/*/bin``. ``initdb`` refuses to run as root, so a root session
runs the server as the ``postgres`` user in a folder that user owns.

This module knows nothing of pytest and nothing of the server package.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import psycopg

BINDIR_VARIABLE = "ESCALATION_TEST_PG_BINDIR"
DEBIAN_ROOTS = Path("/usr/lib/postgresql")
USER = "esc"  # the superuser initdb creates; trust authentication, no password
# A throw-away server: durability costs time and buys nothing here.
SPEED_OVER_SAFETY = ("-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off")
# A server that tests crash: a commit it acknowledged must survive a killed postmaster (its
# WAL written before the answer; the machine itself does not crash, so no fsync).
COMMITS_SURVIVE_A_KILL = ("-c fsync=off", "-c synchronous_commit=on", "-c full_page_writes=off")
START_ATTEMPTS = 3  # another process may take the free port between the probe and the start


class PostgresMissing(RuntimeError):
    """No PostgreSQL binaries on this machine; the message says how to get them."""


def find_bindir(environ: Mapping[str, str] | None = None, roots: Path = DEBIAN_ROOTS) -> Path | None:
    """The folder holding ``initdb``, ``pg_ctl`` and ``postgres``, or None."""
    env = os.environ if environ is None else environ
    if env.get(BINDIR_VARIABLE):
        chosen = Path(env[BINDIR_VARIABLE])
        return chosen if _has_binaries(chosen) else None
    pg_config = shutil.which("pg_config", path=env.get("PATH"))
    if pg_config:
        found = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, check=False)
        if found.returncode == 0 and _has_binaries(Path(found.stdout.strip())):
            return Path(found.stdout.strip())
    # Debian installs each major version beside the others; the newest wins.
    versions = sorted(roots.glob("*/bin"), key=lambda p: _version_key(p.parent.name), reverse=True)
    return next((bindir for bindir in versions if _has_binaries(bindir)), None)


def _version_key(name: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", name)) or (0,)


def _has_binaries(bindir: Path) -> bool:
    return all((bindir / name).is_file() for name in ("initdb", "pg_ctl", "postgres"))


def missing_message(environ: Mapping[str, str] | None = None) -> str:
    """Why no server could start and what to do; CI is told it skipped its own install."""
    env = os.environ if environ is None else environ
    where = f"pg_config --bindir or {DEBIAN_ROOTS}/*/bin"
    if env.get(BINDIR_VARIABLE):
        where = f"{BINDIR_VARIABLE}={env[BINDIR_VARIABLE]}"
    message = (
        f"PostgreSQL's initdb, pg_ctl and postgres were not found ({where}). The PostgreSQL tests "
        "start a real server of their own: install Debian's `postgresql` package "
        "(`sudo apt-get install postgresql`; no system cluster needs to run)."
    )
    if env.get("CI"):
        message += " In CI, .ci/run installs it before the tests: check that step."
    return message


@dataclass
class PgServer:
    """One running server: its folder (data directory, socket, log), port and databases."""

    bindir: Path
    root: Path
    port: int
    # The database a new test database copies; a session may replace it with one that
    # already holds the migrated schema (``make_template``), so tests skip migrating.
    template: str = "template0"
    _made: int = field(default=0, repr=False)
    # Server settings (``-c name=value``), kept for ``start_again``.
    settings: tuple[str, ...] = SPEED_OVER_SAFETY
    # Stops the server should its owner die without stopping it (see ``watch``).
    watcher: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def log(self) -> Path:
        return self.root / "log"

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://{USER}@127.0.0.1:{self.port}/{dbname}"

    def connect(self, dbname: str = "postgres") -> psycopg.Connection[tuple[object, ...]]:
        """An autocommit connection (CREATE/DROP DATABASE run outside a transaction)."""
        # Imported here: starting and stopping a server need no driver.
        import psycopg

        return psycopg.connect(self.url(dbname), autocommit=True)

    def _admin(self, statement: str, *names: str) -> None:
        """``statement`` with ``names`` quoted as identifiers into its ``{}``."""
        from psycopg import sql

        with self.connect() as conn:
            conn.execute(sql.SQL(statement).format(*(sql.Identifier(name) for name in names)))

    def create_database(self, name: str | None = None, template: str | None = None) -> str:
        """A new database copied from ``template`` (the server's template by default)."""
        if name is None:
            self._made += 1
            name = f"t_{self._made}"
        self._admin("CREATE DATABASE {} TEMPLATE {}", name, template or self.template)
        return name

    def drop_database(self, name: str) -> None:
        """Gone, even when a test left a connection (or a server process) on it."""
        self._admin("DROP DATABASE IF EXISTS {} WITH (FORCE)", name)

    def make_template(self, name: str, prepare: Callable[[str], None], *, default: bool = True) -> None:
        """``prepare(url)`` fills a new database once; every later test database copies it
        (with ``default``; else only those created with ``template=name``).

        ``prepare`` closes what it opened: PostgreSQL copies no database that has a session.
        """
        self.create_database(name, template="template0")
        prepare(self.url(name))
        self._admin("ALTER DATABASE {} IS_TEMPLATE true", name)
        if default:
            self.template = name

    def postmaster_pid(self) -> int | None:
        """The server's pid while it runs (from its lock file), else None."""
        try:
            return int((self.data_dir / "postmaster.pid").read_text(encoding="ascii").split()[0])
        except (FileNotFoundError, IndexError, ValueError):
            return None


def _as_owner(command: list[str]) -> list[str]:
    """``initdb`` and the server refuse root: as root, run them as the ``postgres`` user."""
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


def start_again(server: PgServer) -> None:
    """Start a stopped (or killed) server again, on its port and data directory."""
    options = " ".join(
        (f"-p {server.port}", f"-k {server.root}", "-c listen_addresses=127.0.0.1", *server.settings)
    )
    _run([str(server.bindir / "pg_ctl"), "-D", str(server.data_dir), "-o", options, "-l", str(server.log),
          "-w", "-t", "120", "start"], cwd=server.root)  # fmt: skip


def stop_fast(server: PgServer) -> None:
    """``pg_ctl stop -m fast``: sessions cut, the server down until ``start_again``."""
    pid = server.postmaster_pid()
    _run([str(server.bindir / "pg_ctl"), "-D", str(server.data_dir), "-m", "fast", "-w", "stop"],
         cwd=server.root)  # fmt: skip
    if pid is not None:
        _wait_exit(pid, timeout_s=30)


def kill_postmaster(server: PgServer) -> None:
    """``kill -9`` of the postmaster, as a crash would; its backends follow it out."""
    pid = server.postmaster_pid()
    _kill(pid)
    # The backends notice their parent is gone and exit; a new postmaster refuses to start
    # while any of them still holds the shared memory.
    deadline = time.monotonic() + 30
    while backend_pids(server) and time.monotonic() < deadline:
        time.sleep(0.05)
    with contextlib.suppress(FileNotFoundError):
        (server.data_dir / "postmaster.pid").unlink()


def backend_pids(server: PgServer) -> list[int]:
    """Every live process of the server: the postmaster and its children all work in its data
    directory (a backend's command line is only its title)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ours = (entry / "exe").readlink().name == "postgres" and (
                entry / "cwd"
            ).readlink() == server.data_dir
        except OSError:
            continue
        if ours and running_pid(int(entry.name)):
            found.append(int(entry.name))
    return found


def signal_all(server: PgServer, signum: int) -> None:
    """``signum`` to the postmaster and every backend (SIGSTOP stalls the server whole)."""
    for pid in backend_pids(server):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)


def _run(command: list[str], cwd: Path) -> None:
    done = subprocess.run(_as_owner(command), cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout}{done.stderr}")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start(bindir: Path, owner: int | None = None, settings: tuple[str, ...] = SPEED_OVER_SAFETY) -> PgServer:
    """initdb into a new temp folder and start a server on a free port (about a second).

    The server is stopped and its folder removed when process ``owner`` (this one by
    default) ends without calling ``stop``.
    """
    # /tmp itself, not pytest's 0700 base: the postgres user must reach the folder, and a
    # Unix socket path has about 100 bytes.
    root = Path(tempfile.mkdtemp(prefix="esc-pg-"))
    try:
        if os.geteuid() == 0:
            shutil.chown(root, user="postgres", group="postgres")
        _run(
            [str(bindir / "initdb"), "-D", str(root / "data"), "-A", "trust", "-U", USER,
             "--no-sync", "-E", "UTF8", "--locale=C"],
            cwd=root,
        )  # fmt: skip
        server = _start_on_free_port(bindir, root, settings)
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    server.watcher = watch(server, os.getpid() if owner is None else owner)
    return server


# Polls its owner once a second; when the owner is gone, stops the server and removes its
# folder. Arguments: owner pid, folder, then the stop command.
WATCHER = (
    'owner=$1; root=$2; shift 2; while kill -0 "$owner" 2>/dev/null; do sleep 1; done; "$@"; rm -rf "$root"'
)


def watch(server: PgServer, owner: int) -> subprocess.Popen[bytes]:
    """A watcher process that stops the server once ``owner`` has died.

    A session killed outright (SIGKILL, an out-of-memory kill, a CI timeout) runs no
    teardown; the daemonised postmaster would run on. The watcher has a session of its
    own, so a signal to the test run's process group leaves it to do its work.
    """
    stop_command = _as_owner(
        [str(server.bindir / "pg_ctl"), "-D", str(server.data_dir), "-m", "immediate", "-w", "stop"]
    )
    return subprocess.Popen(
        ["sh", "-c", WATCHER, "pg-watcher", str(owner), str(server.root), *stop_command],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def _start_on_free_port(bindir: Path, root: Path, settings: tuple[str, ...]) -> PgServer:
    for attempt in range(START_ATTEMPTS):
        server = PgServer(bindir=bindir, root=root, port=free_port(), settings=settings)
        try:
            start_again(server)
        except RuntimeError:
            _kill(server.postmaster_pid())  # a half-started server must not outlive the attempt
            if attempt == START_ATTEMPTS - 1:
                raise RuntimeError(f"PostgreSQL did not start; its log:\n{_tail(server.log)}") from None
            continue
        return server
    raise AssertionError("unreachable")


def _tail(log: Path, lines: int = 30) -> str:
    try:
        return "\n".join(log.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return "(no log)"


def stop(server: PgServer) -> None:
    """Stop the server (fast: running sessions are cut) and remove its folder.

    ``pg_ctl stop`` returns once the lock file is gone, a moment before the postmaster has
    exited: this waits for the exit itself, and kills the postmaster when the stop failed
    (its backends notice their parent is gone and exit), so no postgres process outlives
    the call.
    """
    if server.watcher is not None:  # its owner is alive: this stop is the one that counts
        server.watcher.kill()
        server.watcher.wait()
    pid = server.postmaster_pid()
    try:
        _run([str(server.bindir / "pg_ctl"), "-D", str(server.data_dir), "-m", "fast", "-w", "-t", "60",
              "stop"], cwd=server.root)  # fmt: skip
    except RuntimeError:
        _kill(pid)
    finally:
        if pid is not None and not _wait_exit(pid, timeout_s=30):
            _kill(pid)
        shutil.rmtree(server.root, ignore_errors=True)


def _kill(pid: int | None) -> None:
    if pid is None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    _wait_exit(pid, timeout_s=10)


def _wait_exit(pid: int, timeout_s: float) -> bool:
    """True once ``pid`` has exited (within ``timeout_s``)."""
    deadline = time.monotonic() + timeout_s
    while running_pid(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def running_pid(pid: int) -> bool:
    """Whether ``pid`` is a live process; an exited one its parent has not reaped yet (a
    zombie: the daemonised postmaster's parent is init) is not."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except FileNotFoundError:
        return False
    except OSError:  # no /proc: ask the kernel whether the pid exists
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


@contextlib.contextmanager
def running(bindir: Path | None = None, settings: tuple[str, ...] = SPEED_OVER_SAFETY) -> Iterator[PgServer]:
    """A started server, stopped on the way out whatever happened inside."""
    found = bindir or find_bindir()
    if found is None:
        raise PostgresMissing(missing_message())
    server = start(found, settings=settings)
    try:
        yield server
    finally:
        stop(server)


def main() -> int:
    parser = argparse.ArgumentParser(description="Run a throw-away PostgreSQL server until Ctrl-C.")
    parser.add_argument("--database", help="also create this (empty) database and print its URL")
    args = parser.parse_args()
    # SIGTERM stops the server as Ctrl-C does: the `finally` of `running` runs either way.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        with running() as server:
            if args.database:
                server.create_database(args.database, template="template0")
            print(server.url(args.database or "postgres"), flush=True)
            print(f"data and log in {server.root}; Ctrl-C stops it", file=sys.stderr, flush=True)
            signal.pause()
    except PostgresMissing as missing:
        print(missing, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
