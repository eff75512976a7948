"""What ``get_task`` and ``get_feedback`` cost as one task's history grows.

One real server (the SDK's client in memory) on a SQLite file and on a PostgreSQL database
of a server the script starts (``scripts/pg_local.py``) records, on one task, a distinct
failure and a progress report with one new file and a test run after another. At each size
in ``--sizes`` (failures recorded so far) it times ``--calls`` calls of each read and prints
the median in milliseconds and its ratio to the first size's, measured in the same run: a
flat cost keeps the ratio near 1.

    python benchmarks/bench_task_history.py
    python benchmarks/bench_task_history.py --sizes 0,500,2000 --backend postgresql --json out.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

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


async def _median_ms(client: Client, tool: str, calls: int) -> float:
    took = []
    for _ in range(calls):
        started = time.perf_counter()
        result = await client.call_tool(tool, {"task_id": "history"})
        took.append(time.perf_counter() - started)
        assert not result.is_error, result.content
    return statistics.median(took) * 1000


async def _grow_and_time(location: str, sizes: list[int], calls: int) -> list[dict[str, Any]]:
    settings = Settings(db_path=location, role="agent", project_root=str(Path.cwd()))
    rows: list[dict[str, Any]] = []
    async with Client(build_server(settings)) as client:  # type: ignore[arg-type]
        await client.call_tool(
            "start_task", {"title": "History", "task_id": "history", "thresholds": NO_TRIGGERS}
        )
        done = 0
        for size in sizes:
            while done < size:
                message = f"RuntimeError: history {_words(done)}"
                await client.call_tool("record_failure", {"task_id": "history", "message": message})
                progress = {
                    "task_id": "history",
                    "files_modified": [f"src/f{done}.py"],
                    "tests_passed": done % 7 + 1,
                }
                await client.call_tool("report_progress", progress)
                done += 1
            row: dict[str, Any] = {"failures": size}
            for tool in READS:
                row[f"{tool}_ms"] = round(await _median_ms(client, tool, calls), 2)
            rows.append(row)
    for row in rows:
        for tool in READS:
            row[f"{tool}_ratio"] = round(row[f"{tool}_ms"] / rows[0][f"{tool}_ms"], 2)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="0,500,1500,3000", help="failures recorded at each measure")
    parser.add_argument("--calls", type=int, default=30, help="calls of each read per measure")
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    sizes = sorted({int(s) for s in args.sizes.split(",")})
    figures: dict[str, list[dict[str, Any]]] = {}
    if args.backend in ("sqlite", "both"):
        with tempfile.TemporaryDirectory() as folder:
            figures["sqlite"] = anyio.run(_grow_and_time, str(Path(folder) / "history.db"), sizes, args.calls)
    if args.backend in ("postgresql", "both"):
        with pg_local.running() as server:
            url = server.url(server.create_database("history", template="template0"))
            figures["postgresql"] = anyio.run(_grow_and_time, url, sizes, args.calls)
    for backend, rows in figures.items():
        print(backend)
        for row in rows:
            print(
                f"  {row['failures']:>6} failures: get_task {row['get_task_ms']:.2f} ms"
                f" ({row['get_task_ratio']:.2f}x), get_feedback {row['get_feedback_ms']:.2f} ms"
                f" ({row['get_feedback_ratio']:.2f}x)"
            )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
