"""A/B over stdio: another install of the server (A) against this one (B), in one run.

On a noisy machine two runs of ``bench_stdio.py`` a minute apart differ by more than most
changes gain, so "did this help?" is answered here: both servers and the no-op server run
side by side, the blocks of calls (every tool on A and on B, and the no-op) in a shuffled
order each round, and the difference of the medians, B - A, is printed next to each one's
ratio to the no-op. Calls and arguments are those of ``bench_stdio.py``.

A is the console script of another install, for example of an earlier revision:

    git worktree add /tmp/base HEAD~3 && python -m venv /tmp/base-venv
    /tmp/base-venv/bin/pip install /tmp/base
    python benchmarks/bench_ab.py /tmp/base-venv/bin/mcp-server-escalation --rounds 16
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from bench_stdio import ARGS, NO_ESCALATION, NOOP_SERVER, SERVER_SCRIPT, TOOLS

BLOCK = 30
WARMUP = 60


async def run(base: str, tools: list[str], rounds: int, seed: int) -> dict[str, Any]:
    """Medians in ms per (tool, side) and of the no-op."""
    with tempfile.TemporaryDirectory(prefix="esc-ab-") as tmp:
        commands = {"A": base, "B": str(SERVER_SCRIPT)}
        async with AsyncExitStack() as stack:
            clients = {
                side: await stack.enter_async_context(
                    Client(StdioServerParameters(command=command, args=["--db", f"{tmp}/{side}.db", "serve"]))
                )
                for side, command in commands.items()
            }
            noop = await stack.enter_async_context(
                Client(StdioServerParameters(command=sys.executable, args=[str(NOOP_SERVER)]))
            )
            tasks: dict[str, str] = {}
            for side, client in clients.items():
                started = await client.call_tool(
                    "start_task", {"title": "ab", "project": tmp, "thresholds": NO_ESCALATION}
                )
                if started.structured_content is None:
                    raise SystemExit(f"{side}: start_task failed: {started.content}")
                tasks[side] = started.structured_content["task_id"]
                for i in range(WARMUP):
                    for tool in tools:
                        await client.call_tool(tool, ARGS[tool](tasks[side], i))
            samples: dict[tuple[str, str], list[float]] = {}
            shuffle = random.Random(seed)  # noqa: S311 (an order, not a secret)
            for r in range(rounds):
                jobs = [(tool, side) for tool in tools for side in clients] + [("noop", "noop")]
                shuffle.shuffle(jobs)
                for tool, side in jobs:
                    client = noop if side == "noop" else clients[side]
                    for i in range(BLOCK):
                        n = WARMUP + r * BLOCK + i
                        args = {"text": f"call {n}"} if side == "noop" else ARGS[tool](tasks[side], n)
                        t0 = time.perf_counter()
                        result = await client.call_tool(tool, args)
                        samples.setdefault((tool, side), []).append((time.perf_counter() - t0) * 1000)
                        if result.is_error:
                            raise SystemExit(f"{tool} on {side} failed: {result.content}")
    return {f"{tool}/{side}": statistics.median(v) for (tool, side), v in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("base", help="console script of the other install (A)")
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--tools", default=",".join(TOOLS), help="comma-separated (default: all four)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if not Path(args.base).exists():
        parser.error(f"{args.base}: no such console script")
    tools = [t for t in args.tools.split(",") if t]
    medians = anyio.run(run, args.base, tools, args.rounds, args.seed)
    noop = medians["noop/noop"]
    print(f"A = {args.base}\nB = {SERVER_SCRIPT}")
    print(f"no-op median {noop:.3f} ms, {args.rounds} rounds of {BLOCK} calls per tool and side")
    print(f"{'tool':<16} {'A':>7} {'B':>7}  {'B - A':>9}")
    for tool in tools:
        a, b = medians[f"{tool}/A"], medians[f"{tool}/B"]
        print(f"{tool:<16} {a / noop:>6.2f}x {b / noop:>6.2f}x  {b - a:>+7.3f} ms")


if __name__ == "__main__":
    main()
