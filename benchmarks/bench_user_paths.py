"""Two hot paths driven as users drive them, each against the no-op tool in the same run.

``bench_guidance.py`` seeds its store in bulk and ``bench_stdio.py`` raises every threshold
so that nothing fires; users get neither. Here, over stdio through the SDK's client against
the installed console script:

- ``get_guidance`` on a store whose 5,000 failures were each recorded by ``record_failure``
  (50 tasks of one project, varied errors, thresholds raised so all of them are kept);
  ``scope="project"``, the step's latest error as the query (target within 2x the no-op);
- ``record_failure`` on a task that a repeated error has paused: the stuck agent reports
  the same error again and again and is told to wait (target within 1.5x the no-op).

Each round times a block of each path and a block of no-op calls, in a shuffled order (the
machine is shared: interleaving keeps slow moments from landing on one side); the figures
are the medians over every call.

    python benchmarks/bench_user_paths.py [--records 5000] [--rounds 20] [--block 20]
    python benchmarks/bench_user_paths.py --only record_failure_paused --rounds 8
    python benchmarks/bench_user_paths.py --only record_failure_paused --against /tmp/base.sh

``--against SCRIPT`` serves another install (an earlier revision) beside this one, on a
store of its own holding only the stuck task (compare with ``--only record_failure_paused``,
where this one's store holds no more), and times its paused ``record_failure`` in the same
shuffled rounds: on a loaded machine two runs a minute apart differ by more than a change
gains, one run does not.
    python benchmarks/bench_user_paths.py --script /tmp/base-venv/bin/mcp-server-escalation
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from bench_stdio import NO_ESCALATION, NOOP_SERVER, SERVER_SCRIPT, record_failure_args

PROJECT = "/bench/users"
TASKS = 50
TARGETS = {"get_guidance": 2.0, "record_failure_paused": 1.5}
STUCK_ERROR = "AssertionError: assert 41 == 42 in test_total"
AGAINST = "record_failure_paused_against"


async def _checked(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    if result.is_error or result.structured_content is None:
        raise SystemExit(f"{tool} failed: {result.content}")
    return result.structured_content


async def _record_one_by_one(client: Client, records: int) -> float:
    """``records`` failures through ``record_failure``, spread over ``TASKS`` tasks; seconds."""
    started = time.perf_counter()
    for n in range(TASKS):
        task = {"title": f"task {n}", "task_id": f"t{n}", "project": PROJECT, "thresholds": NO_ESCALATION}
        await _checked(client, "start_task", task)
    for i in range(records):
        await _checked(client, "record_failure", record_failure_args(f"t{i % TASKS}", i))
    return time.perf_counter() - started


async def _paused_task(client: Client) -> None:
    """A task the same error has paused (the default thresholds: three times pages a human)."""
    await _checked(client, "start_task", {"title": "stuck", "task_id": "stuck", "project": PROJECT})
    for _ in range(3):
        said = await _checked(client, "record_failure", {"task_id": "stuck", "message": STUCK_ERROR})
    if said.get("directive") != "pause":
        raise SystemExit(f"the repeated error did not pause the task: {said}")


async def _timed(block: int, call: Callable[[int], Awaitable[Any]], into: list[float], start: int) -> None:
    for i in range(block):
        t = time.perf_counter()
        await call(start + i)
        into.append(time.perf_counter() - t)


def _paused_call(client: Client) -> Callable[[int], Awaitable[None]]:
    async def paused(_i: int) -> None:
        said = await _checked(client, "record_failure", {"task_id": "stuck", "message": STUCK_ERROR})
        if said.get("directive") != "pause":
            raise SystemExit(f"the stuck task is no longer paused: {said}")

    return paused


async def run(
    script: str,
    records: int,
    rounds: int,
    block: int,
    seed: int,
    kept: str | None,
    only: list[str],
    against: str | None = None,
) -> dict[str, Any]:
    rng = random.Random(seed)  # noqa: S311 (an order of blocks, not security)
    with tempfile.TemporaryDirectory(prefix="esc-users-") as tmp:
        db = Path(kept or tmp) / "users.db"
        seeded = db.exists()
        ours = StdioServerParameters(command=script, args=["--db", str(db), "serve"])
        noop_server = StdioServerParameters(command=sys.executable, args=[str(NOOP_SERVER)])
        async with AsyncExitStack() as stack:
            client = await stack.enter_async_context(Client(ours))
            noop = await stack.enter_async_context(Client(noop_server))
            extra: dict[str, Callable[[int], Awaitable[None]]] = {}
            if against is not None:
                theirs = StdioServerParameters(command=against, args=["--db", f"{tmp}/against.db", "serve"])
                other = await stack.enter_async_context(Client(theirs))
                await _paused_task(other)
                extra[AGAINST] = _paused_call(other)
            seeding = 0.0
            if not seeded and "get_guidance" in only:
                seeding = await _record_one_by_one(client, records)
            if not seeded:
                await _paused_task(client)

            async def guidance(i: int) -> None:
                query = record_failure_args(f"t{i % TASKS}", i % records)["message"]
                arguments = {"task_id": f"t{i % TASKS}", "scope": "project", "query": query}
                await _checked(client, "get_guidance", arguments)

            async def nothing(_i: int) -> None:
                await noop.call_tool("noop", {})

            every = {"get_guidance": guidance, "record_failure_paused": _paused_call(client)}
            paths = {**{name: every[name] for name in only}, **extra, "noop": nothing}
            times: dict[str, list[float]] = {name: [] for name in paths}
            for call in paths.values():  # warm-up, not measured
                await _timed(block, call, [], 0)
            for r in range(rounds):
                order = list(paths)
                rng.shuffle(order)
                for name in order:
                    await _timed(block, paths[name], times[name], (r + 1) * block)
    medians = {name: statistics.median(values) * 1000 for name, values in times.items()}
    return {
        "records": records if "get_guidance" in only else 0,
        "seeding_s": round(seeding, 1),
        "calls_each": rounds * block,
        "median_ms": {name: round(ms, 3) for name, ms in medians.items()},
        "ratio": {name: round(medians[name] / medians["noop"], 2) for name in [*only, *extra]},
        "load_average": round(os.getloadavg()[0], 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--script", default=str(SERVER_SCRIPT), help="the console script to measure")
    parser.add_argument("--records", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--block", type=int, default=20)
    parser.add_argument("--seed", type=int, default=20261128)
    parser.add_argument("--store", help="a folder to keep the store in, and to reuse it from (profiling)")
    parser.add_argument("--json", help="write the figures to this file ('-' for stdout)")
    parser.add_argument(
        "--only", choices=list(TARGETS), action="append", help="measure this path (repeatable; default: both)"
    )
    parser.add_argument("--against", help="another install's console script: its paused record_failure too")
    args = parser.parse_args()
    only = args.only or list(TARGETS)
    figures = anyio.run(
        run, args.script, args.records, args.rounds, args.block, args.seed, args.store, only, args.against
    )
    medians = figures["median_ms"]
    if "get_guidance" in only:
        print(f"{figures['records']:,} failures recorded one by one in {figures['seeding_s']} s")
    for name in only:
        target = TARGETS[name]
        print(
            f"{name:<22} median {medians[name]:.2f} ms vs no-op {medians['noop']:.2f} ms"
            f" = {figures['ratio'][name]}x  (target <= {target}x)"
        )
    if args.against:
        theirs, ours = medians[AGAINST], medians.get("record_failure_paused", float("nan"))
        print(
            f"{'... on --against':<22} median {theirs:.2f} ms = {figures['ratio'][AGAINST]}x;"
            f" this one - that one = {ours - theirs:+.2f} ms"
        )
    print(f"{figures['calls_each']} calls each, interleaved; load average {figures['load_average']}")
    if args.json:
        text = json.dumps(figures, indent=2)
        print(text) if args.json == "-" else Path(args.json).write_text(text + "\n", encoding="utf-8")
    return 0 if all(figures["ratio"][name] <= TARGETS[name] for name in only) else 1


if __name__ == "__main__":
    raise SystemExit(main())
