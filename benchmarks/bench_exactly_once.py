"""Writes under a loop that terminates the database's sessions: how many are doubled, lost, or
answered falsely, over many thousands.

The script starts a PostgreSQL server of its own (``scripts/pg_local.py``; each commit
flushed and delayed by ``--commit-delay`` microseconds, as on a disk that syncs, so that a
session terminated while it commits is common) and ``--agents`` agents (default 8), each a
real server with its own connections and the real SDK client in memory, alternating
``record_failure`` and ``report_progress``, each call's text its own. Meanwhile another
connection terminates every session of the database every ``--kill-every`` seconds
(``pg_terminate_backend``). An agent makes a call again when it is told nothing was recorded
(up to three times, as the words ask). Once ``--writes`` calls (default 20,000) have been
answered, the script counts what the database holds against what each call was told.

Figures: calls answered recorded, not recorded (after three tries), and "may or may not have
been recorded"; writes stored twice (doubled), answered recorded and missing (lost), answered
not recorded and stored (false "not recorded"), bare internal errors; sessions terminated;
seconds. It exits with status 1 when any of the four is above 0.

    python benchmarks/bench_exactly_once.py
    python benchmarks/bench_exactly_once.py --writes 2000 --kill-every 0.1 --json out.json
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

import pg_local  # found through the path entry above
from mcp_server_escalation.adapters.composition.server import build_server
from mcp_server_escalation.settings import Settings
from mcp_server_escalation.store.backends import open_store

NOTHING_RECORDED = "Nothing of this call was recorded"
MAYBE_RECORDED = "it may or may not have been recorded"
AGAIN = 3
NO_TRIGGERS = {
    "same_error_repeated": 1_000_000,
    "total_verification_attempts": 1_000_000,
    "no_file_changes_after_attempts": 1_000_000,
    "no_test_improvement_after": 1_000_000,
    "files_modified_exceeds": 1_000_000,
}
WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet")


def _words(n: int) -> str:
    """``n`` spelt in words: a failure's fingerprint drops numbers, and each call is its own."""
    return " ".join(WORDS[int(d)] for d in str(n))


@dataclass
class Answers:
    recorded: list[str] = field(default_factory=list)
    not_recorded: list[str] = field(default_factory=list)
    maybe: list[str] = field(default_factory=list)
    bare: list[str] = field(default_factory=list)

    def answered(self) -> int:
        return len(self.recorded) + len(self.not_recorded) + len(self.maybe) + len(self.bare)


async def _call(client: Client, name: str, n: int) -> tuple[bool, str]:
    text = f"{name} call {_words(n)}"
    if n % 2:
        arguments: dict[str, Any] = {"task_id": name, "note": text, "tests_passed": n}
        result = await client.call_tool("report_progress", arguments)
    else:
        result = await client.call_tool(
            "record_failure", {"task_id": name, "message": f"RuntimeError: {text}"}
        )
    said = result.content[0].text if result.is_error else ""  # type: ignore[union-attr]
    return not result.is_error, said


async def _write(client: Client, name: str, n: int, answers: Answers) -> None:
    text = f"{name} call {_words(n)}"
    for _ in range(AGAIN):
        ok, said = await _call(client, name, n)
        if ok:
            answers.recorded.append(text)
            return
        if NOTHING_RECORDED in said:
            continue
        (answers.maybe if MAYBE_RECORDED in said else answers.bare).append(text)
        return
    answers.not_recorded.append(text)


@dataclass
class Start:
    """Every agent's task started (``ready``), then every agent writes at once (``go``)."""

    agents: int
    started: int = 0
    ready: anyio.Event = field(default_factory=anyio.Event)
    go: anyio.Event = field(default_factory=anyio.Event)


async def _agent(url: str, name: str, answers: Answers, writes: int, start: Start) -> None:
    settings = Settings(db_path=url, role="agent", project_root=str(Path.cwd()))
    async with Client(build_server(settings)) as client:  # type: ignore[arg-type]
        started = await client.call_tool(
            "start_task", {"title": f"Agent {name}", "task_id": name, "thresholds": NO_TRIGGERS}
        )
        assert not started.is_error, started.content
        start.started += 1
        if start.started == start.agents:
            start.ready.set()
        await start.go.wait()
        n = 0
        while answers.answered() < writes:
            await _write(client, name, n, answers)
            n += 1


def _stored(url: str) -> Counter[str]:
    import psycopg

    with psycopg.connect(url) as conn:
        failures = conn.execute("SELECT message FROM failure_occurrences").fetchall()
        notes = conn.execute("SELECT note FROM progress_reports WHERE note IS NOT NULL").fetchall()
    return Counter([str(m).removeprefix("RuntimeError: ") for (m,) in failures] + [str(n) for (n,) in notes])


def _terminate(
    server: pg_local.PgServer, dbname: str, every: float, stop: threading.Event, killed: list[int]
) -> None:
    with server.connect() as admin:
        while not stop.is_set():
            rows = admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = %s AND pid <> pg_backend_pid()",
                (dbname,),
            ).fetchall()
            killed.append(len(rows))
            stop.wait(every)


async def _run(args: argparse.Namespace, server: pg_local.PgServer) -> dict[str, Any]:
    dbname = server.create_database("bench", template="template0")
    url = server.url(dbname)
    store = await open_store(url)  # migrated before the agents start
    await store.close()
    answers = Answers()
    start = Start(args.agents)
    stop = threading.Event()
    killed: list[int] = []
    killer = threading.Thread(target=_terminate, args=(server, dbname, args.kill_every, stop, killed))
    began = time.monotonic()
    try:
        async with anyio.create_task_group() as tg:
            for i in range(args.agents):
                tg.start_soon(_agent, url, f"agent-{i}", answers, args.writes, start)
            await start.ready.wait()
            began = time.monotonic()
            killer.start()
            start.go.set()
    finally:
        stop.set()
        if killer.is_alive():
            killer.join()
    seconds = time.monotonic() - began
    stored = _stored(url)
    return {
        "writes_answered": answers.answered(),
        "recorded": len(answers.recorded),
        "not_recorded": len(answers.not_recorded),
        "maybe_recorded": len(answers.maybe),
        "doubled": sum(1 for count in stored.values() if count > 1),
        "lost": sum(1 for text in answers.recorded if text not in stored),
        "false_not_recorded": sum(1 for text in answers.not_recorded if text in stored),
        "bare_errors": len(answers.bare),
        "maybe_and_stored": sum(1 for text in answers.maybe if text in stored),
        "sessions_terminated": sum(killed),
        "seconds": round(seconds, 1),
        "kill_every_seconds": args.kill_every,
        "commit_delay_us": args.commit_delay,
        "agents": args.agents,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--writes", type=int, default=20_000)
    parser.add_argument("--agents", type=int, default=8)
    parser.add_argument("--kill-every", type=float, default=0.2, help="seconds between terminations")
    parser.add_argument("--commit-delay", type=int, default=5000, help="microseconds (commit_delay)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    settings = (
        "-c fsync=on",
        "-c synchronous_commit=on",
        "-c full_page_writes=off",
        f"-c commit_delay={args.commit_delay}",
        "-c commit_siblings=0",
    )
    with pg_local.running(settings=settings) as server:
        figures = anyio.run(_run, args, server)
    for key, value in figures.items():
        print(f"{key.replace('_', ' ')}: {value}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    wrong = ("doubled", "lost", "false_not_recorded", "bare_errors")
    return 1 if any(figures[key] for key in wrong) else 0


if __name__ == "__main__":
    sys.exit(main())
