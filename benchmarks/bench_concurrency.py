"""Eight server processes writing one store at once: zero errors, zero lost writes (SPEC 8).

Spawns ``--processes`` (default 8) copies of the installed ``mcp-server-escalation``
console script, all with ``--db`` pointing at ONE new store file, and drives each over
stdio with the real SDK ``Client``: even-numbered processes in legacy mode (the
``initialize`` handshake), odd-numbered ones in auto mode (2026-07-28). The servers open the
fresh store together, so they also race to create it and apply the migrations.

Each process then starts two tasks with very large thresholds (``start_task(thresholds=...)``,
so nothing ever escalates): its own task, and one task shared by all processes (same
``task_id``, same ``agent_id``, so a later ``start_task`` resumes it instead of taking it
over). When every process is ready they start together and each makes, one call at a
time as an agent would, ``--calls`` (default 100) ``record_failure`` and ``--calls``
``report_progress`` calls on its own task and as many on the shared task (4 x N calls per
process). Every ``report_progress`` carries a test run and one file nobody else reports, and
every ``record_failure`` a unique ``attempted_action``, so each write can be found again.

Afterwards a fresh client reads every task with ``get_task`` and the script reads the store
file with ``sqlite3`` (read-only), and compares against the calls that were acknowledged:

- failure occurrences (``get_task``'s ``failure_occurrences``, the sum of the records'
  ``occurrence_count``, and the ``failure_occurrences`` rows, each one by its action);
- ``verification_attempts`` and ``files_modified`` (read-modify-write counters: the place
  a lost update would show), and the ``modified_files`` rows;
- every progress report, by its note, and the ``actions`` log;
- no escalation, every task still active, ``PRAGMA integrity_check``.

It reports throughput (acknowledged calls per second over the concurrent phase), per-call
median, p99 and max latency under contention, the error count and the lost-write count,
and what the servers wrote to stderr (``store busy`` retries, tracebacks). It exits with
status 1 on any error, lost or unexpected write, escalation, or when ``--timeout`` expires.

The 8 clients share this one driver process (one event loop), so on a small machine part
of the latency is the driver waiting for a core; the absolute figures are for comparing
runs on one machine, the pass/fail is the target.

    python benchmarks/bench_concurrency.py                 # 8 processes x 4 x 100 calls
    python benchmarks/bench_concurrency.py --processes 4 --calls 50 --json out.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sqlite3
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from bench_stdio import FAILURE_TEMPLATES, NAMES, NO_ESCALATION, SERVER_SCRIPT

SHARED_TASK = "bench-shared"
SHARED_AGENT = "bench-agent"
TOOLS = ("record_failure", "report_progress")


def own_task(k: int) -> str:
    return f"bench-own-{k}"


def action_tag(k: int, target: str, i: int) -> str:
    """What identifies one call's write in the store (an action, a note, a file)."""
    return f"w{k} {'shared' if target == SHARED_TASK else 'own'} call {i}"


def record_failure_args(k: int, target: str, i: int) -> dict[str, Any]:
    # Few distinct fingerprints, so the writers update the same failure records (the
    # occurrence_count upsert) as well as adding rows.
    error_type, template = FAILURE_TEMPLATES[i % len(FAILURE_TEMPLATES)]
    name = NAMES[(i + k) % len(NAMES)]
    return {
        "task_id": target,
        "message": template.format(a=i, b=i + 1, name=name, k=i % 11, i=i),
        "error_type": error_type,
        "file": f"src/pkg/{name}/mod_{i % 6}.py",
        "line": 10 + (i * 7) % 400,
        "attempted_action": action_tag(k, target, i),
        "observed_outcome": "the same test still fails",
    }


def progress_file(k: int, target: str, i: int) -> str:
    return f"src/w{k}/{'shared' if target == SHARED_TASK else 'own'}/file_{i}.py"


def report_progress_args(k: int, target: str, i: int) -> dict[str, Any]:
    return {
        "task_id": target,
        "files_modified": [progress_file(k, target, i)],
        "tests_passed": 100 + (i * 13) % 50,
        "tests_failed": 1 + (i * 7) % 9,
        "outcome": ("neutral", "failure", "success")[i % 3],
        "note": action_tag(k, target, i),
    }


class Barrier:
    """Every worker arrives once (ready or failed); the last one releases them all."""

    def __init__(self, parties: int) -> None:
        self.parties = parties
        self.arrived = 0
        self.event = anyio.Event()

    def arrive(self) -> None:
        self.arrived += 1
        if self.arrived >= self.parties:
            self.event.set()


@dataclass
class Run:
    """Everything the workers observed."""

    processes: int
    calls: int
    latencies: dict[tuple[str, str], list[float]] = field(default_factory=dict)  # (tool, own|shared)
    acked: dict[tuple[str, str], set[str]] = field(default_factory=dict)  # (tool, task_id) -> tags
    errors: list[str] = field(default_factory=list)
    escalations: list[str] = field(default_factory=list)
    setup_s: list[float] = field(default_factory=list)
    go_at: float = 0.0
    ended_at: list[float] = field(default_factory=list)
    timed_out: bool = False

    def ack(self, tool: str, task_id: str, tag: str) -> None:
        self.acked.setdefault((tool, task_id), set()).add(tag)

    def acked_count(self, tool: str, task_id: str) -> int:
        return len(self.acked.get((tool, task_id), ()))


def result_text(result: Any) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)[:300]


async def call(client: Client, run: Run, k: int, tool: str, args: dict[str, Any], tag: str | None) -> bool:
    """One timed call; an error or an escalation is recorded, never raised."""
    target = args["task_id"]
    t0 = time.perf_counter()
    try:
        result = await client.call_tool(tool, args)
    except Exception as exc:  # a dead server, a broken pipe: an error like any other
        run.errors.append(f"w{k} {tool} {target} {tag}: {type(exc).__name__}: {exc}"[:400])
        return False
    elapsed = (time.perf_counter() - t0) * 1000.0
    if result.is_error:
        run.errors.append(f"w{k} {tool} {target} {tag}: {result_text(result)}")
        return False
    if tag is not None:
        kind = "shared" if target == SHARED_TASK else "own"
        run.latencies.setdefault((tool, kind), []).append(elapsed)
        run.ack(tool, target, tag)
    if (result.structured_content or {}).get("escalation"):
        run.escalations.append(f"w{k} {tool} {target} {tag}")
    return True


async def worker(
    k: int, mode: str, db: Path, project: Path, errlog: TextIO, run: Run, ready: Barrier
) -> None:
    params = StdioServerParameters(command=str(SERVER_SCRIPT), args=["--db", str(db)], cwd=str(project))
    arrived = False
    try:
        t0 = time.perf_counter()
        async with Client(stdio_client(params, errlog=errlog), mode=mode) as client:  # type: ignore[arg-type]
            for task_id, agent in ((SHARED_TASK, SHARED_AGENT), (own_task(k), f"worker-{k}")):
                started = {
                    "task_id": task_id,
                    "title": f"concurrency benchmark: {task_id}",
                    "agent_id": agent,
                    "project": str(project),
                    "thresholds": NO_ESCALATION,
                }
                if not await call(client, run, k, "start_task", started, None):
                    return
            run.setup_s.append(time.perf_counter() - t0)
            ready.arrive()
            arrived = True
            await ready.event.wait()
            for i in range(run.calls):
                for target in (own_task(k), SHARED_TASK):
                    tag = action_tag(k, target, i)
                    await call(client, run, k, "record_failure", record_failure_args(k, target, i), tag)
                    await call(client, run, k, "report_progress", report_progress_args(k, target, i), tag)
            run.ended_at.append(time.perf_counter())
    except Exception as exc:
        run.errors.append(f"w{k} session: {type(exc).__name__}: {exc}"[:400])
    finally:
        if not arrived:
            ready.arrive()


async def drive(run: Run, db: Path, project: Path, logs: Path, timeout: float) -> None:
    ready = Barrier(run.processes)
    files = [open(logs / f"server-{k}.stderr", "w", encoding="utf-8") for k in range(run.processes)]  # noqa: SIM115
    try:
        with anyio.move_on_after(timeout) as scope:
            async with anyio.create_task_group() as tg:
                for k in range(run.processes):
                    mode = "legacy" if k % 2 == 0 else "auto"
                    tg.start_soon(worker, k, mode, db, project, files[k], run, ready)
                await ready.event.wait()
                run.go_at = time.perf_counter()
        run.timed_out = scope.cancelled_caught
    finally:
        for f in files:
            f.close()


@dataclass
class Check:
    task_id: str
    what: str
    expected: int
    found: int

    @property
    def lost(self) -> int:
        return max(0, self.expected - self.found)

    @property
    def unexpected(self) -> int:
        return max(0, self.found - self.expected)


async def read_tasks(db: Path, project: Path, logs: Path, task_ids: list[str]) -> dict[str, dict[str, Any]]:
    """``get_task`` for every task, through a fresh server process."""
    params = StdioServerParameters(command=str(SERVER_SCRIPT), args=["--db", str(db)], cwd=str(project))
    views: dict[str, dict[str, Any]] = {}
    with anyio.fail_after(60), open(logs / "verifier.stderr", "w", encoding="utf-8") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode="legacy") as client:  # type: ignore[arg-type]
            for task_id in task_ids:
                result = await client.call_tool("get_task", {"task_id": task_id})
                if result.is_error or not result.structured_content:
                    raise RuntimeError(f"get_task {task_id} failed: {result_text(result)}")
                views[task_id] = result.structured_content
    return views


def verify(run: Run, db: Path, views: dict[str, dict[str, Any]]) -> tuple[list[Check], list[str]]:
    """Compare the store with the acknowledged calls; also returns integrity problems."""
    checks: list[Check] = []
    problems: list[str] = []
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        integrity = conn.execute("PRAGMA integrity_check").fetchone()[0]
        if integrity != "ok":
            problems.append(f"integrity_check: {integrity}")
        for task_id, view in views.items():
            failures = run.acked.get(("record_failure", task_id), set())
            reports = run.acked.get(("report_progress", task_id), set())
            counters = view["counters"]
            actions = dict(
                conn.execute(
                    "SELECT kind, COUNT(*) FROM actions WHERE task_id = ? GROUP BY kind", (task_id,)
                ).fetchall()
            )
            occurrence_tags = Counter(
                row[0]
                for row in conn.execute(
                    "SELECT attempted_action FROM failure_occurrences WHERE task_id = ?", (task_id,)
                )
            )
            notes = Counter(
                row[0] for row in conn.execute("SELECT note FROM progress_reports WHERE task_id = ?", (task_id,))
            )
            occurrence_sum = conn.execute(
                "SELECT COALESCE(SUM(occurrence_count), 0) FROM failures WHERE task_id = ?", (task_id,)
            ).fetchone()[0]
            file_rows = conn.execute(
                "SELECT COUNT(*) FROM modified_files WHERE task_id = ?", (task_id,)
            ).fetchone()[0]
            checks += [
                Check(task_id, "get_task failure_occurrences", len(failures), view["failure_occurrences"]),
                Check(task_id, "sum(failures.occurrence_count)", len(failures), occurrence_sum),
                Check(task_id, "failure_occurrences rows", len(failures), sum(occurrence_tags.values())),
                Check(
                    task_id,
                    "acknowledged failures found by action",
                    len(failures),
                    len(failures & set(occurrence_tags)),
                ),
                Check(task_id, "actions record_failure", len(failures), actions.get("record_failure", 0)),
                Check(task_id, "counters.verification_attempts", len(reports), counters["verification_attempts"]),
                Check(task_id, "counters.files_modified", len(reports), counters["files_modified"]),
                Check(task_id, "get_task modified_files", len(reports), len(view["modified_files"])),
                Check(task_id, "modified_files rows", len(reports), file_rows),
                Check(task_id, "progress_reports rows", len(reports), sum(notes.values())),
                Check(task_id, "acknowledged reports found by note", len(reports), len(reports & set(notes))),
                Check(task_id, "actions report_progress", len(reports), actions.get("report_progress", 0)),
                Check(task_id, "escalations", 0, len(view["escalation_ids"])),
            ]
            for table, tags in (("failure_occurrences", occurrence_tags), ("progress_reports", notes)):
                duplicates = [tag for tag, n in tags.items() if n > 1]
                if duplicates:
                    problems.append(f"{task_id}: {len(duplicates)} {table} rows stored twice, e.g. {duplicates[:3]}")
            if view["task"]["status"] != "active":
                problems.append(f"{task_id}: status {view['task']['status']!r}, expected 'active'")
    finally:
        conn.close()
    return checks, problems


def scan_stderr(logs: Path, processes: int) -> dict[str, Any]:
    """What the servers said: busy retries, tracebacks, errors (first few lines kept)."""
    busy = tracebacks = errors = 0
    samples: list[str] = []
    for k in range(processes):
        path = logs / f"server-{k}.stderr"
        text = path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""
        for line in text.splitlines():
            lower = line.lower()
            hit = False
            if "busy" in lower or "locked" in lower:
                busy += 1
                hit = True
            if line.startswith("Traceback"):
                tracebacks += 1
                hit = True
            if "error" in lower and "applied migration" not in lower:
                errors += 1
                hit = True
            if hit and len(samples) < 10:
                samples.append(f"server-{k}: {line[:200]}")
    return {"busy_lines": busy, "tracebacks": tracebacks, "error_lines": errors, "samples": samples}


def summarise(samples: list[float]) -> dict[str, float]:
    if not samples:
        return {"n": 0}
    ordered = sorted(samples)
    return {
        "n": len(ordered),
        "median_ms": statistics.median(ordered),
        "p99_ms": ordered[max(0, math.ceil(0.99 * len(ordered)) - 1)],
        "max_ms": ordered[-1],
        "mean_ms": statistics.fmean(ordered),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--processes", type=int, default=8, help="server processes (default 8)")
    parser.add_argument(
        "--calls", type=int, default=100, help="calls per tool per task per process (default 100)"
    )
    parser.add_argument(
        "--timeout", type=float, default=90.0, help="give up on the concurrent phase after this (default 90 s)"
    )
    parser.add_argument("--keep", metavar="DIR", type=Path, help="keep the store and server logs in DIR")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON ('-' for stdout)")
    args = parser.parse_args()
    json_out = sys.stdout
    if args.json == "-":
        sys.stdout = sys.stderr
    if not SERVER_SCRIPT.exists():
        parser.error(f"{SERVER_SCRIPT} not found: install the package into this interpreter's environment")
    if args.processes < 1 or args.calls < 1:
        parser.error("--processes and --calls must be at least 1")

    with tempfile.TemporaryDirectory(prefix="esc-conc-") as tmp:
        workdir = args.keep or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        db = workdir / "shared.db"
        if db.exists():
            parser.error(f"{db} exists: --keep needs an empty directory")
        project = workdir / "project"
        project.mkdir(exist_ok=True)

        run = Run(processes=args.processes, calls=args.calls)
        print(
            f"{args.processes} server processes ({(args.processes + 1) // 2} legacy, {args.processes // 2} auto), "
            f"one store, {args.calls} record_failure + {args.calls} report_progress per process "
            f"on its own task and on the shared task ({4 * args.calls * args.processes} calls)"
        )
        t_start = time.perf_counter()
        anyio.run(drive, run, db, project, workdir, args.timeout)
        total_s = time.perf_counter() - t_start

        task_ids = [SHARED_TASK] + [own_task(k) for k in range(args.processes)]
        views: dict[str, dict[str, Any]] = {}
        checks: list[Check] = []
        problems: list[str] = []
        try:
            views = anyio.run(read_tasks, db, project, workdir, task_ids)
            checks, problems = verify(run, db, views)
        except Exception as exc:
            problems.append(f"verification failed: {type(exc).__name__}: {exc}"[:400])
        stderr = scan_stderr(workdir, args.processes)

    planned = 4 * args.calls * args.processes
    acked = sum(len(tags) for tags in run.acked.values())
    phase_s = (max(run.ended_at) - run.go_at) if run.ended_at and run.go_at else float("nan")
    every = [ms for samples in run.latencies.values() for ms in samples]
    latency = {"all": summarise(every)} | {
        f"{tool} {kind}": summarise(run.latencies.get((tool, kind), []))
        for tool in TOOLS
        for kind in ("own", "shared")
    }
    lost = sum(c.lost for c in checks)
    unexpected = sum(c.unexpected for c in checks)
    errors = len(run.errors) + (planned - acked - len(run.errors) if run.timed_out else 0)

    print(
        f"\nconcurrent phase {phase_s:.2f} s, {acked}/{planned} calls acknowledged, "
        f"throughput {acked / phase_s:.0f} calls/s; whole run {total_s:.1f} s "
        f"(setup per process: median {statistics.median(run.setup_s or [math.nan]):.2f} s)"
    )
    header = f"{'calls':<24} {'n':>6} {'median ms':>10} {'p99 ms':>9} {'max ms':>9}"
    print(header)
    print("-" * len(header))
    for name, s in latency.items():
        if s["n"]:
            print(f"{name:<24} {s['n']:>6} {s['median_ms']:>10.2f} {s['p99_ms']:>9.2f} {s['max_ms']:>9.2f}")
    print(f"\nstore checks ({len(checks)} on {len(views)} tasks):")
    failed_checks = [c for c in checks if c.lost or c.unexpected]
    for c in failed_checks[:20]:
        print(f"  {c.task_id}: {c.what}: expected {c.expected}, found {c.found}")
    shared = {c.what: c for c in checks if c.task_id == SHARED_TASK}
    for what in ("get_task failure_occurrences", "counters.verification_attempts", "counters.files_modified"):
        if what in shared:
            print(f"  shared task {what}: {shared[what].found} (expected {shared[what].expected})")
    for p in problems:
        print(f"  problem: {p}")
    print(
        f"server stderr: {stderr['busy_lines']} busy/locked lines, {stderr['tracebacks']} tracebacks, "
        f"{stderr['error_lines']} error lines"
    )
    for line in stderr["samples"]:
        print(f"  {line}")
    for line in run.errors[:10]:
        print(f"  error: {line}")
    if run.escalations:
        print(f"  {len(run.escalations)} results carried an escalation, e.g. {run.escalations[:3]}")
    if run.timed_out:
        print(f"  TIMED OUT after {args.timeout:.0f} s")
    verdict_ok = not (errors or lost or unexpected or problems or run.escalations or run.timed_out)
    print(
        f"\nerrors {errors}, lost writes {lost}, unexpected writes {unexpected}, "
        f"escalations {len(run.escalations)}: {'PASS' if verdict_ok else 'FAIL'} (target: zero errors, zero lost writes)"
    )
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    if load:
        print(f"load average {load[0]:.2f} ({os.cpu_count()} cores)")

    report = {
        "benchmark": "concurrent writers, one store",
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "load_average": load,
        "processes": args.processes,
        "calls_per_tool_per_task": args.calls,
        "planned_calls": planned,
        "acknowledged_calls": acked,
        "concurrent_phase_s": phase_s,
        "throughput_calls_per_s": acked / phase_s if phase_s == phase_s and phase_s > 0 else None,
        "latency": latency,
        "errors": errors,
        "error_samples": run.errors[:20],
        "lost_writes": lost,
        "unexpected_writes": unexpected,
        "escalations": len(run.escalations),
        "problems": problems,
        "checks": [
            {"task_id": c.task_id, "what": c.what, "expected": c.expected, "found": c.found} for c in checks
        ],
        "server_stderr": stderr,
        "timed_out": run.timed_out,
        "passed": verdict_ok,
    }
    if args.json == "-":
        json_out.write(json.dumps(report, indent=2) + "\n")
    elif args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0 if verdict_ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
