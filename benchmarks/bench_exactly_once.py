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
from session_kills import (
    AGAIN,
    MAYBE_RECORDED,
    NO_TRIGGERS,
    NOTHING_RECORDED,
    call_text,
    stored,
    terminate_in_a_loop,
)


@dataclass
class Answers:
    recorded: list[str] = field(default_factory=list)
    not_recorded: list[str] = field(default_factory=list)
    maybe: list[str] = field(default_factory=list)
    bare: list[str] = field(default_factory=list)

    def answered(self) -> int:
        return len(self.recorded) + len(self.not_recorded) + len(self.maybe) + len(self.bare)


async def _call(client: Client, name: str, n: int) -> tuple[bool, str]:
    text = call_text(name, n)
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
    text = call_text(name, n)
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


async def _run(args: argparse.Namespace, server: pg_local.PgServer) -> dict[str, Any]:
    dbname = server.create_database("bench", template="template0")
    url = server.url(dbname)
    store = await open_store(url)  # migrated before the agents start
    await store.close()
    answers = Answers()
    start = Start(args.agents)
    stop = threading.Event()
    killed: list[int] = []
    loop = (server, dbname, args.kill_every, stop, killed)
    killer = threading.Thread(target=terminate_in_a_loop, args=loop)
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
    held = stored(url)
    return {
        "writes_answered": answers.answered(),
        "recorded": len(answers.recorded),
        "not_recorded": len(answers.not_recorded),
        "maybe_recorded": len(answers.maybe),
        "doubled": sum(1 for count in held.values() if count > 1),
        "lost": sum(1 for text in answers.recorded if text not in held),
        "false_not_recorded": sum(1 for text in answers.not_recorded if text in held),
        "bare_errors": len(answers.bare),
        "maybe_and_stored": sum(1 for text in answers.maybe if text in held),
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
