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

``--cold RUNS`` measures start-up instead: spawn to an answered ``initialize`` (as
``bench_cold_start.py`` times it: wall time, and the server's CPU by then, which load on
the machine moves less), A, B and the no-op server in a shuffled order each run. ``--b``
names B's script too (default: this install's), so that two variants of one tree, each
launched by a script of its own, are compared alike:

    python benchmarks/bench_ab.py /tmp/without-the-trick.sh --b /tmp/with-it.sh --cold 40
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from bench_cold_start import INITIALIZE, cpu_seconds, noop_command
from bench_stdio import ARGS, NO_ESCALATION, NOOP_SERVER, SERVER_SCRIPT, TOOLS

BLOCK = 30
WARMUP = 60


def started(command: list[str]) -> tuple[float, float]:
    """Seconds from spawn to the ``initialize`` answer, and the server's CPU seconds by then.
    The server is then killed: its exit is no part of its start, and on a loaded machine
    waiting for it took longer than the start itself."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None
    assert proc.stdout is not None
    proc.stdin.write(INITIALIZE)
    proc.stdin.flush()
    line = proc.stdout.readline()
    elapsed = time.perf_counter() - t0
    cpu = cpu_seconds(proc.pid) or 0.0
    proc.kill()
    proc.communicate()
    if b'"result"' not in line:
        raise SystemExit(f"no initialize result from {command}: {line[:300]!r}")
    return elapsed, cpu


def cold(commands: dict[str, str], runs: int, seed: int) -> dict[str, tuple[float, float]]:
    """Per side, from spawn to an answered ``initialize``: the median wall time and the mean
    CPU time in ms (the kernel counts CPU in clock ticks, 10 ms each: a median would be one
    of a few values, a mean is not)."""
    shuffle = random.Random(seed)  # noqa: S311 (an order, not a secret)
    with tempfile.TemporaryDirectory(prefix="esc-ab-cold-") as tmp:
        launch = {side: [command, "--db", f"{tmp}/{side}.db"] for side, command in commands.items()}
        launch["noop"] = noop_command()
        for command in launch.values():  # warm-up: page cache, .pyc, the stores migrated
            started(command)
        samples: dict[str, list[tuple[float, float]]] = {side: [] for side in launch}
        for _ in range(runs):
            order = list(launch)
            shuffle.shuffle(order)
            for side in order:
                wall, cpu = started(launch[side])
                samples[side].append((wall * 1000, cpu * 1000))
    return {
        side: (statistics.median(w for w, _ in values), statistics.fmean(c for _, c in values))
        for side, values in samples.items()
    }


def print_cold(commands: dict[str, str], medians: dict[str, tuple[float, float]], runs: int) -> None:
    print(f"A = {commands['A']}\nB = {commands['B']}\n{runs} cold starts each, interleaved")
    noop_wall, noop_cpu = medians["noop"]
    for side in ("A", "B", "noop"):
        wall, cpu = medians[side]
        print(
            f"{side:<5} wall {wall:7.1f} ms ({wall / noop_wall:.2f}x)"
            f"  cpu {cpu:7.1f} ms ({cpu / noop_cpu:.2f}x)"
        )
    (a_wall, a_cpu), (b_wall, b_cpu) = medians["A"], medians["B"]
    print(f"B - A wall {b_wall - a_wall:+.1f} ms  cpu {b_cpu - a_cpu:+.1f} ms")


async def run(base: str, tools: list[str], rounds: int, seed: int, other: str) -> dict[str, Any]:
    """Medians in ms per (tool, side) and of the no-op."""
    with tempfile.TemporaryDirectory(prefix="esc-ab-") as tmp:
        commands = {"A": base, "B": other}
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
    parser.add_argument(
        "--b", default=str(SERVER_SCRIPT), help="console script of B (default: this install's)"
    )
    parser.add_argument("--cold", type=int, metavar="RUNS", help="measure RUNS cold starts of each instead")
    args = parser.parse_args()
    for script in (args.base, args.b):
        if not Path(script).exists():
            parser.error(f"{script}: no such console script")
    if args.cold:
        commands = {"A": args.base, "B": args.b}
        print_cold(commands, cold(commands, args.cold, args.seed), args.cold)
        return
    tools = [t for t in args.tools.split(",") if t]
    medians = anyio.run(run, args.base, tools, args.rounds, args.seed, args.b)
    noop = medians["noop/noop"]
    print(f"A = {args.base}\nB = {args.b}")
    print(f"no-op median {noop:.3f} ms, {args.rounds} rounds of {BLOCK} calls per tool and side")
    print(f"{'tool':<16} {'A':>7} {'B':>7}  {'B - A':>9}")
    for tool in tools:
        a, b = medians[f"{tool}/A"], medians[f"{tool}/B"]
        print(f"{tool:<16} {a / noop:>6.2f}x {b / noop:>6.2f}x  {b - a:>+7.3f} ms")


if __name__ == "__main__":
    main()
