"""Where a tool call's time goes, in process (a diagnostic for ``bench_stdio.py``).

Serves ``mcp-server-escalation`` and the no-op server in this process through the SDK's
in-memory ``Client`` and splits each tool call into:

- the service call (``services.*``), and within it:
  - the store transactions (``database._once``: ``BEGIN`` .. ``COMMIT``, with the Python of the
    unit of work in between, in the store's thread) and how many there were;
  - the trips to the store's thread and back (``Worker.run`` minus the transactions in it);
  - the time SQLite itself spent in statements (``execute``/``executemany`` and the
    fetches that step a cursor) and how many statements ran, ``BEGIN``/``COMMIT``
    included;
  - the Python time in the service: the service time minus the SQLite time;
- everything outside the service: argument validation, result validation and
  serialisation, dispatch, and the client's validation of the structured result.

It times SQLite with a ``sqlite3.Connection`` subclass given to the store's connection
factory, and patches ``database._once``, ``Worker.run`` and the service functions the
adapters call, so it is a diagnostic, not a benchmark of record (the wrappers add a few
microseconds per statement). ``--cprofile DIR`` also writes one cProfile file per tool
(``python -m pstats DIR/record_failure.prof``).

``record_failure!`` is ``record_failure`` on a task that a repeated error has paused, the
stuck agent's path of ``bench_user_paths.py`` (default thresholds: the third repeat pages a
human, every later one refreshes the open escalation's evidence).

``get_feedback*`` is ``get_feedback`` on ``bench_feedback.py``'s heavy step (200 attempts,
3 escalation cycles, 20 review findings), seeded into a store of its own (its cProfile file
is ``get_feedback_heavy.prof``; ``--no-heavy`` skips it).

    python benchmarks/profile_tools.py
    python benchmarks/profile_tools.py --mode auto --calls 500 --cprofile /tmp/prof
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

import bench_feedback
import noop_server
from bench_stdio import ARGS, NO_ESCALATION
from bench_user_paths import STUCK_ERROR
from mcp_server_escalation.adapters.composition.server import build_server
from mcp_server_escalation.services import failures, feedback, progress
from mcp_server_escalation.settings import Settings
from mcp_server_escalation.store import database as database_module
from mcp_server_escalation.store import db as db_module
from mcp_server_escalation.store import worker as worker_module

# get_feedback last, as in bench_stdio: by then the task has the other tools' failures.
TOOLS = ("record_failure", "report_progress", "check_edit", "get_feedback")
SERVICES = (
    (failures, "record_failure"),
    (progress, "report_progress"),
    (progress, "check_edit"),
    (feedback, "get_feedback"),
)
HEAVY = "get_feedback*"  # bench_feedback.py's heavy step: 200 attempts, 3 cycles, 20 findings
PAUSED = "record_failure!"  # bench_user_paths.py's stuck agent: the same error on a paused task
COLUMNS = ("call", "svc", "txn", "hop", "sql", "py", "out")


class Meter:
    """Accumulators for one call, reset before it."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.service = 0.0
        self.transaction = 0.0
        self.transactions = 0
        self.trip = 0.0
        self.sqlite = 0.0
        self.statements = 0


METER = Meter()


class TimedCursor(sqlite3.Cursor):
    """A cursor whose fetches (which step the statement further) count as SQLite time."""

    def fetchone(self) -> Any:
        t0 = time.perf_counter()
        try:
            return super().fetchone()
        finally:
            METER.sqlite += time.perf_counter() - t0

    def fetchall(self) -> list[Any]:
        t0 = time.perf_counter()
        try:
            return super().fetchall()
        finally:
            METER.sqlite += time.perf_counter() - t0

    def fetchmany(self, size: int | None = None) -> list[Any]:
        t0 = time.perf_counter()
        try:
            return super().fetchmany(self.arraysize if size is None else size)
        finally:
            METER.sqlite += time.perf_counter() - t0

    def __next__(self) -> Any:
        t0 = time.perf_counter()
        try:
            return super().__next__()
        finally:
            METER.sqlite += time.perf_counter() - t0


class TimedConnection(sqlite3.Connection):
    """The store's connection, timing and counting every statement."""

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        cursor = self.cursor(TimedCursor)
        t0 = time.perf_counter()
        try:
            return cursor.execute(sql, parameters)
        finally:
            METER.sqlite += time.perf_counter() - t0
            METER.statements += 1

    def executemany(self, sql: str, parameters: Iterable[Any], /) -> sqlite3.Cursor:
        cursor = self.cursor(TimedCursor)
        t0 = time.perf_counter()
        try:
            return cursor.executemany(sql, parameters)
        finally:
            METER.sqlite += time.perf_counter() - t0
            METER.statements += 1


def instrument() -> None:
    """Patch the store and the services; returns nothing, changes this process only."""
    original_connect = sqlite3.connect

    def connect(database: Any, *args: Any, **kwargs: Any) -> sqlite3.Connection:
        kwargs.setdefault("factory", TimedConnection)
        return original_connect(database, *args, **kwargs)

    # The store calls ``sqlite3.connect`` through its module: give it the timed factory.
    db_module.sqlite3 = _SqliteProxy(connect)  # type: ignore[assignment]

    original_run = database_module._once
    original_trip = worker_module.Worker.run

    def _run(kind: Any, conn: Any, fn: Callable[..., Any], *, write: bool) -> Any:
        t0 = time.perf_counter()
        try:
            return original_run(kind, conn, fn, write=write)
        finally:
            METER.transaction += time.perf_counter() - t0
            METER.transactions += 1

    async def trip(self: worker_module.Worker, fn: Callable[..., Any]) -> Any:
        t0 = time.perf_counter()
        try:
            return await original_trip(self, fn)
        finally:
            METER.trip += time.perf_counter() - t0

    database_module._once = _run
    worker_module.Worker.run = trip  # type: ignore[method-assign]

    for module, name in SERVICES:
        service = getattr(module, name)

        @functools.wraps(service)
        async def timed_service(*args: Any, _service: Any = service, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return await _service(*args, **kwargs)
            finally:
                METER.service += time.perf_counter() - t0

        setattr(module, name, timed_service)


class _SqliteProxy:
    """``sqlite3`` as the store module sees it, with ``connect`` replaced."""

    def __init__(self, connect: Callable[..., sqlite3.Connection]) -> None:
        self.connect = connect

    def __getattr__(self, name: str) -> Any:
        return getattr(sqlite3, name)


def check_instrumented(settings: Settings) -> None:
    """Fail loudly if the store no longer goes through the patched paths."""

    async def probe() -> None:
        database = await db_module.Database.open(settings.db_path)
        try:
            if not isinstance(database.connections._writer._conn, TimedConnection):
                raise SystemExit(
                    "profile_tools: the store no longer opens via sqlite3.connect; update the script"
                )
            METER.reset()
            await database.read(lambda conn: conn.execute("SELECT 1").fetchone())
            if METER.transactions != 1 or METER.statements < 2:
                raise SystemExit("profile_tools: database._once is no longer used; update the script")
        finally:
            await database.close()

    anyio.run(probe)


def median_ms(values: list[float]) -> float:
    return statistics.median(values) * 1000


async def measure(
    client: Client,
    tool: str,
    make: Callable[[int], dict[str, Any]],
    calls: int,
    warmup: int,
    base: float,
    profile_dir: Path | None,
    label: str | None = None,
) -> dict[str, Any]:
    """Time ``calls`` calls of ``tool`` after ``warmup`` ones; print and return the medians."""
    label = label or tool
    for i in range(warmup):
        await client.call_tool(tool, make(i))
    rows: dict[str, list[float]] = {k: [] for k in COLUMNS}
    transactions: list[int] = []
    statements: list[int] = []
    escalated = 0
    profiler = cProfile.Profile() if profile_dir else None
    for i in range(warmup, warmup + calls):
        args = make(i)
        METER.reset()
        if profiler:
            profiler.enable()
        t0 = time.perf_counter()
        result = await client.call_tool(tool, args)
        elapsed = time.perf_counter() - t0
        if profiler:
            profiler.disable()
        if result.is_error:
            raise RuntimeError(f"{tool} failed: {result.content}")
        if (result.structured_content or {}).get("escalation"):
            escalated += 1
        rows["call"].append(elapsed)
        rows["svc"].append(METER.service)
        rows["txn"].append(METER.transaction)
        rows["hop"].append(METER.trip - METER.transaction)
        rows["sql"].append(METER.sqlite)
        rows["py"].append(METER.service - METER.sqlite)
        rows["out"].append(elapsed - METER.service)
        transactions.append(METER.transactions)
        statements.append(METER.statements)
    m = {k: median_ms(v) for k, v in rows.items()}
    entry: dict[str, Any] = {f"{k}_median_ms": v for k, v in m.items()}
    entry["transactions_median"] = statistics.median(transactions)
    entry["statements_median"] = statistics.median(statements)
    entry["escalations"] = escalated
    entry["ratio_call_vs_noop"] = m["call"] / base
    entry["ratio_outside_vs_noop"] = m["out"] / base
    print(
        f"{label:<16} {m['call']:>7.3f} {m['svc']:>8.3f} {m['txn']:>7.3f} {m['hop']:>7.3f} {m['sql']:>7.3f} "
        f"{entry['statements_median']:>6.0f} {m['py']:>10.3f} {m['out']:>12.3f}  "
        f"(call {entry['ratio_call_vs_noop']:.2f}x, "
        f"outside {entry['ratio_outside_vs_noop']:.2f}x noop; "
        f"{entry['transactions_median']:.0f} txn)"
    )
    if escalated:
        print(f"  note: {escalated} results escalated")
    if profiler and profile_dir:
        profiler.dump_stats(profile_dir / f"{label.replace('*', '_heavy').replace('!', '_paused')}.prof")
    return entry


async def _measure_paused(
    client: Client, project: str, calls: int, warmup: int, base: float, profile_dir: Path | None
) -> dict[str, Any]:
    """``record_failure`` repeated on a task its repeated error paused (``bench_user_paths.py``)."""
    arguments = {"task_id": "stuck", "message": STUCK_ERROR}
    await client.call_tool("start_task", {"title": "stuck", "task_id": "stuck", "project": project})
    for _ in range(3):
        said = await client.call_tool("record_failure", arguments)
    if (said.structured_content or {}).get("directive") != "pause":
        raise RuntimeError(f"the repeated error did not pause the task: {said.content}")
    same = lambda _i: arguments  # noqa: E731 (the stuck agent sends the same report each time)
    return await measure(client, "record_failure", same, calls, warmup, base, profile_dir, PAUSED)


async def run(
    mode: str, calls: int, warmup: int, profile_dir: Path | None, db_path: str, heavy_db: str | None
) -> dict[str, Any]:
    settings = Settings.from_sources(db=db_path, config=None, role="agent", prompts=None)
    project = str(Path(db_path).parent)
    server = build_server(settings)
    report: dict[str, Any] = {"mode": mode, "calls": calls, "warmup": warmup, "tools": {}}
    async with Client(server, mode=mode) as esc, Client(noop_server.mcp, mode=mode) as noop:  # type: ignore[arg-type]
        started = await esc.call_tool(
            "start_task", {"title": "profile", "project": project, "thresholds": NO_ESCALATION}
        )
        if started.is_error or started.structured_content is None:
            raise RuntimeError(f"start_task failed: {started.content}")
        task_id = started.structured_content["task_id"]

        noop_times = []
        for i in range(warmup + calls):
            t0 = time.perf_counter()
            await noop.call_tool("noop", {"text": f"call {i}"})
            if i >= warmup:
                noop_times.append(time.perf_counter() - t0)
        base = median_ms(noop_times)
        report["noop_median_ms"] = base
        print(f"\nin-process, mode={mode}, {calls} calls/tool; noop median {base:.3f} ms")
        print(
            f"{'tool':<16} {'call':>7} {'service':>8} {'txn':>7} {'hop':>7} {'sqlite':>7} {'stmts':>6} "
            f"{'py in svc':>10} {'outside svc':>12}  (ms, medians; txn/stmts per call)"
        )
        for tool in TOOLS:
            make = ARGS[tool]
            entry = await measure(
                esc, tool, lambda i, make=make: make(task_id, i), calls, warmup, base, profile_dir
            )
            report["tools"][tool] = entry
        report["tools"][PAUSED] = await _measure_paused(esc, project, calls, warmup, base, profile_dir)
        if heavy_db:
            heavy = build_server(Settings.from_sources(db=heavy_db, config=None, role="agent", prompts=None))
            async with Client(heavy, mode=mode) as esc_heavy:  # type: ignore[arg-type]
                arguments = {"task_id": bench_feedback.TASK, "step": bench_feedback.STEP}
                entry = await measure(
                    esc_heavy, "get_feedback", lambda _i: arguments, calls, warmup, base, profile_dir, HEAVY
                )
                report["tools"][HEAVY] = entry
        if profile_dir:
            print(f"cProfile files in {profile_dir} (timings above are inflated by the profiler)")
    print(
        "txn = BEGIN..COMMIT including the Python of the unit of work; hop = the trips to the "
        "store's thread and back;\nsqlite = time inside statements and fetches; "
        "py in svc = service - sqlite; outside svc = call - service "
        "(SDK validation, serialisation, dispatch, client)."
    )
    return report


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=300, help="measured calls per tool (default 300)")
    parser.add_argument("--warmup", type=int, default=30, help="unmeasured calls per tool first (default 30)")
    parser.add_argument("--mode", choices=["legacy", "auto", "both"], default="legacy")
    parser.add_argument("--cprofile", metavar="DIR", type=Path, help="also write cProfile files here")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON ('-' for stdout)")
    parser.add_argument("--no-heavy", action="store_true", help="skip get_feedback on the heavy step")
    args = parser.parse_args()
    json_out = sys.stdout
    if args.json == "-":
        sys.stdout = sys.stderr
    if args.cprofile:
        args.cprofile.mkdir(parents=True, exist_ok=True)
    instrument()
    modes = ["legacy", "auto"] if args.mode == "both" else [args.mode]
    results = []
    with tempfile.TemporaryDirectory(prefix="esc-prof-") as tmp:
        settings = Settings.from_sources(
            db=str(Path(tmp) / "probe.db"), config=None, role="agent", prompts=None
        )
        check_instrumented(settings)
        for mode in modes:
            db_path = str(Path(tmp) / f"prof-{mode}.db")
            heavy_db = None
            if not args.no_heavy:
                heavy_db = str(Path(tmp) / f"heavy-{mode}.db")
                anyio.run(bench_feedback.seed, heavy_db)
            results.append(anyio.run(run, mode, args.calls, args.warmup, args.cprofile, db_path, heavy_db))
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    if load:
        print(f"\nload average {load[0]:.2f}")
    report = {"benchmark": "in-process profile (diagnostic)", "load_average": load, "results": results}
    if args.json == "-":
        json_out.write(json.dumps(report, indent=2) + "\n")
    elif args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
