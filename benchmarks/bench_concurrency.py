"""Eight server processes writing one store at once: zero errors, zero lost writes.

Spawns ``--processes`` (default 8) copies of the installed ``mcp-server-escalation``
console script, all with ``--db`` pointing at ONE new store (a SQLite file; with
``--backend postgresql``, one database on a PostgreSQL server that the run starts and
stops, ``scripts/pg_local.py``), and drives each over stdio with the real SDK
``Client``: even-numbered processes in legacy mode (the
``initialize`` handshake), odd-numbered ones in auto mode (2026-07-28). The servers open the
new store together, so they also race to create it and apply the migrations
(``--existing-store`` creates it with one server first).

Each process then starts two tasks with very large thresholds (``start_task(thresholds=...)``,
so nothing ever escalates): its own task, and one task shared by all processes (same
``task_id``, same ``agent_id``, so a later ``start_task`` resumes it instead of taking it
over), and makes one unmeasured warm-up call of each tool on its own task. When every
process is ready they start together and each makes, one call at a time as an agent would,
``--calls`` (default 100) ``record_failure`` and ``--calls`` ``report_progress`` calls on its
own task and as many on the shared task (4 x N calls per process). Every
``report_progress`` carries a test run and one file nobody else reports, and every
``record_failure`` a unique ``attempted_action``, so each write can be found again.

Afterwards a fresh server answers ``get_task`` for every task and the script reads the
store itself (read-only, the same SQL on both backends), and compares with the calls
answered without error:

- failure occurrences (``get_task``'s ``failure_occurrences``, the sum of the records'
  ``occurrence_count``, and the ``failure_occurrences`` rows, each one by its action);
- ``verification_attempts`` and ``files_modified`` (read-modify-write counters: the place
  a lost update would show), and the ``modified_files`` rows;
- every progress report, by its note, and the ``actions`` log;
- no escalation, every task still active, ``PRAGMA integrity_check`` (SQLite).

It reports throughput (answered calls per second over the concurrent phase), per-call
median, p99 and max latency under contention, the error count and the lost-write count,
and what the servers wrote to stderr (``store busy`` retries, deadlocks, tracebacks); on
PostgreSQL also the database's own counts (deadlocks, commits, rollbacks). Unless
``--no-baseline``, it then runs the same clients and call pattern against no-op servers, so
the latency under contention also reads as a ratio. It exits with status 1 on any error,
lost or unexpected write, escalation, integrity problem, or when ``--timeout`` expires.

The clients share this one driver process (one event loop); the script prints how many
cores it used, so you can tell whether it was the bottleneck.

    python benchmarks/bench_concurrency.py                 # 8 processes x 4 x 100 calls
    python benchmarks/bench_concurrency.py --processes 4 --calls 50 --json out.json
    python benchmarks/bench_concurrency.py --existing-store --keep /tmp/conc
    python benchmarks/bench_concurrency.py --backend postgresql   # the server's log kept with --keep
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import sqlite3
import statistics
import sys
import tempfile
import time
from collections import Counter
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from bench_stdio import FAILURE_TEMPLATES, NAMES, NO_ESCALATION, NOOP_SERVER, SERVER_SCRIPT
from postgres_support import POSTGRES_SCHEMES, backend_installed, postgres_database, postgres_figures

SHARED_TASK = "bench-shared"
SHARED_AGENT = "bench-agent"
# Every process records this one error on this one task as the phase opens: the third
# occurrence must open exactly one escalation, whichever process records it.
ESCALATED_TASK = "bench-escalated"
ESCALATED_ERROR = ("RuntimeError", "RuntimeError: the shared fixture broke in test_everything")
ESCALATE_AT = 3
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
    escalation_calls: int = 0
    latencies: dict[tuple[str, str], list[float]] = field(default_factory=dict)  # (tool, own|shared)
    by_mode: dict[str, list[float]] = field(default_factory=dict)  # legacy|auto
    acked: dict[tuple[str, str], set[str]] = field(default_factory=dict)  # (tool, task_id) -> tags
    errors: list[str] = field(default_factory=list)
    escalations: list[str] = field(default_factory=list)
    escalation_ids: set[int] = field(default_factory=set)  # seen in the escalated task's results
    setup_s: list[float] = field(default_factory=list)
    go_at: float = 0.0
    ended_at: list[float] = field(default_factory=list)
    timed_out: bool = False
    cpu_at_go: float = 0.0
    cpu_at_end: float = 0.0

    @property
    def phase_s(self) -> float:
        """From the release of the workers to the last one's last answer."""
        return (max(self.ended_at) - self.go_at) if self.ended_at and self.go_at else math.nan

    def all_latencies(self) -> list[float]:
        return [ms for samples in self.latencies.values() for ms in samples]

    def ack(self, tool: str, task_id: str, tag: str) -> None:
        self.acked.setdefault((tool, task_id), set()).add(tag)


def result_text(result: Any) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)[:300]


async def call(
    client: Client,
    run: Run,
    k: int,
    tool: str,
    args: dict[str, Any],
    tag: str | None,
    *,
    key: str | None = None,
    timed: bool = True,
) -> bool:
    """One call; its latency, an error or an escalation is recorded, never raised.

    ``tag`` identifies the write (None: not checked in the store); ``key`` files the
    latency under another name than the tool's; ``timed=False`` is a warm-up call.
    """
    target = args["task_id"] if tool != "noop" else args.pop("task_id")
    t0 = time.perf_counter()
    try:
        result = await client.call_tool(tool, args)
    except Exception as exc:  # noqa: BLE001 (a dead server, a broken pipe: counted like any error)
        run.errors.append(f"w{k} {tool} {target} {tag}: {type(exc).__name__}: {exc}"[:400])
        return False
    elapsed = (time.perf_counter() - t0) * 1000.0
    if result.is_error:
        run.errors.append(f"w{k} {tool} {target} {tag}: {result_text(result)}")
        return False
    if tag is not None:
        if timed:
            kind = "shared" if target == SHARED_TASK else "own"
            run.latencies.setdefault((key or tool, kind), []).append(elapsed)
            run.by_mode.setdefault("legacy" if k % 2 == 0 else "auto", []).append(elapsed)
        run.ack(key or tool, target, tag)
    if (result.structured_content or {}).get("escalation"):
        run.escalations.append(f"w{k} {tool} {target} {tag}")
    return True


async def worker(k: int, mode: str, db: str, project: Path, errlog: TextIO, run: Run, ready: Barrier) -> None:
    """One escalation server: start both tasks, wait for the others, then write."""
    params = StdioServerParameters(command=str(SERVER_SCRIPT), args=["--db", db], cwd=str(project))
    arrived = False
    try:
        t0 = time.perf_counter()
        async with Client(stdio_client(params, errlog=errlog), mode=mode) as client:  # type: ignore[arg-type]
            for started in start_arguments(k, project, run):
                if not await call(client, run, k, "start_task", started, None):
                    return
            # One unmeasured call of each tool first: the first call of a process builds
            # validators and compiles the classification patterns (bench_stdio warms up too).
            # These writes are checked in the store like the others (call -1).
            tag = action_tag(k, own_task(k), -1)
            await call(
                client, run, k, "record_failure", record_failure_args(k, own_task(k), -1), tag, timed=False
            )
            await call(
                client, run, k, "report_progress", report_progress_args(k, own_task(k), -1), tag, timed=False
            )
            run.setup_s.append(time.perf_counter() - t0)
            ready.arrive()
            arrived = True
            await ready.event.wait()
            await race_to_escalate(client, run, k)
            for i in range(run.calls):
                for target in (own_task(k), SHARED_TASK):
                    tag = action_tag(k, target, i)
                    await call(client, run, k, "record_failure", record_failure_args(k, target, i), tag)
                    await call(client, run, k, "report_progress", report_progress_args(k, target, i), tag)
            run.ended_at.append(time.perf_counter())
    except Exception as exc:  # noqa: BLE001 (a server that fails to start is an error to count)
        run.errors.append(f"w{k} session: {type(exc).__name__}: {exc}"[:400])
    finally:
        if not arrived:
            ready.arrive()


def start_arguments(k: int, project: Path, run: Run) -> list[dict[str, Any]]:
    """start_task for the shared task, the process's own and (when raced) the escalated one."""
    tasks = [(SHARED_TASK, SHARED_AGENT, NO_ESCALATION), (own_task(k), f"worker-{k}", NO_ESCALATION)]
    if run.escalation_calls:
        tasks.append((ESCALATED_TASK, SHARED_AGENT, {**NO_ESCALATION, "same_error_repeated": ESCALATE_AT}))
    return [
        {
            "task_id": task_id,
            "title": f"concurrency benchmark: {task_id}",
            "agent_id": agent,
            "project": str(project),
            "thresholds": thresholds,
        }
        for task_id, agent, thresholds in tasks
    ]


async def race_to_escalate(client: Client, run: Run, k: int) -> None:
    """The same error, ``run.escalation_calls`` times, on the escalated task; not timed.

    Each answered call is a write to find again; the escalation ids its results carry (the
    one it opened or joined, the one holding the task) must all be the same one.
    """
    error_type, message = ESCALATED_ERROR
    for i in range(run.escalation_calls):
        tag = f"w{k} escalated call {i}"
        args = {
            "task_id": ESCALATED_TASK,
            "message": message,
            "error_type": error_type,
            "attempted_action": tag,
            "observed_outcome": "the same fixture error",
        }
        where = f"w{k} record_failure {ESCALATED_TASK} {tag}"
        try:
            result = await client.call_tool("record_failure", args)
        except Exception as exc:  # noqa: BLE001 (counted like any error)
            run.errors.append(f"{where}: {type(exc).__name__}: {exc}"[:400])
            continue
        if result.is_error:
            run.errors.append(f"{where}: {result_text(result)}")
            continue
        run.ack("record_failure", ESCALATED_TASK, tag)
        content = result.structured_content or {}
        for key in ("escalation", "holding"):
            if isinstance(content.get(key), dict) and content[key].get("escalation_id") is not None:
                run.escalation_ids.add(content[key]["escalation_id"])


async def noop_worker(
    k: int, mode: str, _db: str, project: Path, errlog: TextIO, run: Run, ready: Barrier
) -> None:
    """The baseline: the same number of calls, in the same pattern, to a no-op server."""
    params = StdioServerParameters(command=sys.executable, args=[str(NOOP_SERVER)], cwd=str(project))
    arrived = False
    try:
        t0 = time.perf_counter()
        async with Client(stdio_client(params, errlog=errlog), mode=mode) as client:  # type: ignore[arg-type]
            for tool in TOOLS:
                await call(client, run, k, "noop", {"task_id": "own", "text": f"warm-up {tool}"}, None)
            run.setup_s.append(time.perf_counter() - t0)
            ready.arrive()
            arrived = True
            await ready.event.wait()
            for i in range(run.calls):
                for target in ("own", SHARED_TASK):
                    for tool in TOOLS:
                        tag = f"{tool} {action_tag(k, target, i)}"
                        await call(client, run, k, "noop", {"task_id": target, "text": tag}, tag, key=tool)
            run.ended_at.append(time.perf_counter())
    except Exception as exc:  # noqa: BLE001 (counted, like the escalation servers' errors)
        run.errors.append(f"noop w{k} session: {type(exc).__name__}: {exc}"[:400])
    finally:
        if not arrived:
            ready.arrive()


async def drive(run: Run, job: Any, db: str, project: Path, errlogs: list[TextIO], limit_s: float) -> None:
    """Start every worker, release them together, wait for all (or ``limit_s``)."""
    ready = Barrier(run.processes)
    with anyio.move_on_after(limit_s) as scope:
        async with anyio.create_task_group() as tg:
            for k in range(run.processes):
                mode = "legacy" if k % 2 == 0 else "auto"
                tg.start_soon(job, k, mode, db, project, errlogs[k], run, ready)
            await ready.event.wait()
            run.go_at = time.perf_counter()
            run.cpu_at_go = driver_cpu()
    # Cancelled while closing the sessions, after the last answer, is not a failure.
    run.timed_out = scope.cancelled_caught and len(run.ended_at) < run.processes
    run.cpu_at_end = driver_cpu()


def run_phase(run: Run, job: Any, db: str, project: Path, logs: Path, prefix: str, limit_s: float) -> None:
    """``drive`` with one stderr file per server (``{prefix}-{k}.stderr``)."""
    with ExitStack() as stack:
        errlogs = [
            stack.enter_context((logs / f"{prefix}-{k}.stderr").open("w", encoding="utf-8"))
            for k in range(run.processes)
        ]
        anyio.run(drive, run, job, db, project, errlogs, limit_s)


def driver_cpu() -> float:
    """User + system CPU seconds of this (driver) process so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


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


async def read_tasks(
    db: str, project: Path, errlog: TextIO, task_ids: list[str], problems: list[str]
) -> dict[str, dict[str, Any]]:
    """``get_task`` for every task, through a fresh server process; failures go to ``problems``."""
    params = StdioServerParameters(command=str(SERVER_SCRIPT), args=["--db", db], cwd=str(project))
    views: dict[str, dict[str, Any]] = {}
    with anyio.fail_after(60):
        async with Client(stdio_client(params, errlog=errlog), mode="legacy") as client:  # type: ignore[arg-type]
            for task_id in task_ids:
                result = await client.call_tool("get_task", {"task_id": task_id})
                if result.is_error or not result.structured_content:
                    problems.append(f"get_task {task_id} failed: {result_text(result)}")
                else:
                    views[task_id] = result.structured_content
    return views


class StoreReader:
    """Read-only SQL on the store the servers wrote, SQLite file or PostgreSQL database.

    Queries are written with ``?`` placeholders, as for sqlite3; the tables are the same on
    both backends.
    """

    def __init__(self, db: str) -> None:
        self.postgres = db.startswith(POSTGRES_SCHEMES)
        if self.postgres:
            import psycopg

            self.pg = psycopg.connect(db)
            self.pg.read_only = True
        else:
            self.sqlite = sqlite3.connect(f"file:{db}?mode=ro", uri=True)

    def rows(self, query: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        if self.postgres:
            return self.pg.execute(query.replace("?", "%s"), params).fetchall()  # type: ignore[arg-type]
        return self.sqlite.execute(query, params).fetchall()

    def value(self, query: str, params: tuple[Any, ...] = ()) -> int:
        """A count or a sum, as an int (PostgreSQL's sum of BIGINTs is a NUMERIC)."""
        return int(self.rows(query, params)[0][0])

    def integrity_problems(self) -> list[str]:
        """SQLite checks its file; a PostgreSQL database has no such check (its deadlocks are
        reported by ``postgres_figures``)."""
        if self.postgres:
            return []
        integrity = self.rows("PRAGMA integrity_check")[0][0]
        return [] if integrity == "ok" else [f"integrity_check: {integrity}"]

    def close(self) -> None:
        (self.pg if self.postgres else self.sqlite).close()


def escalated_checks(run: Run, conn: StoreReader, view: dict[str, Any]) -> list[Check]:
    """One escalation for the task every process raced to escalate, however many fired it."""
    failures = run.acked.get(("record_failure", ESCALATED_TASK), set())
    expected = 1 if len(failures) >= ESCALATE_AT else 0
    occurrence_tags = {
        row[0]
        for row in conn.rows(
            "SELECT attempted_action FROM failure_occurrences WHERE task_id = ?", (ESCALATED_TASK,)
        )
    }
    stored = conn.value("SELECT COUNT(*) FROM escalations WHERE task_id = ?", (ESCALATED_TASK,))
    return [
        Check(ESCALATED_TASK, "escalations stored", expected, stored),
        Check(ESCALATED_TASK, "get_task escalation_count", expected, view["escalation_count"]),
        Check(ESCALATED_TASK, "escalation ids in the results", expected, len(run.escalation_ids)),
        Check(ESCALATED_TASK, "get_task failure_occurrences", len(failures), view["failure_occurrences"]),
        Check(
            ESCALATED_TASK,
            "acknowledged failures found by action",
            len(failures),
            len(failures & occurrence_tags),
        ),
    ]


def verify(run: Run, db: str, views: dict[str, dict[str, Any]]) -> tuple[list[Check], list[str]]:
    """Compare the store with the acknowledged calls; also returns integrity problems."""
    checks: list[Check] = []
    problems: list[str] = []
    conn = StoreReader(db)
    try:
        problems += conn.integrity_problems()
        for task_id, view in views.items():
            if task_id == ESCALATED_TASK:
                checks += escalated_checks(run, conn, view)
                continue
            failures = run.acked.get(("record_failure", task_id), set())
            reports = run.acked.get(("report_progress", task_id), set())
            counters = view["counters"]
            actions = {
                kind: int(n)
                for kind, n in conn.rows(
                    "SELECT kind, COUNT(*) FROM actions WHERE task_id = ? GROUP BY kind", (task_id,)
                )
            }
            occurrence_tags = Counter(
                row[0]
                for row in conn.rows(
                    "SELECT attempted_action FROM failure_occurrences WHERE task_id = ?", (task_id,)
                )
            )
            notes = Counter(
                row[0] for row in conn.rows("SELECT note FROM progress_reports WHERE task_id = ?", (task_id,))
            )
            occurrence_sum = conn.value(
                "SELECT COALESCE(SUM(occurrence_count), 0) FROM failures WHERE task_id = ?", (task_id,)
            )
            file_rows = conn.value("SELECT COUNT(*) FROM modified_files WHERE task_id = ?", (task_id,))
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
                Check(
                    task_id, "counters.verification_attempts", len(reports), counters["verification_attempts"]
                ),
                Check(task_id, "counters.files_modified", len(reports), counters["files_modified"]),
                # get_task lists the latest 50 files and counts them all
                Check(task_id, "get_task modified_count", len(reports), view["modified_count"]),
                Check(task_id, "modified_files rows", len(reports), file_rows),
                Check(task_id, "progress_reports rows", len(reports), sum(notes.values())),
                Check(task_id, "acknowledged reports found by note", len(reports), len(reports & set(notes))),
                Check(task_id, "actions report_progress", len(reports), actions.get("report_progress", 0)),
                Check(task_id, "escalations", 0, len(view["escalation_ids"])),
            ]
            for table, tags in (("failure_occurrences", occurrence_tags), ("progress_reports", notes)):
                duplicates = [tag for tag, n in tags.items() if n > 1]
                if duplicates:
                    problems.append(
                        f"{task_id}: {len(duplicates)} {table} rows stored twice, e.g. {duplicates[:3]}"
                    )
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
            # SQLite's busy store, PostgreSQL's lock conflicts
            if any(word in lower for word in ("busy", "locked", "deadlock", "could not serialize")):
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


async def prepare_store(db: str, project: Path, errlog: TextIO) -> None:
    """Create and migrate the store with one server first (``--existing-store``)."""
    params = StdioServerParameters(command=str(SERVER_SCRIPT), args=["--db", db], cwd=str(project))
    with anyio.fail_after(60):
        async with Client(stdio_client(params, errlog=errlog), mode="legacy") as client:  # type: ignore[arg-type]
            await client.list_tools()


def throughput(run: Run) -> float | None:
    """Answered calls per second over the concurrent phase (warm-up calls excluded)."""
    done = len(run.all_latencies())
    return done / run.phase_s if not math.isnan(run.phase_s) and run.phase_s > 0 else None


def print_latency(latency: dict[str, dict[str, float]]) -> None:
    header = f"{'calls':<24} {'n':>6} {'median ms':>10} {'p99 ms':>9} {'max ms':>9}"
    print(header)
    print("-" * len(header))
    for name, s in latency.items():
        if s["n"]:
            print(f"{name:<24} {s['n']:>6} {s['median_ms']:>10.2f} {s['p99_ms']:>9.2f} {s['max_ms']:>9.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--processes", type=int, default=8, help="server processes (default 8)")
    parser.add_argument(
        "--calls", type=int, default=100, help="calls per tool per task per process (default 100)"
    )
    parser.add_argument(
        "--timeout", type=float, default=90.0, help="give up on a concurrent phase after this (default 90 s)"
    )
    parser.add_argument(
        "--existing-store",
        action="store_true",
        help="create and migrate the store with one server first, so the processes do not race to create it",
    )
    parser.add_argument(
        "--escalation-calls",
        type=int,
        default=5,
        help=f"same-error record_failure calls per process on one task that must escalate once, "
        f"at the {ESCALATE_AT}rd occurrence (default 5; 0: none)",
    )
    parser.add_argument(
        "--backend",
        choices=("sqlite", "postgresql"),
        default="sqlite",
        help="the store: one SQLite file (default) or one database on a PostgreSQL server this run starts",
    )
    parser.add_argument("--no-baseline", action="store_true", help="skip the no-op servers run")
    parser.add_argument("--keep", metavar="DIR", type=Path, help="keep the store and server logs in DIR")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON ('-' for stdout)")
    args = parser.parse_args()
    json_out = sys.stdout
    if args.json == "-":
        sys.stdout = sys.stderr
    if not SERVER_SCRIPT.exists():
        parser.error(f"{SERVER_SCRIPT} not found: install the package into this interpreter's environment")
    if args.processes < 1 or args.calls < 1 or args.escalation_calls < 0:
        parser.error("--processes and --calls must be at least 1, --escalation-calls at least 0")
    if args.backend == "postgresql" and not backend_installed():
        parser.error("the installed mcp-server-escalation has no PostgreSQL backend")

    planned = 4 * args.calls * args.processes
    postgres: dict[str, Any] | None = None
    with ExitStack() as stack:
        workdir = args.keep or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="esc-conc-")))
        workdir.mkdir(parents=True, exist_ok=True)
        if (workdir / "shared.db").exists() or (workdir / "postgresql.log").exists():
            parser.error(f"{workdir} holds a store: --keep needs an empty directory")
        if args.backend == "postgresql":
            db, pg_server = stack.enter_context(postgres_database(keep_log=workdir / "postgresql.log"))
        else:
            db = str(workdir / "shared.db")
        project = workdir / "project"
        project.mkdir(exist_ok=True)

        legacy, auto = (args.processes + 1) // 2, args.processes // 2
        store = "existing" if args.existing_store else "new"
        print(
            f"{args.processes} server processes ({legacy} legacy, {auto} auto), "
            f"one {store} {args.backend} store, "
            f"{args.calls} record_failure + {args.calls} report_progress per process "
            f"on its own task and on the shared task ({planned} calls); first, {args.escalation_calls} "
            f"same-error record_failure per process on one task that must escalate once"
        )
        if args.existing_store:
            with (workdir / "prepare.stderr").open("w", encoding="utf-8") as errlog:
                anyio.run(prepare_store, db, project, errlog)
        run = Run(processes=args.processes, calls=args.calls, escalation_calls=args.escalation_calls)
        t_start = time.perf_counter()
        run_phase(run, worker, db, project, workdir, "server", args.timeout)
        total_s = time.perf_counter() - t_start

        task_ids = [SHARED_TASK] + [own_task(k) for k in range(args.processes)]
        if args.escalation_calls:
            task_ids.append(ESCALATED_TASK)
        views: dict[str, dict[str, Any]] = {}
        checks: list[Check] = []
        problems: list[str] = []
        try:
            with (workdir / "verifier.stderr").open("w", encoding="utf-8") as errlog:
                views = anyio.run(read_tasks, db, project, errlog, task_ids, problems)
            checks, found = verify(run, db, views)
            problems += found
        except Exception as exc:  # noqa: BLE001 (reported as a failed check, never hidden)
            problems.append(f"verification failed: {type(exc).__name__}: {exc}"[:400])
        stderr = scan_stderr(workdir, args.processes)
        if args.backend == "postgresql":
            postgres = postgres_figures(pg_server, db)

        baseline: Run | None = None
        if not args.no_baseline:
            baseline = Run(processes=args.processes, calls=args.calls)
            run_phase(baseline, noop_worker, db, project, workdir, "noop", args.timeout)

    answered = len(run.all_latencies())  # measured calls answered without error
    latency = (
        {"all": summarise(run.all_latencies())}
        | {
            f"{tool} {kind}": summarise(run.latencies.get((tool, kind), []))
            for tool in TOOLS
            for kind in ("own", "shared")
        }
        | {f"{mode} processes": summarise(run.by_mode.get(mode, [])) for mode in ("legacy", "auto")}
    )
    lost = sum(c.lost for c in checks)
    unexpected = sum(c.unexpected for c in checks)
    # A timeout leaves calls unanswered: each one counts as an error.
    errors = len(run.errors) + (max(0, planned - answered - len(run.errors)) if run.timed_out else 0)
    phase_s = run.phase_s
    measured = not math.isnan(phase_s) and phase_s > 0
    driver_cpu_share = (run.cpu_at_end - run.cpu_at_go) / phase_s if measured else None

    print(
        f"\nconcurrent phase {phase_s:.2f} s, {answered}/{planned} calls answered, "
        f"throughput {throughput(run) or 0:.0f} calls/s; whole run {total_s:.1f} s "
        f"(spawn + start_task per process: median {statistics.median(run.setup_s or [math.nan]):.2f} s)"
    )
    if driver_cpu_share is not None:
        print(f"the driver (all {args.processes} clients) used {driver_cpu_share:.2f} cores during the phase")
    print_latency(latency)

    comparison: dict[str, Any] | None = None
    if baseline is not None:
        base = summarise(baseline.all_latencies())
        if base["n"] and latency["all"]["n"]:
            comparison = {
                "noop_latency": base,
                "noop_throughput_calls_per_s": throughput(baseline),
                "noop_errors": len(baseline.errors),
                "ratio_median": latency["all"]["median_ms"] / base["median_ms"],
                "ratio_p99": latency["all"]["p99_ms"] / base["p99_ms"],
            }
            print(
                f"no-op servers, same clients and call pattern: median {base['median_ms']:.2f} ms, "
                f"p99 {base['p99_ms']:.2f} ms, {throughput(baseline) or 0:.0f} calls/s -> escalation server "
                f"{comparison['ratio_median']:.2f}x median, {comparison['ratio_p99']:.2f}x p99"
            )
        if baseline.errors:
            print(f"  no-op run errors: {len(baseline.errors)}, e.g. {baseline.errors[:2]}")

    print(f"\nstore checks ({len(checks)} on {len(views)} tasks):")
    for c in [c for c in checks if c.lost or c.unexpected][:20]:
        print(f"  {c.task_id}: {c.what}: expected {c.expected}, found {c.found}")
    shared = {c.what: c for c in checks if c.task_id == SHARED_TASK}
    for what in ("get_task failure_occurrences", "counters.verification_attempts", "counters.files_modified"):
        if what in shared:
            print(f"  shared task {what}: {shared[what].found} (expected {shared[what].expected})")
    for problem in problems:
        print(f"  problem: {problem}")
    print(
        f"server stderr: {stderr['busy_lines']} busy/locked/deadlock lines, "
        f"{stderr['tracebacks']} tracebacks, {stderr['error_lines']} error lines"
    )
    for line in stderr["samples"]:
        print(f"  {line}")
    for line in run.errors[:10]:
        print(f"  error: {line}")
    if run.escalations:
        print(f"  {len(run.escalations)} results carried an escalation, e.g. {run.escalations[:3]}")
    raced = {c.what: c for c in checks if c.task_id == ESCALATED_TASK}
    if "escalations stored" in raced:
        print(
            f"  escalated task: {raced['get_task failure_occurrences'].found} occurrences from "
            f"{args.processes} processes, {raced['escalations stored'].found} escalation(s) stored "
            f"(expected {raced['escalations stored'].expected}), ids in results {sorted(run.escalation_ids)}"
        )
    if run.timed_out:
        print(f"  TIMED OUT after {args.timeout:g} s")
    verdict_ok = not (errors or lost or unexpected or problems or run.escalations or run.timed_out)
    print(
        f"\nerrors {errors}, lost writes {lost}, unexpected writes {unexpected}, "
        f"escalations {len(run.escalations)}: {'PASS' if verdict_ok else 'FAIL'} "
        "(target: zero errors, zero lost writes)"
    )
    if postgres is not None:
        print(
            f"PostgreSQL {postgres.get('server_version')}: {postgres.get('deadlocks')} deadlocks, "
            f"{postgres.get('commits')} commits, {postgres.get('rollbacks')} rollbacks, "
            f"database {postgres.get('size_bytes', 0) / 1e6:.1f} MB"
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
        "existing_store": args.existing_store,
        "backend": args.backend,
        "postgres": postgres,
        "planned_calls": planned,
        "answered_calls": answered,
        "concurrent_phase_s": phase_s,
        "throughput_calls_per_s": throughput(run),
        "driver_cpu_cores": driver_cpu_share,
        "latency": latency,
        "baseline": comparison,
        "errors": errors,
        "error_samples": run.errors[:20],
        "lost_writes": lost,
        "unexpected_writes": unexpected,
        "escalations": len(run.escalations),
        "escalation_calls_per_process": args.escalation_calls,
        "escalation_ids_seen": sorted(run.escalation_ids),
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
