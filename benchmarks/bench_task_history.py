"""What ``get_task`` and ``get_feedback`` cost as one task's history grows.

One real server (the SDK's client in memory) on a SQLite file and on a PostgreSQL database
of a server the script starts (``scripts/pg_local.py``) records, on one task, a distinct
failure and a progress report with one new file and a test run after another. At each size
in ``--sizes`` (failures recorded so far) the store is copied as it stands (SQLite's backup
API; a PostgreSQL database made from it as a template, its statistics as they were). Then a
server on every copy answers, in ``--rounds`` rounds of shuffled blocks of ``--block`` calls
of each read on each copy, so a slow moment of the shared machine lands on every size
alike. It prints each read's median in milliseconds and its ratio to the first size's and
to ``--base``'s (the first size at which every list a result shows is full: 50 files, 50
test runs): a flat cost keeps the ratios near 1. ``--unvalidated`` times the calls without
the SDK client's check of each result against the tool's output schema: the client's own
cost, which grows with the lists a result shows (up to their bounds), not with the history.

    python benchmarks/bench_task_history.py
    python benchmarks/bench_task_history.py --sizes 0,500,2000 --backend postgresql --json out.json
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.session import ClientSession

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

import pg_local  # found through the path entry above
from mcp_server_escalation.adapters.composition.server import build_server
from mcp_server_escalation.settings import Settings

READS = ("get_task", "get_feedback")
NO_TRIGGERS = {
    "same_error_repeated": 1_000_000,
    "total_verification_attempts": 1_000_000,
    "no_file_changes_after_attempts": 1_000_000,
    "no_test_improvement_after": 1_000_000,
    "files_modified_exceeds": 1_000_000,
}
WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet")


def _words(n: int) -> str:
    """``n`` spelt in words: a failure's fingerprint drops numbers, and each is its own."""
    return " ".join(WORDS[int(d)] for d in str(n))


def _client(location: str) -> Client:
    settings = Settings(db_path=location, role="agent", project_root=str(Path.cwd()))
    return Client(build_server(settings))  # type: ignore[arg-type]


async def _grow(client: Client, done: int, size: int) -> None:
    for n in range(done, size):
        message = f"RuntimeError: history {_words(n)}"
        await client.call_tool("record_failure", {"task_id": "history", "message": message})
        progress = {"task_id": "history", "files_modified": [f"src/f{n}.py"], "tests_passed": n % 7 + 1}
        await client.call_tool("report_progress", progress)


async def _copies(location: str, sizes: list[int], copy: Any) -> list[str]:
    """The store grown to each size, a copy taken at each (``copy(location, size)`` makes one
    and says where it is)."""
    made, done = [], 0
    for size in sizes:
        async with _client(location) as client:
            if done == 0:
                start = {"title": "History", "task_id": "history", "thresholds": NO_TRIGGERS}
                await client.call_tool("start_task", start)
            await _grow(client, done, size)
        done = size
        made.append(copy(location, size))
    return made


async def _timed(
    clients: dict[int, Client], rounds: int, block: int, seed: int
) -> dict[int, dict[str, float]]:
    rng = random.Random(seed)  # noqa: S311 (an order of blocks, not security)
    took: dict[tuple[int, str], list[float]] = {(size, tool): [] for size in clients for tool in READS}
    for warm_up in (True, *([False] * rounds)):
        order = list(took)
        rng.shuffle(order)
        for size, tool in order:
            for _ in range(block):
                started = time.perf_counter()
                result = await clients[size].call_tool(tool, {"task_id": "history"})
                elapsed = time.perf_counter() - started
                assert not result.is_error, result.content
                if not warm_up:
                    took[(size, tool)].append(elapsed)
    return {size: {tool: statistics.median(took[(size, tool)]) * 1000 for tool in READS} for size in clients}


async def _measure(
    location: str, sizes: list[int], copy: Any, rounds: int, block: int, seed: int
) -> dict[int, dict[str, float]]:
    copies = await _copies(location, sizes, copy)
    async with AsyncExitStack() as stack:
        clients = {
            size: await stack.enter_async_context(_client(c)) for size, c in zip(sizes, copies, strict=True)
        }
        return await _timed(clients, rounds, block, seed)


def _rows(medians: dict[int, dict[str, float]], base: int) -> list[dict[str, Any]]:
    first = min(medians)
    rows = []
    for size in sorted(medians):
        row: dict[str, Any] = {"failures": size}
        for tool in READS:
            row[f"{tool}_ms"] = round(medians[size][tool], 2)
            row[f"{tool}_ratio"] = round(medians[size][tool] / medians[first][tool], 2)
            if base in medians:
                row[f"{tool}_ratio_to_base"] = round(medians[size][tool] / medians[base][tool], 2)
        rows.append(row)
    return rows


def _sqlite_copy(folder: Path) -> Any:
    def copy(location: str, size: int) -> str:
        target = str(folder / f"history-{size}.db")
        source, into = sqlite3.connect(location), sqlite3.connect(target)
        try:
            source.backup(into)
        finally:
            source.close()
            into.close()
        return target

    return copy


def _pg_copy(server: pg_local.PgServer) -> Any:
    def copy(location: str, size: int) -> str:
        return server.url(server.create_database(f"history_{size}", template=location.rsplit("/", 1)[1]))

    return copy


async def _unchecked(_session: ClientSession, _name: str, _result: Any) -> None:
    """No check of a result against its output schema: the server's part of a call alone."""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="0,500,1500,3000", help="failures recorded at each copy")
    parser.add_argument("--base", type=int, default=500, help="the size the second ratio is to")
    parser.add_argument("--rounds", type=int, default=10, help="rounds of blocks of each read on each copy")
    parser.add_argument("--block", type=int, default=5, help="calls in a block")
    parser.add_argument("--seed", type=int, default=20261207)
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument("--unvalidated", action="store_true", help="the client checks no result's schema")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.unvalidated:
        ClientSession.validate_tool_result = _unchecked  # type: ignore[method-assign]
    sizes = sorted({int(s) for s in args.sizes.split(",")})
    timing = (args.rounds, args.block, args.seed)
    figures: dict[str, list[dict[str, Any]]] = {}
    if args.backend in ("sqlite", "both"):
        with tempfile.TemporaryDirectory() as folder:
            location = str(Path(folder) / "history.db")
            medians = anyio.run(_measure, location, sizes, _sqlite_copy(Path(folder)), *timing)
            figures["sqlite"] = _rows(medians, args.base)
    if args.backend in ("postgresql", "both"):
        with pg_local.running() as server:
            url = server.url(server.create_database("history", template="template0"))
            medians = anyio.run(_measure, url, sizes, _pg_copy(server), *timing)
            figures["postgresql"] = _rows(medians, args.base)
    for backend, rows in figures.items():
        print(backend)
        for row in rows:
            shown = []
            for tool in READS:
                to_base = row.get(f"{tool}_ratio_to_base")
                of_base = f", {to_base:.2f}x of {args.base}'s" if to_base is not None else ""
                shown.append(f"{tool} {row[f'{tool}_ms']:.2f} ms ({row[f'{tool}_ratio']:.2f}x{of_base})")
            print(f"  {row['failures']:>6} failures: " + "; ".join(shown))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
