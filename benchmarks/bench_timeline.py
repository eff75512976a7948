"""A task's timeline: what one page costs as the task's history grows.

Two tasks on one SQLite store: one with ``--short`` actions (the baseline), one with
``--long``. Each gets its history written through the store's own ``add_action`` (a failure,
a progress report and an edit check in turn, as agents record them). Then the first page and
the last page of each are read through the service the console and ``tasks timeline`` call,
``--reps`` times each, and the median time of each read is reported with its ratio to the
short task's first page. A page reads its 50 actions after a place by the index; counting
where the page stands (the actions before it and in all) reads the task's index entries.

    python benchmarks/bench_timeline.py --short 200 --long 20000 --reps 50
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import anyio

from mcp_server_escalation.services import tasks
from mcp_server_escalation.services.runtime import Runtime, open_runtime
from mcp_server_escalation.settings import Settings
from mcp_server_escalation.store import progress as progress_store
from mcp_server_escalation.store.sql import Conn

KINDS = (
    ("record_failure", {"failure_id": "F-1", "signal_type": "test_failure", "file": "src/a.py", "line": 3}),
    ("report_progress", {"step": "main", "outcome": "neutral", "files": ["src/a.py"], "note": "fix"}),
    ("check_edit", {"paths": ["src/a.py"], "allowed": True}),
)


async def fill(rt: Runtime, task_id: str, count: int) -> None:
    """A task with ``count`` actions."""
    await tasks.start_task(rt, title=task_id, task_id=task_id)

    def write(conn: Conn) -> None:
        task = tasks.load_task(conn, task_id)
        for n in range(count - 1):  # the start is the first action
            kind, detail = KINDS[n % len(KINDS)]
            progress_store.add_action(conn, task, kind, detail, rt.now())

    await rt.db.write(write)


async def timed(rt: Runtime, task_id: str, after: int, reps: int) -> float:
    """Median seconds of one page read after ``after``."""
    took = []
    for _ in range(reps):
        began = time.perf_counter()
        page = await tasks.timeline(rt, task_id, after)
        took.append(time.perf_counter() - began)
        assert page.entries
    return statistics.median(took)


async def main(short: int, long: int, reps: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        settings = Settings(db_path=str(Path(folder) / "bench.db"), project_root=folder)
        async with open_runtime(settings) as rt:
            results = {}
            for name, count in (("short", short), ("long", long)):
                await fill(rt, name, count)
                first = await tasks.timeline(rt, name)
                last_after = first.entries[0].action_id - 1 + count - tasks.TIMELINE_PAGE
                results[(name, "first")] = await timed(rt, name, 0, reps)
                results[(name, "last")] = await timed(rt, name, last_after, reps)
    baseline = results[("short", "first")]
    print(f"| task | page | median read | ratio to the {short}-action task's first page |")
    print("| --- | --- | ---: | ---: |")
    for (name, page), seconds in results.items():
        count = short if name == "short" else long
        print(f"| {count:,} actions | {page} | {seconds * 1000:.2f} ms | {seconds / baseline:.2f} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--short", type=int, default=200, help="actions of the baseline task (default: 200)")
    parser.add_argument("--long", type=int, default=20000, help="actions of the long task (default: 20000)")
    parser.add_argument("--reps", type=int, default=50, help="reads of each page (default: 50)")
    args = parser.parse_args()
    anyio.run(main, args.short, args.long, args.reps)
