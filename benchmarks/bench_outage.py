"""Four servers on one PostgreSQL database through each kind of outage: how soon they serve
again, how many calls failed, the longest call, and whether any write was lost or doubled.

For each outage the script starts ``--servers`` (default 4) ``serve --transport http``
processes of the installed script on one new database of a PostgreSQL server it starts
(``scripts/pg_local.py``, commits durable against a killed postmaster), and one agent per
server (the real SDK client over streamable HTTP) recording a distinct failure after another
(``record_failure``, one call at a time, as an agent would). After two seconds of writes the
database goes through one outage:

- ``kill -9``: the postmaster killed, started again after ``--down`` seconds (default 5);
- ``fast stop``: ``pg_ctl stop -m fast``, started again after ``--down`` seconds;
- ``stall``: the postmaster and every backend stopped (SIGSTOP) for ``--stall`` seconds
  (default 12: past the default operation bound of 8 s), then continued;
- ``terminate``: ``pg_terminate_backend`` of every client session.

The agents go on for ``--after`` seconds (default 3) once the database is back; no server is
restarted. Then the script reads the database: every acknowledged write must be there once,
and nothing else but writes whose outcome the server said was unknown.

Figures per outage: recovery (the latest, over the servers, of the first call answered after
the database was back, in seconds), calls answered and failed, the longest call, writes lost
and doubled, and outcomes unknown. It exits with status 1 when a write is lost or doubled,
a server does not serve again within ``--recovery-bound`` seconds (default 5), or a call
took longer than ``--call-bound`` (default 15: a host's patience for a hook).

    python benchmarks/bench_outage.py
    python benchmarks/bench_outage.py --only kill-9 --down 20 --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

import pg_local as pg  # found through the path entry above

SCRIPT = str(Path(sys.executable).parent / "mcp-server-escalation")
TOKEN = "agent-" + "b" * 40
KINDS = ("kill-9", "fast-stop", "stall", "terminate")


@dataclass
class Seen:
    """What one agent saw."""

    acknowledged: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    failed: int = 0
    longest: float = 0.0
    succeeded_at: list[float] = field(default_factory=list)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _start_server(url: str, folder: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ESCALATION_")}
    env["ESCALATION_AGENT_TOKEN"] = TOKEN
    env["ESCALATION_OPERATOR_TOKEN"] = "operator-" + "c" * 40
    env["ESCALATION_HOOK_RELAY"] = "off"
    log = (folder / f"serve-{port}.log").open("wb")
    process = subprocess.Popen(
        [SCRIPT, "serve", "--transport", "http", "--port", str(port), "--db", url],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return process, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            if process.poll() is not None:
                break
            time.sleep(0.05)
    process.kill()
    raise RuntimeError(f"server did not start: {(folder / f'serve-{port}.log').read_text()}")


async def _agent(url: str, name: str, seen: Seen, done: Callable[[], bool]) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        await client.call_tool("start_task", {"title": name, "task_id": name, "agent_id": name})
        n = 0
        while not done():
            n += 1
            message = f"RuntimeError: outage probe {name} call {n}"
            started = time.monotonic()
            result = await client.call_tool("record_failure", {"task_id": name, "message": message})
            seen.longest = max(seen.longest, time.monotonic() - started)
            if result.is_error:
                seen.failed += 1
                text = str(getattr(result.content[0], "text", ""))
                if "may or may not have been recorded" in text:
                    seen.unknown.append(message)
            else:
                seen.acknowledged.append(message)
                seen.succeeded_at.append(time.monotonic())
            await anyio.sleep(0.01)


def _outage(kind: str, server: pg.PgServer, args: argparse.Namespace) -> Callable[[], Awaitable[float]]:
    async def kill_or_stop() -> float:
        down = pg.kill_postmaster if kind == "kill-9" else pg.stop_fast
        await anyio.to_thread.run_sync(down, server)
        await anyio.sleep(args.down)
        await anyio.to_thread.run_sync(pg.start_again, server)
        return time.monotonic()

    async def stall() -> float:
        pg.signal_all(server, signal.SIGSTOP)
        try:
            await anyio.sleep(args.stall)
        finally:
            pg.signal_all(server, signal.SIGCONT)
        return time.monotonic()

    async def terminate() -> float:
        def cut() -> None:
            with server.connect() as admin:
                admin.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                    " WHERE pid <> pg_backend_pid() AND backend_type = 'client backend'"
                )

        await anyio.to_thread.run_sync(cut)
        return time.monotonic()

    return {"stall": stall, "terminate": terminate}.get(kind, kill_or_stop)


async def _run_outage(
    kind: str, server: pg.PgServer, url: str, folder: Path, args: argparse.Namespace
) -> dict[str, Any]:
    processes = [_start_server(url, folder) for _ in range(args.servers)]
    seen = {f"agent{i}": Seen() for i in range(args.servers)}
    back: list[float] = []
    outage = _outage(kind, server, args)

    def done() -> bool:
        return bool(back) and time.monotonic() > back[0] + args.after

    async def run() -> None:
        await anyio.sleep(2.0)
        back.append(await outage())

    try:
        with anyio.fail_after(args.down + args.stall + args.after + 120):
            async with anyio.create_task_group() as tg:
                for (name, agent_seen), (_, mcp_url) in zip(seen.items(), processes, strict=True):
                    tg.start_soon(_agent, mcp_url, name, agent_seen, done)
                tg.start_soon(run)
        alive = all(process.poll() is None for process, _ in processes)
    finally:
        for process, _ in processes:
            process.terminate()
            process.wait(timeout=30)
    return _figures(kind, url, seen, back[0], alive=alive)


def _figures(kind: str, url: str, seen: dict[str, Seen], back: float, *, alive: bool) -> dict[str, Any]:
    import psycopg

    with psycopg.connect(url) as conn:
        recorded = [str(row[0]) for row in conn.execute("SELECT message FROM failure_occurrences")]
    acknowledged = {m for s in seen.values() for m in s.acknowledged}
    unknown = {m for s in seen.values() for m in s.unknown}
    firsts = [min((at for at in s.succeeded_at if at > back), default=float("inf")) for s in seen.values()]
    return {
        "outage": kind,
        "recovery_seconds": round(max(firsts) - back, 3),
        "calls_answered": sum(len(s.acknowledged) for s in seen.values()),
        "calls_failed": sum(s.failed for s in seen.values()),
        "longest_call_seconds": round(max(s.longest for s in seen.values()), 3),
        "writes_lost": len(acknowledged - set(recorded)),
        "writes_doubled": len(recorded) - len(set(recorded)),
        "writes_kept_unannounced": len(set(recorded) - acknowledged - unknown),
        "outcomes_unknown": len(unknown),
        "servers_alive": alive,
    }


async def main_async(args: argparse.Namespace) -> list[dict[str, Any]]:
    folder = Path(tempfile.mkdtemp(prefix="bench-outage-"))
    results = []
    with pg.running(settings=pg.COMMITS_SURVIVE_A_KILL) as server:
        for n, kind in enumerate(args.only or KINDS):
            name = server.create_database(f"outage_{n}", template="template0")
            figures = await _run_outage(kind, server, server.url(name), folder, args)
            results.append(figures)
            print(_row(figures), flush=True)
    return results


def _row(f: dict[str, Any]) -> str:
    cells = (
        f["outage"],
        f"{f['recovery_seconds']:.2f}",
        f["calls_answered"],
        f["calls_failed"],
        f"{f['longest_call_seconds']:.2f}",
        f["writes_lost"],
        f["writes_doubled"],
        f["outcomes_unknown"],
    )
    return "| " + " | ".join(str(cell) for cell in cells) + " |"


def _missed(results: list[dict[str, Any]], args: argparse.Namespace) -> list[str]:
    missed = []
    for f in results:
        if f["writes_lost"] or f["writes_doubled"] or f["writes_kept_unannounced"]:
            missed.append(f"{f['outage']}: writes lost, doubled or kept unannounced")
        if f["recovery_seconds"] > args.recovery_bound:
            missed.append(f"{f['outage']}: served again after {f['recovery_seconds']} s")
        if f["longest_call_seconds"] > args.call_bound:
            missed.append(f"{f['outage']}: a call took {f['longest_call_seconds']} s")
        if not f["servers_alive"]:
            missed.append(f"{f['outage']}: a server exited")
    return missed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--servers", type=int, default=4)
    parser.add_argument("--only", action="append", choices=KINDS, help="this outage only (repeatable)")
    parser.add_argument("--down", type=float, default=5.0, help="seconds the database is down")
    parser.add_argument("--stall", type=float, default=12.0, help="seconds the database is stopped")
    parser.add_argument("--after", type=float, default=3.0, help="seconds of writes after it is back")
    parser.add_argument("--recovery-bound", type=float, default=5.0)
    parser.add_argument("--call-bound", type=float, default=15.0)
    parser.add_argument("--json", help="write the results as JSON to this file (- for stdout)")
    args = parser.parse_args()
    print("| outage | recovery s | answered | failed | longest call s | lost | doubled | unknown |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    results = anyio.run(main_async, args)
    if args.json:
        text = json.dumps(results, indent=2)
        if args.json == "-":
            print(text)
        else:
            Path(args.json).write_text(text + "\n", encoding="utf-8")
    missed = _missed(results, args)
    for line in missed:
        print("MISSED:", line, file=sys.stderr)
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
