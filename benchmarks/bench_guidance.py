"""get_guidance at scale: 100,000 active failure records in one project.

Seeds the store directly through SQL on a migrated store (one transaction of bulk inserts,
COPY on PostgreSQL, with the search columns ``record_failure`` writes there; each row carries
the fingerprint and the message key ``record_failure`` would give it), then runs realistic
queries:

- in process, through the service: p50 and p99 of 1,000 queries (target p99 < 20 ms);
- over stdio, through the real SDK client against the installed console script: the median
  of ``get_guidance`` against a no-op tool of a minimal MCPServer (target within 2x).

The queries are errors of the shapes the store holds (what ``get_guidance`` asks without a
``query``: the step's latest failure, always in the store). The same figures for errors of
shapes the store has never seen are printed next to them (``NOVEL``), not judged.

    python benchmarks/bench_guidance.py [--records 100000] [--queries 1000] [--stdio-calls 300]
    python benchmarks/bench_guidance.py --backend postgresql   # on a server the run starts
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from mcp_server_escalation.rules.guidance import fts
from mcp_server_escalation.rules.reading.fingerprint import fingerprint, message_key
from mcp_server_escalation.services import guidance, tasks
from mcp_server_escalation.services.runtime import open_runtime
from mcp_server_escalation.settings import Settings
from mcp_server_escalation.store import search_tokens
from postgres_support import POSTGRES_SCHEMES, backend_installed, postgres_database

HERE = Path(__file__).resolve().parent
SCRIPT = Path(sys.executable).parent / "mcp-server-escalation"
PROJECT = "/bench/project"

ERRORS = [
    "TypeError: cannot read properties of undefined (reading '{w}')",
    "ModuleNotFoundError: No module named '{w}'",
    "AssertionError: expected {n} but got {m} in test_{w}",
    "KeyError: '{w}' while handling request",
    "ImportError: cannot import name '{w}' from 'pkg_{n}'",
    "FAILED tests/test_{w}.py::test_case_{n} - ValueError: bad {w}",
    "error TS2339: Property '{w}' does not exist on type 'State'",
    "E501 line too long ({n} > 100 characters) in {w}.py",
    "Timeout after {n}s waiting for {w} service",
    "PermissionError: [Errno 13] Permission denied: '/var/{w}/data'",
]
WORDS = [
    f"{a}{b}"
    for a in (
        "user",
        "order",
        "cart",
        "auth",
        "token",
        "cache",
        "index",
        "route",
        "model",
        "query",
        "event",
        "stream",
        "parser",
        "schema",
        "client",
    )
    for b in ("", "_id", "_name", "_list", "_map", "_ref", "_key", "_url")
]
ADVICE = [
    "check for None before access",
    "pin the dependency version",
    "update the fixture",
    "paginate the response",
    "add the missing import",
    "increase the timeout",
    "run the formatter",
    "use the read-only path",
]


TASK_COLUMNS = (
    "task_id",
    "title",
    "project",
    "agent_id",
    "status",
    "thresholds_json",
    "created_at",
    "updated_at",
)
FAILURE_COLUMNS = (
    "task_id", "project", "step", "signal_type", "classified_by", "severity", "fingerprint", "message",
    "message_key", "recommended_adjustment", "created_at", "last_seen_at", "occurrence_count",
    "helpful_count", "harmful_count",
)  # fmt: skip


def _seed(db_path: str, records: int, rng: random.Random) -> float:
    """A migrated store holding ``records`` failures; the seconds the inserts took."""

    async def migrate() -> None:
        async with open_runtime(Settings(db_path=db_path, project_root=PROJECT)):
            pass

    anyio.run(migrate)
    task_rows, failure_rows = _rows(records, rng)
    start = time.perf_counter()
    if db_path.startswith(POSTGRES_SCHEMES):
        _insert_postgres(db_path, task_rows, failure_rows)
    else:
        _insert_sqlite(db_path, task_rows, failure_rows)
    return time.perf_counter() - start


def _rows(records: int, rng: random.Random) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """Tasks and failure records, each carrying the fingerprint and message key
    ``record_failure`` would give it."""
    tasks_n = max(1, records // 1000)
    now = "2026-11-21T10:00:00.000Z"
    task_rows: list[tuple[Any, ...]] = [
        (f"bench-{t}", "t", PROJECT, "a", "active", "{}", now, now) for t in range(tasks_n)
    ]
    rows: list[tuple[Any, ...]] = []
    for i in range(records):
        template = ERRORS[i % len(ERRORS)]
        message = template.format(w=rng.choice(WORDS), n=rng.randint(1, 500), m=rng.randint(1, 500))
        seen = f"2026-{rng.randint(1, 11):02d}-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:00:00.000Z"
        step = rng.choice(["main", "gen_patch", "run_tests", "lint"])
        fp = fingerprint(signal_type="runtime_error", step=step, message=message, error_code=str(i))
        rows.append(
            (
                f"bench-{i % tasks_n}",
                PROJECT,
                step,
                "runtime_error",
                "bench",
                rng.choice(["low", "medium", "high", "critical"]),
                fp,
                message,
                message_key(message),
                rng.choice(ADVICE),
                seen,
                seen,
                rng.randint(1, 30),
                rng.randint(0, 5),
                rng.randint(0, 3),
            )
        )
    return task_rows, rows


def _insert_sqlite(
    db_path: str, task_rows: list[tuple[Any, ...]], failure_rows: list[tuple[Any, ...]]
) -> None:
    """One transaction of bulk inserts; the FTS5 index follows through its triggers."""
    conn = sqlite3.connect(db_path, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    for table, columns, rows in (
        ("tasks", TASK_COLUMNS, task_rows),
        ("failures", FAILURE_COLUMNS, failure_rows),
    ):
        marks = ", ".join("?" * len(columns))
        conn.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})", rows)  # noqa: S608 (constants)
    conn.execute("COMMIT")
    conn.execute("PRAGMA optimize")
    conn.close()


def _insert_postgres(url: str, task_rows: list[tuple[Any, ...]], failure_rows: list[tuple[Any, ...]]) -> None:
    """COPY in one transaction, each record with the search columns ``record_failure``
    writes on PostgreSQL (its tokens as FTS5 makes them, their counts) and the index's
    totals, then ANALYZE for the planner."""
    import psycopg

    searched = [*FAILURE_COLUMNS, "search", "search_terms", "search_size"]
    indexed = [FAILURE_COLUMNS.index(column) if column in FAILURE_COLUMNS else None for column in fts.COLUMNS]
    tokens = 0
    with psycopg.connect(url) as conn, conn.cursor() as cur:
        with cur.copy(f"COPY tasks ({', '.join(TASK_COLUMNS)}) FROM STDIN") as copy:
            for row in task_rows:
                copy.write_row(row)
        with cur.copy(f"COPY failures ({', '.join(searched)}) FROM STDIN") as copy:
            for row in failure_rows:
                terms = search_tokens.record_terms([row[i] if i is not None else None for i in indexed])
                tokens += terms.size
                copy.write_row((*row, _tsvector(list(terms.counts)), json.dumps(terms.counts), terms.size))
        cur.execute(
            "UPDATE failure_search_totals SET records = records + %s, tokens = tokens + %s",
            (len(failure_rows), tokens),
        )
        conn.commit()
        conn.autocommit = True
        cur.execute("ANALYZE")


def _tsvector(lexemes: list[str]) -> str:
    """A tsvector's text form of bare lexemes (quoted: no parser runs on them)."""
    return " ".join("'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'" for lexeme in lexemes)


# Errors no record of the store has the shape of: no exact match, and on this store's
# small vocabulary every word they share with it is common. Reported next to the target,
# which is judged on the errors the store has seen before (what get_guidance asks by
# default: the step's latest failure, which is always in the store).
NOVEL = [
    "RuntimeError: event loop is closed while awaiting {w}",
    "ConnectionResetError: [Errno 104] Connection reset by peer during {w} upload",
    "django.db.utils.OperationalError: no such table: {w}",
    "warning: unused variable '{w}' in render at line {n}",
    "OSError: [Errno 28] No space left on device while writing {w}",
]


def _novel(rng: random.Random, n: int) -> list[str]:
    return [rng.choice(NOVEL).format(w=rng.choice(WORDS), n=rng.randint(1, 500)) for _ in range(n)]


def _queries(rng: random.Random, n: int) -> list[str]:
    return [
        ERRORS[rng.randrange(len(ERRORS))].format(
            w=rng.choice(WORDS), n=rng.randint(1, 500), m=rng.randint(1, 500)
        )
        for _ in range(n)
    ]


async def _in_process(db_path: str, queries: list[str]) -> list[float]:
    settings = Settings(db_path=db_path, project_root=PROJECT)
    async with open_runtime(settings) as rt:
        await tasks.start_task(rt, title="probe", task_id="probe", project=PROJECT)
        for q in queries[:20]:
            await guidance.get_guidance(rt, task_id="probe", query=q, scope="project")
        times = []
        for q in queries:
            t = time.perf_counter()
            result = await guidance.get_guidance(rt, task_id="probe", query=q, scope="project")
            times.append(time.perf_counter() - t)
            if not result.items:
                raise SystemExit(f"no guidance for {q!r}: the benchmark would not measure ranking")
    return times


async def _stdio(db_path: str, queries: list[str], calls: int) -> tuple[list[float], list[float]]:
    ours = StdioServerParameters(command=str(SCRIPT), args=["--db", db_path])
    noop = StdioServerParameters(command=sys.executable, args=[str(HERE / "noop_server.py")])
    g_times: list[float] = []
    n_times: list[float] = []
    async with Client(ours, mode="legacy") as c, Client(noop, mode="legacy") as n:  # type: ignore[arg-type]
        arguments = {"task_id": "probe", "scope": "project"}
        for q in queries[:20]:
            await c.call_tool("get_guidance", {**arguments, "query": q})
            await n.call_tool("noop", {})
        for i in range(calls):
            t = time.perf_counter()
            r = await c.call_tool("get_guidance", {**arguments, "query": queries[i % len(queries)]})
            g_times.append(time.perf_counter() - t)
            if r.is_error:
                raise SystemExit(f"get_guidance failed: {r.content}")
            t = time.perf_counter()
            await n.call_tool("noop", {})
            n_times.append(time.perf_counter() - t)
    return g_times, n_times


def _pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))] * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--stdio-calls", type=int, default=300)
    parser.add_argument(
        "--backend",
        choices=["sqlite", "postgresql"],
        default="sqlite",
        help="the store: a SQLite file (default) or a database on a PostgreSQL server this run starts",
    )
    parser.add_argument("--json", help="write the figures to this file ('-' for stdout)")
    args = parser.parse_args()
    if args.backend == "postgresql" and not backend_installed():
        parser.error("the installed mcp-server-escalation has no PostgreSQL backend")
    rng = random.Random(20261121)  # noqa: S311 (reproducible data, not security)
    with ExitStack() as stack:
        if args.backend == "postgresql":
            db_path, _ = stack.enter_context(postgres_database("guidance"))
        else:
            db_path = str(Path(stack.enter_context(tempfile.TemporaryDirectory())) / "guidance.db")
        seeding = _seed(db_path, args.records, rng)
        queries = _queries(rng, args.queries)
        novel = _novel(rng, args.queries)
        times = anyio.run(_in_process, db_path, queries)
        novel_times = anyio.run(_in_process, db_path, novel)
        g_times, n_times = anyio.run(_stdio, db_path, queries, args.stdio_calls)
        novel_g, novel_n = anyio.run(_stdio, db_path, novel, args.stdio_calls)
    figures: dict[str, Any] = {
        "backend": args.backend,
        "records": args.records,
        "seeding_s": round(seeding, 2),
        "in_process_p50_ms": round(_pct(times, 0.5), 2),
        "in_process_p99_ms": round(_pct(times, 0.99), 2),
        "stdio_median_ms": round(statistics.median(g_times) * 1000, 2),
        "noop_median_ms": round(statistics.median(n_times) * 1000, 2),
        "novel_in_process_p50_ms": round(_pct(novel_times, 0.5), 2),
        "novel_in_process_p99_ms": round(_pct(novel_times, 0.99), 2),
        "novel_stdio_median_ms": round(statistics.median(novel_g) * 1000, 2),
        "novel_noop_median_ms": round(statistics.median(novel_n) * 1000, 2),
    }
    figures["stdio_ratio"] = round(figures["stdio_median_ms"] / figures["noop_median_ms"], 2)
    novel_ratio = figures["novel_stdio_median_ms"] / figures["novel_noop_median_ms"]
    figures["novel_stdio_ratio"] = round(novel_ratio, 2)
    print(f"{args.backend}: records {int(figures['records']):,}  seeded in {figures['seeding_s']} s")
    print(
        f"in process  p50 {figures['in_process_p50_ms']} ms  p99 {figures['in_process_p99_ms']} ms"
        "  (target p99 < 20 ms)"
    )
    print(
        f"over stdio  median {figures['stdio_median_ms']} ms vs no-op {figures['noop_median_ms']} ms"
        f" = {figures['stdio_ratio']}x  (target <= 2x)"
    )
    print(
        f"novel errors (not a target): in process p50 {figures['novel_in_process_p50_ms']} ms"
        f"  p99 {figures['novel_in_process_p99_ms']} ms; over stdio {figures['novel_stdio_median_ms']} ms"
        f" vs no-op {figures['novel_noop_median_ms']} ms = {figures['novel_stdio_ratio']}x"
    )
    print(f"load average {os.getloadavg()[0]:.2f}")
    if args.json:
        text = json.dumps(figures, indent=2)
        if args.json == "-":
            print(text)
        else:
            Path(args.json).write_text(text + "\n", encoding="utf-8")
    ok = figures["in_process_p99_ms"] < 20 and figures["stdio_ratio"] <= 2
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
