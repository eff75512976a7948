"""Tool-call latency over stdio: ``mcp-server-escalation`` against a no-op ``MCPServer``.

The target (benchmarks/README.md): a tool call over stdio (``record_failure``,
``report_progress``, ``check_edit``, ``get_feedback``) must have a median within 1.5x of a
no-op tool served by the same SDK.

Both servers are spawned with this interpreter (the installed console script and
``benchmarks/noop_server.py``) and driven by the real SDK ``Client`` over stdio, in legacy
mode (the ``initialize`` handshake real hosts use) and optionally in auto mode. After a
warm-up, the calls run in rounds: each round runs a block of every tool (the no-op
included) in a rotated order, so drift on the machine (thermal, other load) hits all tools
alike and cancels out of the ratios. The task is started with very large thresholds, so no
escalation ever pauses it, and every call carries different arguments (messages, files,
test counts), as an agent's would.

``get_feedback`` is benchmarked when the server lists it, and reported as skipped otherwise.

``--backend postgresql`` puts the store in a database of a PostgreSQL server the run starts
(``scripts/pg_local.py``); ``--backend both`` serves one task from a SQLite file and one
from PostgreSQL, their calls interleaved in the same rounds, and prints each tool's
PostgreSQL latency as a multiple of its SQLite latency.

The target's baseline is the no-op server as the SDK serves it (``mcp.run()``). Our server
serves stdio on the event loop instead of the SDK's threaded transport (``adapters/stdio/transport.py``),
which is part of what it gains; so every run also serves the no-op that way (``noop/loop``)
and prints each tool's ratio to it as well (``x same transport``): that column is what our
tools themselves add. ``--transport threads`` runs our server on the SDK's transport.

    python benchmarks/bench_stdio.py                 # 300 calls per tool, legacy mode
    python benchmarks/bench_stdio.py --mode both --calls 500 --json out.json
    python benchmarks/bench_stdio.py --backend both    # PostgreSQL against SQLite, same run
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import AsyncExitStack, ExitStack
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from postgres_support import backend_installed, postgres_server

HERE = Path(__file__).resolve().parent
NOOP_SERVER = HERE / "noop_server.py"
SERVER_SCRIPT = Path(sys.executable).parent / "mcp-server-escalation"
TARGET_RATIO = 1.5
TOOLS = ("record_failure", "report_progress", "check_edit", "get_feedback")
LOOP_BASELINE = "noop/loop"  # the no-op on our stdio transport (not the target's baseline)
BASELINES = ("noop", LOOP_BASELINE)
BACKEND_SUFFIX = {"sqlite": "", "postgresql": "/pg"}  # a tool's name in the table, by store

# Large enough that no trigger fires during a run (the limits allow up to 1,000,000).
NO_ESCALATION = {
    "same_error_repeated": 1_000_000,
    "total_verification_attempts": 1_000_000,
    "no_file_changes_after_attempts": 1_000_000,
    "no_test_improvement_after": 1_000_000,
    "files_modified_exceeds": 1_000_000,
    "spec_deviation_detected": False,
    "stagnation_patience": 1_000_000,
    "max_escalation_cycles": 1000,
}

# Realistic, varied failures; none matches a blocker pattern (missing module, permission,
# HTTP 5xx, timeouts), so none escalates at once.
FAILURE_TEMPLATES = (
    ("AssertionError", "AssertionError: assert {a} == {b} in test_{name}"),
    ("TypeError", "TypeError: unsupported operand type(s) for +: 'int' and 'str' (in {name}, call {i})"),
    ("KeyError", "KeyError: 'field_{k}' while building the {name} payload"),
    ("ValueError", "ValueError: invalid literal for int() with base 10: 'x{i}'"),
    ("AssertionError", "FAILED tests/test_{name}.py::test_case_{k} - assert {a} == {b}"),
    ("AttributeError", "AttributeError: 'NoneType' object has no attribute 'item_{k}'"),
)
NAMES = ("parser", "lexer", "render", "store", "config", "cache", "router")
FILES = tuple(f"src/pkg/{name}/mod_{k}.py" for name in NAMES for k in range(6))


def record_failure_args(task_id: str, i: int) -> dict[str, Any]:
    error_type, template = FAILURE_TEMPLATES[i % len(FAILURE_TEMPLATES)]
    name = NAMES[i % len(NAMES)]
    k = i % 11
    return {
        "task_id": task_id,
        "message": template.format(a=i, b=i + 1, name=name, k=k, i=i),
        "error_type": error_type,
        "file": FILES[i % len(FILES)],
        "line": 10 + (i * 7) % 400,
        "attempted_action": f"changed the {name} handling of case {k} (attempt {i})",
        "observed_outcome": "the same test still fails" if i % 2 else "a different assertion fails",
    }


def report_progress_args(task_id: str, i: int) -> dict[str, Any]:
    files = [FILES[(i + j) % len(FILES)] for j in range(i % 3)]
    args: dict[str, Any] = {
        "task_id": task_id,
        "files_modified": files,
        "outcome": ("neutral", "failure", "success")[i % 3],
        "note": f"attempt {i}: adjusted {NAMES[i % len(NAMES)]} and re-ran the suite",
    }
    if i % 2 == 0:
        args["tests_passed"] = 100 + (i * 13) % 50
        args["tests_failed"] = (i * 7) % 9
    return args


def check_edit_args(task_id: str, i: int) -> dict[str, Any]:
    return {"task_id": task_id, "paths": [FILES[(i * 5 + j) % len(FILES)] for j in range(1 + i % 3)]}


def get_feedback_args(task_id: str, _i: int) -> dict[str, Any]:
    return {"task_id": task_id, "step": "main"}


ARGS: dict[str, Callable[[str, int], dict[str, Any]]] = {
    "record_failure": record_failure_args,
    "report_progress": report_progress_args,
    "check_edit": check_edit_args,
    "get_feedback": get_feedback_args,
}


class BenchError(RuntimeError):
    """A call failed or escalated: the numbers would not mean what they claim."""


async def timed_calls(
    client: Client, tool: str, make_args: Callable[[int], dict[str, Any]], start: int, count: int
) -> tuple[list[float], int]:
    """``count`` sequential calls; their latencies in ms and how many carried an escalation."""
    samples: list[float] = []
    escalated = 0
    for i in range(start, start + count):
        args = make_args(i)
        t0 = time.perf_counter()
        result = await client.call_tool(tool, args)
        samples.append((time.perf_counter() - t0) * 1000.0)
        if result.is_error:
            text = " ".join(getattr(c, "text", "") for c in result.content)
            raise BenchError(f"{tool} call {i} failed: {text[:500]}")
        content = result.structured_content or {}
        if content.get("escalation"):
            escalated += 1
    return samples, escalated


def summarise(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p99_index = max(0, math.ceil(0.99 * len(ordered)) - 1)
    return {
        "n": len(ordered),
        "median_ms": statistics.median(ordered),
        "mean_ms": statistics.fmean(ordered),
        "p99_ms": ordered[p99_index],
        "min_ms": ordered[0],
        "max_ms": ordered[-1],
    }


async def started_server(
    stack: AsyncExitStack, mode: str, db: str, transport: str, project: Path
) -> tuple[Client, str, float]:
    """An escalation server on ``db`` with a task started: its client, task id, connect time."""
    params = StdioServerParameters(
        command=str(SERVER_SCRIPT), args=["--db", db], env={"ESCALATION_STDIO": transport}
    )
    t0 = time.perf_counter()
    esc = await stack.enter_async_context(Client(params, mode=mode))  # type: ignore[arg-type]
    connect_s = time.perf_counter() - t0
    started = await esc.call_tool(
        "start_task",
        {
            "title": f"benchmark task ({mode})",
            "specification": "Make the parser accept every documented input.",
            "project": str(project),
            "thresholds": NO_ESCALATION,
        },
    )
    if started.is_error or not started.structured_content:
        raise BenchError(f"start_task failed: {started.content}")
    return esc, started.structured_content["task_id"], connect_s


async def run_mode(
    mode: str,
    calls: int,
    warmup: int,
    rounds: int,
    workdir: Path,
    transport: str = "loop",
    stores: dict[str, str] | None = None,
) -> dict[str, Any]:
    """``stores``: backend -> ``--db`` (default: one new SQLite file); a tool on PostgreSQL
    is reported as ``tool/pg``, interleaved with the others in the same rounds."""
    stores = stores or {"sqlite": str(workdir / f"bench-{mode}.db")}
    project = workdir / "project"
    project.mkdir(exist_ok=True)
    noop_params = StdioServerParameters(command=sys.executable, args=[str(NOOP_SERVER)])
    noop_loop_params = StdioServerParameters(
        command=sys.executable, args=[str(NOOP_SERVER), "--loop-transport"]
    )
    async with AsyncExitStack() as stack:
        servers = {}
        for backend, db in stores.items():
            servers[backend] = await started_server(stack, mode, db, transport, project)
        t0 = time.perf_counter()
        noop = await stack.enter_async_context(Client(noop_params, mode=mode))  # type: ignore[arg-type]
        noop_connect = time.perf_counter() - t0
        noop_loop = await stack.enter_async_context(Client(noop_loop_params, mode=mode))  # type: ignore[arg-type]

        any_server = next(iter(servers.values()))[0]
        served = {tool.name for tool in (await any_server.list_tools()).tools}
        tools = [tool for tool in TOOLS if tool in served]
        skipped = [tool for tool in TOOLS if tool not in served]

        jobs: dict[str, tuple[Client, str, Callable[[int], dict[str, Any]]]] = {
            "noop": (noop, "noop", lambda i: {"text": f"call {i}"}),
            LOOP_BASELINE: (noop_loop, "noop", lambda i: {"text": f"call {i}"}),
        }
        for backend, (esc, task_id, _) in servers.items():
            for tool in tools:
                make = ARGS[tool]
                jobs[tool + BACKEND_SUFFIX[backend]] = (esc, tool, lambda i, t=task_id, m=make: m(t, i))

        # Warm-up: first calls build validators, fill SQLite's page cache, JIT nothing.
        counters = dict.fromkeys(jobs, 0)
        for name, (client, tool, make) in jobs.items():
            await timed_calls(client, tool, make, 0, warmup)
            counters[name] = warmup

        samples: dict[str, list[float]] = {name: [] for name in jobs}
        escalations = dict.fromkeys(jobs, 0)
        order = list(jobs)
        per_round = [calls // rounds + (1 if r < calls % rounds else 0) for r in range(rounds)]
        for r, count in enumerate(per_round):
            shift = r % len(order)
            for name in order[shift:] + order[:shift]:
                client, tool, make = jobs[name]
                got, escalated = await timed_calls(client, tool, make, counters[name], count)
                counters[name] += count
                samples[name].extend(got)
                escalations[name] += escalated

    stats = {name: summarise(values) for name, values in samples.items()}
    base = stats["noop"]["median_ms"]
    base_p99 = stats["noop"]["p99_ms"]
    same_transport = stats[LOOP_BASELINE]["median_ms"]
    for name, entry in stats.items():
        entry["ratio_median"] = entry["median_ms"] / base
        entry["ratio_p99"] = entry["p99_ms"] / base_p99
        entry["ratio_median_same_transport"] = entry["median_ms"] / same_transport
        entry["escalations"] = escalations[name]
        entry["within_target"] = name in BASELINES or entry["ratio_median"] <= TARGET_RATIO
        on_sqlite = stats.get(name.removesuffix(BACKEND_SUFFIX["postgresql"]))
        if name.endswith(BACKEND_SUFFIX["postgresql"]) and on_sqlite:
            entry["ratio_median_to_sqlite"] = entry["median_ms"] / on_sqlite["median_ms"]
            entry["ratio_p99_to_sqlite"] = entry["p99_ms"] / on_sqlite["p99_ms"]
    return {
        "mode": mode,
        "transport": transport,
        "calls": calls,
        "warmup": warmup,
        "rounds": rounds,
        "backends": list(stores),
        "connect_s": {
            **{f"escalation{BACKEND_SUFFIX[b]}": connect_s for b, (_, _, connect_s) in servers.items()},
            "noop": noop_connect,
        },
        "tools": stats,
        "skipped": dict.fromkeys(skipped, "not served by this build"),
    }


def print_table(result: dict[str, Any]) -> None:
    print(
        f"\nmode={result['mode']}  calls={result['calls']}/tool  warmup={result['warmup']}  "
        f"rounds={result['rounds']}  transport={result['transport']}  connect: "
        + ", ".join(f"{name} {seconds:.2f}s" for name, seconds in result["connect_s"].items())
    )
    header = (
        f"{'tool':<19} {'median ms':>10} {'p99 ms':>9} {'mean ms':>9} "
        f"{'x noop (med)':>13} {'x noop (p99)':>13} {'x same transport':>17}  target"
    )
    print(header)
    print("-" * len(header))
    for name, s in result["tools"].items():
        if name == "noop":
            verdict = "baseline"
        elif name == LOOP_BASELINE:
            verdict = "(the no-op on our transport)"
        else:
            verdict = f"<= {TARGET_RATIO}x {'ok' if s['within_target'] else 'OVER'}"
        print(
            f"{name:<19} {s['median_ms']:>10.2f} {s['p99_ms']:>9.2f} {s['mean_ms']:>9.2f} "
            f"{s['ratio_median']:>12.2f}x {s['ratio_p99']:>12.2f}x "
            f"{s['ratio_median_same_transport']:>16.2f}x  {verdict}"
        )
        if s["escalations"]:
            print(f"  warning: {s['escalations']} {name} results carried an escalation")
    for tool, why in result["skipped"].items():
        print(f"{tool:<19} skipped: {why}")
    compared = {name: s for name, s in result["tools"].items() if "ratio_median_to_sqlite" in s}
    if compared:
        print(
            "PostgreSQL against SQLite, same run: "
            + ", ".join(
                f"{name} {s['ratio_median_to_sqlite']:.2f}x median, {s['ratio_p99_to_sqlite']:.2f}x p99"
                for name, s in compared.items()
            )
        )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=300, help="measured calls per tool (default 300)")
    parser.add_argument("--warmup", type=int, default=30, help="unmeasured calls per tool first (default 30)")
    parser.add_argument("--rounds", type=int, default=10, help="interleaved rounds (default 10)")
    parser.add_argument("--mode", choices=["legacy", "auto", "both"], default="legacy")
    parser.add_argument(
        "--transport",
        choices=["loop", "threads"],
        default="loop",
        help="our server's stdio transport (ESCALATION_STDIO; default loop, as served)",
    )
    parser.add_argument(
        "--backend",
        choices=["sqlite", "postgresql", "both"],
        default="sqlite",
        help="the store: a SQLite file (default), a database on a PostgreSQL server this run "
        "starts, or one server on each, their calls interleaved (tools on PostgreSQL read tool/pg)",
    )
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON ('-' for stdout)")
    args = parser.parse_args()
    json_out = sys.stdout
    if args.json == "-":
        sys.stdout = sys.stderr  # the tables go to stderr, so stdout carries only the JSON
    if not SERVER_SCRIPT.exists():
        parser.error(f"{SERVER_SCRIPT} not found: install the package into this interpreter's environment")
    backends = ["sqlite", "postgresql"] if args.backend == "both" else [args.backend]
    if "postgresql" in backends and not backend_installed():
        parser.error("the installed mcp-server-escalation has no PostgreSQL backend")
    rounds = max(1, min(args.rounds, args.calls))
    modes = ["legacy", "auto"] if args.mode == "both" else [args.mode]

    results = []
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="esc-bench-")))
        server = stack.enter_context(postgres_server()) if "postgresql" in backends else None
        for mode in modes:
            stores = {}
            for backend in backends:
                if server is None or backend == "sqlite":
                    stores[backend] = str(tmp / f"bench-{mode}.db")
                else:
                    stores[backend] = server.url(server.create_database(f"bench_{mode}"))
            result = anyio.run(run_mode, mode, args.calls, args.warmup, rounds, tmp, args.transport, stores)
            results.append(result)
            print_table(result)
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    if load:
        print(f"\nload average {load[0]:.2f} (on 2 cores anything above ~1 inflates every figure)")
    report = {
        "benchmark": "stdio tool calls",
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "target_ratio": TARGET_RATIO,
        "load_average": load,
        "results": results,
    }
    if args.json == "-":
        json_out.write(json.dumps(report, indent=2) + "\n")
    elif args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    failed = [(r["mode"], name) for r in results for name, s in r["tools"].items() if not s["within_target"]]
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
