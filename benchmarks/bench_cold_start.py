"""Cold start: spawn to an answered ``initialize``, ``mcp-server-escalation`` vs a no-op server.

The target (benchmarks/README.md): cold start to an answered ``initialize`` within 1.15x of a
minimal ``MCPServer``.

Each run spawns the server, writes a raw JSON-RPC ``initialize`` line to its stdin at once
and stops the clock when the response line arrives on stdout (the SDK client is not used,
so its own import and set-up stay out of the figure). The two servers alternate run by run
so drift hits both alike; one unmeasured run of each goes first (page cache, ``.pyc``).
The store is migrated by the warm-up run, so measured runs open an existing store, as
every launch after the first does (``--fresh-db`` gives each run a new file instead).

``--importtime`` (on by default) then runs each server once under ``python -X importtime``
until it answers ``initialize`` and lists what our server imports beyond the baseline:
the costliest third-party packages, our own modules by cumulative time, and the total.
That is the list of imports worth making lazy.

    python benchmarks/bench_cold_start.py
    python benchmarks/bench_cold_start.py --runs 30 --json cold.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
NOOP_SERVER = HERE / "noop_server.py"
SERVER_SCRIPT = Path(sys.executable).parent / "mcp-server-escalation"
TARGET_RATIO = 1.15
OUR_PACKAGE = "mcp_server_escalation"

INITIALIZE = (
    json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "bench-cold-start", "version": "0"},
            },
        }
    )
    + "\n"
).encode()


def escalation_command(db: Path, python_flags: tuple[str, ...] = ()) -> list[str]:
    # The console script is a Python script whose shebang names this interpreter; with -X
    # flags it is run through the interpreter explicitly, which is the same launch.
    launcher = [sys.executable, *python_flags] if python_flags else []
    return [*launcher, str(SERVER_SCRIPT), "--db", str(db)]


def noop_command(python_flags: tuple[str, ...] = ()) -> list[str]:
    return [sys.executable, *python_flags, str(NOOP_SERVER)]


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU the process has used so far (Linux ``/proc``; None elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def time_initialize(command: list[str]) -> tuple[float, float | None, str]:
    """Seconds from spawn to the ``initialize`` response line, the server's CPU seconds by
    then (less sensitive to other load on the machine than wall time), and its stderr."""
    # stderr goes to a file, not a pipe: -X importtime writes tens of KB before the answer,
    # enough to fill a pipe nobody reads yet and stall the server.
    with tempfile.TemporaryFile() as errfile:
        t0 = time.perf_counter()
        proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errfile)
        assert proc.stdin is not None
        assert proc.stdout is not None
        proc.stdin.write(INITIALIZE)
        proc.stdin.flush()
        line = proc.stdout.readline()
        elapsed = time.perf_counter() - t0
        cpu = cpu_seconds(proc.pid)
        # communicate() closes stdin: on EOF the server shuts down.
        try:
            proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
        errfile.seek(0)
        err = errfile.read().decode(errors="replace")
    reply = json.loads(line) if line.strip() else {}
    if "result" not in reply:
        tail = "\n".join(err.strip().splitlines()[-15:])
        raise RuntimeError(f"no initialize result from {command}: {line[:300]!r}\nserver stderr:\n{tail}")
    return elapsed, cpu, err


def parse_importtime(stderr: str) -> list[tuple[str, int, int, int]]:
    """``(module, depth, self us, cumulative us)`` from ``-X importtime`` output, in its order
    (post-order: a module's imports are listed, one level deeper, just before it)."""
    found: list[tuple[str, int, int, int]] = []
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, cumulative_us, name = line.split(":", 1)[1].split("|")
        depth = (len(name) - len(name.lstrip(" "))) // 2
        found.append((name.strip(), depth, int(self_us), int(cumulative_us)))
    return found


def extra_cumulative(entries: list[tuple[str, int, int, int]], baseline: set[str]) -> dict[str, int]:
    """For every module, the self time of the modules its import loaded (itself included)
    that the baseline does not load: what importing it costs beyond the SDK."""
    totals: dict[str, int] = {}
    stack: list[tuple[int, int]] = []  # (depth, extra us of that subtree)
    for name, depth, self_us, _ in entries:
        subtotal = 0 if name in baseline else self_us
        while stack and stack[-1][0] > depth:
            subtotal += stack.pop()[1]
        stack.append((depth, subtotal))
        totals[name] = subtotal
    return totals


def importtime_report(db: Path, top: int) -> dict[str, Any]:
    _, _, ours_err = time_initialize(escalation_command(db, ("-X", "importtime")))
    _, _, base_err = time_initialize(noop_command(("-X", "importtime")))
    entries = parse_importtime(ours_err)
    ours = {name: (self_us, cum_us) for name, _, self_us, cum_us in entries}
    base = {name: (self_us, cum_us) for name, _, self_us, cum_us in parse_importtime(base_err)}
    beyond = extra_cumulative(entries, set(base))
    extra = {name: times for name, times in ours.items() if name not in base}
    by_package: dict[str, int] = defaultdict(int)
    for name, (self_us, _) in extra.items():
        by_package[name.split(".")[0]] += self_us
    own = sorted(
        ((name, beyond[name], times[0]) for name, times in ours.items() if name.startswith(OUR_PACKAGE)),
        key=lambda item: -item[1],
    )
    return {
        "total_import_ms": {
            "escalation": sum(s for s, _ in ours.values()) / 1000,
            "noop": sum(s for s, _ in base.values()) / 1000,
        },
        "extra_modules": len(extra),
        "extra_self_ms": sum(s for s, _ in extra.values()) / 1000,
        "extra_by_package_ms": dict(
            sorted(((k, v / 1000) for k, v in by_package.items()), key=lambda kv: -kv[1])
        ),
        "extra_top_modules_ms": [
            {"module": name, "self_ms": s / 1000, "cumulative_ms": c / 1000}
            for name, (s, c) in sorted(extra.items(), key=lambda kv: -kv[1][0])[:top]
        ],
        "own_beyond_baseline_ms": [
            {"module": name, "beyond_baseline_ms": c / 1000, "self_ms": s / 1000} for name, c, s in own[:top]
        ],
    }


# Times the start-up of the server step by step, in one fresh process: what an import or a
# set-up step costs beyond the SDK. It calls internal functions (the composition root), so
# it reports "unavailable" rather than failing when they change.
PHASES = """
import json, sys, time
import anyio
marks = [("start", time.perf_counter())]
import mcp.server.mcpserver
marks.append(("import mcp.server.mcpserver (the baseline pays this too)", time.perf_counter()))
import mcp_server_escalation.cli
marks.append(("import mcp_server_escalation.cli", time.perf_counter()))
from mcp_server_escalation.adapters.composition.server import build_server
import mcp_server_escalation.adapters.mcp.tools
marks.append(("import the composition root + the MCP tools (and what they pull in)", time.perf_counter()))
from mcp_server_escalation.settings import Settings
settings = Settings.from_sources(db=sys.argv[1], config=None, role="agent", prompts=None)
marks.append(("Settings.from_sources", time.perf_counter()))
server = build_server(settings)
marks.append(("build_server (tool registration: arg models, JSON schemas)", time.perf_counter()))
from mcp_server_escalation.services.runtime import open_runtime
async def lifespan():
    async with open_runtime(settings):
        pass
anyio.run(lifespan)
marks.append(("open_runtime (store open + migration check, prompts, patterns)", time.perf_counter()))
print(json.dumps({name: (t - marks[i][1]) * 1000 for i, (name, t) in enumerate(marks[1:])}))
"""


def phase_report(db: Path, runs: int) -> dict[str, Any]:
    samples: dict[str, list[float]] = defaultdict(list)
    for _ in range(runs):
        done = subprocess.run(
            [sys.executable, "-c", PHASES, str(db)], capture_output=True, text=True, check=False, timeout=120
        )
        if done.returncode != 0:
            return {"error": (done.stderr.strip().splitlines() or ["failed"])[-1]}
        for name, ms in json.loads(done.stdout.strip().splitlines()[-1]).items():
            samples[name].append(ms)
    return {"median_ms": {name: statistics.median(values) for name, values in samples.items()}}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=15, help="measured runs per server (default 15)")
    parser.add_argument("--fresh-db", action="store_true", help="a new store file for every run")
    parser.add_argument("--no-importtime", dest="importtime", action="store_false")
    parser.add_argument(
        "--phase-runs", type=int, default=5, help="processes for the start-up phase breakdown (0: skip)"
    )
    parser.add_argument("--top", type=int, default=15, help="rows in the import breakdown (default 15)")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON ('-' for stdout)")
    args = parser.parse_args()
    json_out = sys.stdout
    if args.json == "-":
        sys.stdout = sys.stderr  # the tables go to stderr, so stdout carries only the JSON
    if not SERVER_SCRIPT.exists():
        parser.error(f"{SERVER_SCRIPT} not found: install the package into this interpreter's environment")

    times: dict[str, list[float]] = {"escalation": [], "noop": []}
    cpu: dict[str, list[float]] = {"escalation": [], "noop": []}
    with tempfile.TemporaryDirectory(prefix="esc-cold-") as tmp:
        shared_db = Path(tmp) / "cold.db"
        time_initialize(escalation_command(shared_db))  # warm-up; migrates the store
        time_initialize(noop_command())
        for run in range(args.runs):
            db = Path(tmp) / f"cold-{run}.db" if args.fresh_db else shared_db
            pair = [("escalation", escalation_command(db)), ("noop", noop_command())]
            if run % 2:
                pair.reverse()
            for name, command in pair:
                elapsed, cpu_s, _ = time_initialize(command)
                times[name].append(elapsed * 1000)
                if cpu_s is not None:
                    cpu[name].append(cpu_s * 1000)
        imports = importtime_report(shared_db, args.top) if args.importtime else None
        phases = phase_report(shared_db, args.phase_runs) if args.phase_runs else None

    stats = {
        name: {
            "runs": len(values),
            "median_ms": statistics.median(values),
            "min_ms": min(values),
            "max_ms": max(values),
            "stdev_ms": statistics.stdev(values) if len(values) > 1 else 0.0,
            "cpu_median_ms": statistics.median(cpu[name]) if cpu[name] else None,
        }
        for name, values in times.items()
    }
    ratio = stats["escalation"]["median_ms"] / stats["noop"]["median_ms"]
    # Each run of one server is paired with the adjacent run of the other: the median of the
    # pair ratios is less sensitive to load that comes and goes during the benchmark.
    paired = statistics.median(e / n for e, n in zip(times["escalation"], times["noop"], strict=True))
    cpu_ratio = (
        statistics.median(cpu["escalation"]) / statistics.median(cpu["noop"])
        if cpu["escalation"] and cpu["noop"]
        else None
    )
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    print(f"\ncold start to an answered initialize ({args.runs} runs each, alternating)")
    header = f"{'server':<12} {'median ms':>10} {'min ms':>9} {'max ms':>9} {'stdev':>8} {'CPU ms (med)':>13}"
    print(header)
    print("-" * len(header))
    for name, s in stats.items():
        cpu_text = f"{s['cpu_median_ms']:>13.0f}" if s["cpu_median_ms"] is not None else f"{'n/a':>13}"
        print(
            f"{name:<12} {s['median_ms']:>10.1f} {s['min_ms']:>9.1f} {s['max_ms']:>9.1f} "
            f"{s['stdev_ms']:>8.1f} {cpu_text}"
        )
    verdict = "ok" if ratio <= TARGET_RATIO else "OVER"
    print(f"ratio of medians: {ratio:.3f}x (target <= {TARGET_RATIO}x) {verdict}")
    print(f"median of paired ratios: {paired:.3f}x", end="")
    print(f"; CPU-time ratio: {cpu_ratio:.3f}x" if cpu_ratio else "", end="")
    print(f"; load average {load[0]:.2f} (2 cores: above ~1 the figures are noisy)" if load else "")

    if phases:
        print(f"\nstart-up phases in one process (median of {args.phase_runs} fresh processes, ms):")
        if "error" in phases:
            print(f"  unavailable: {phases['error']}")
        for phase, ms in phases.get("median_ms", {}).items():
            print(f"    {phase:<66} {ms:>8.1f}")

    if imports:
        total = imports["total_import_ms"]
        print(
            f"\nimports until initialize (-X importtime, one run; inflated by the tracing): "
            f"escalation {total['escalation']:.0f} ms, noop {total['noop']:.0f} ms; "
            f"{imports['extra_modules']} modules beyond the baseline cost {imports['extra_self_ms']:.0f} ms"
        )
        print("  beyond the baseline, by top-level package (self ms):")
        for package, ms in list(imports["extra_by_package_ms"].items())[: args.top]:
            print(f"    {package:<40} {ms:>8.1f}")
        print("  beyond the baseline, costliest modules (self ms / cumulative ms):")
        for row in imports["extra_top_modules_ms"]:
            print(f"    {row['module']:<56} {row['self_ms']:>8.1f} {row['cumulative_ms']:>8.1f}")
        print(
            f"  {OUR_PACKAGE} modules by import cost beyond the baseline "
            "(self + what they pull in that the no-op server does not; ms):"
        )
        for row in imports["own_beyond_baseline_ms"]:
            print(f"    {row['module']:<56} {row['beyond_baseline_ms']:>8.1f}")

    report = {
        "benchmark": "cold start to initialize",
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "target_ratio": TARGET_RATIO,
        "fresh_db": args.fresh_db,
        "servers": stats,
        "ratio_median": ratio,
        "within_target": ratio <= TARGET_RATIO,
        "median_paired_ratio": paired,
        "cpu_ratio": cpu_ratio,
        "load_average": load,
        "samples_ms": times,
        "cpu_samples_ms": cpu,
        "imports": imports,
        "phases": phases,
    }
    if args.json == "-":
        json_out.write(json.dumps(report, indent=2) + "\n")
    elif args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0 if ratio <= TARGET_RATIO else 1


if __name__ == "__main__":
    raise SystemExit(main())
