"""A scoped token's list of escalations and its stats: what they cost next to an unscoped
token's as the store grows.

A scoped token's ``list_escalations`` (and ``escalation://pending``) keeps only the tasks its
scope admits, with the one check every refusal uses (``Scope.admits``): it reads the id, task
and project of every escalation of the status, then the page of the kept ones. One SQLite
store with ``--tasks`` tasks, one pending escalation each, a tenth of them inside the scope;
the median of ``--reps`` lists of 20 is reported for each, with its ratio to the unscoped list.
The stats (the console's Stats page) are timed the same way, each escalation announced to two
notifiers (one delivered, one failing): a scoped token's count its scope's tasks only.

    python benchmarks/bench_scoped_list.py --tasks 2000 --reps 30
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

import anyio

from mcp_server_escalation.rules.bounds.token_scope import Scope
from mcp_server_escalation.services import escalation_lists, escalation_raising, reports, tasks
from mcp_server_escalation.services.runtime import Runtime, open_runtime
from mcp_server_escalation.settings import Settings


async def timed(rt: Runtime, within: Scope | None, reps: int) -> float:
    """Median seconds of one list of 20 pending escalations."""
    took = []
    for _ in range(reps):
        began = time.perf_counter()
        listed = await escalation_lists.list_escalations(rt, status="pending", limit=20, within=within)
        took.append(time.perf_counter() - began)
        assert len(listed.escalations) == 20
    return statistics.median(took)


async def timed_stats(rt: Runtime, within: Scope | None, reps: int) -> float:
    """Median seconds of the stats."""
    took = []
    for _ in range(reps):
        began = time.perf_counter()
        await reports.stats(rt, within=within)
        took.append(time.perf_counter() - began)
    return statistics.median(took)


def announced(db_path: str) -> None:
    """Every escalation's announcement delivered by one notifier and failing on another."""
    with sqlite3.connect(db_path) as conn:
        for (outbox_id,) in conn.execute("SELECT outbox_id FROM notification_outbox").fetchall():
            conn.execute(
                "INSERT INTO notification_deliveries VALUES (?, 'command:a', 1, ?, NULL, ?, NULL, ?)",
                (outbox_id, "2026-11-28T00:00:00Z", "2026-11-28T00:00:01Z", "2026-11-28T00:00:01Z"),
            )
            conn.execute(
                "INSERT INTO notification_deliveries VALUES (?, 'webhook:b', 3, ?, NULL, NULL, '5xx', ?)",
                (outbox_id, "2026-11-28T00:00:00Z", f"2026-11-28T00:{outbox_id % 60:02d}:00Z"),
            )


async def main(count: int, reps: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        settings = Settings(db_path=str(Path(folder) / "bench.db"), project_root=folder)
        async with open_runtime(settings) as rt:
            for n in range(count):
                task_id = f"{'mine' if n % 10 == 0 else 'other'}-{n}"
                await tasks.start_task(rt, title=task_id, task_id=task_id)
                await escalation_raising.raise_escalation(rt, task_id=task_id, reason="Which database?")
            unscoped = await timed(rt, None, reps)
            scoped = await timed(rt, Scope(task_prefixes=("mine-",)), reps)
            announced(settings.db_path)
            stats_unscoped = await timed_stats(rt, None, reps)
            stats_scoped = await timed_stats(rt, Scope(task_prefixes=("mine-",)), reps)
    print(f"| {count:,} pending escalations | median | ratio to unscoped |")
    print("| --- | ---: | ---: |")
    print(f"| list of 20, unscoped token | {unscoped * 1000:.2f} ms | 1.00 |")
    print(
        f"| list of 20, scoped token (a tenth of the tasks) | {scoped * 1000:.2f} ms"
        f" | {scoped / unscoped:.2f} |"
    )
    print(f"| stats, unscoped token | {stats_unscoped * 1000:.2f} ms | 1.00 |")
    print(
        f"| stats, scoped token (a tenth of the tasks) | {stats_scoped * 1000:.2f} ms"
        f" | {stats_scoped / stats_unscoped:.2f} |"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=2000, help="tasks, one escalation each (default: 2000)")
    parser.add_argument("--reps", type=int, default=30, help="lists of each kind (default: 30)")
    args = parser.parse_args()
    anyio.run(main, args.tasks, args.reps)
