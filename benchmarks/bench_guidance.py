"""get_guidance at scale: 100,000 active failure records in one project.

Seeds the store directly through SQL on a migrated store (one transaction of bulk inserts;
the FTS5 index is kept in step by its triggers, and each row carries the fingerprint and
the message key ``record_failure`` would give it), then runs realistic queries:

- in process, through the service: p50 and p99 of 1,000 queries (target p99 < 20 ms);
- over stdio, through the real SDK client against the installed console script: the median
  of ``get_guidance`` against a no-op tool of a minimal MCPServer (target within 2x).

The queries are errors of the shapes the store holds (what ``get_guidance`` asks without a
``query``: the step's latest failure, always in the store). The same figures for errors of
shapes the store has never seen are printed next to them (``NOVEL``), not judged.

With ``--pg URL`` (a PostgreSQL database the benchmark may create a schema in), the same
rows are copied into a PostgreSQL store too (with the search columns ``record_failure``
writes there), the in-process figures are measured on it as well, and the first queries'
answers are checked to be the same on both backends.

    python benchmarks/bench_guidance.py [--records 100000] [--queries 1000] [--stdio-calls 300]
                                        [--pg postgresql://...]
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
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

from mcp_server_escalation.rules import fts
from mcp_server_escalation.rules.fingerprint import fingerprint, message_key
from mcp_server_escalation.services import guidance, tasks
from mcp_server_escalation.services.runtime import open_runtime
from mcp_server_escalation.settings import Settings
from mcp_server_escalation.store import search_tokens
from mcp_server_escalation.store.db import Database

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


def _seed(db_path: str, records: int, rng: random.Random) -> float:
    async def migrate() -> None:
        db = await Database.open(db_path)
        await db.close()

    anyio.run(migrate)
    start = time.perf_counter()
    conn = sqlite3.connect(db_path, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    tasks_n = max(1, records // 1000)
    now = "2026-11-21T10:00:00.000Z"
    conn.executemany(
        "INSERT INTO tasks (task_id, title, project, agent_id, status, thresholds_json,"
        " created_at, updated_at) VALUES (?, 't', ?, 'a', 'active', '{}', ?, ?)",
        [(f"bench-{t}", PROJECT, now, now) for t in range(tasks_n)],
    )
    rows = []
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
    conn.executemany(
        "INSERT INTO failures (task_id, project, step, signal_type, classified_by, severity,"
        " fingerprint, message, message_key, recommended_adjustment, created_at, last_seen_at,"
        " occurrence_count, helpful_count, harmful_count)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    conn.execute("COMMIT")
    conn.execute("PRAGMA optimize")
    conn.close()
    return time.perf_counter() - start


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


# The failure columns the SQLite seed fills, as copied into PostgreSQL.
_COPIED = (
    "seq, task_id, project, step, signal_type, classified_by, severity, fingerprint, message,"
    " message_key, error_type, tool_name, recommended_adjustment, created_at, last_seen_at,"
    " occurrence_count, helpful_count, harmful_count, status"
)


def _tsvector(lexemes: list[str]) -> str:
    """A tsvector's text form of bare lexemes (quoted: no parser runs on them)."""
    return " ".join("'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'" for lexeme in lexemes)


def _copy_to_postgres(db_path: str, url: str) -> tuple[str, float]:
    """A new schema of ``url`` holding the SQLite store's tasks and failures, each record
    with the search columns ``record_failure`` writes there; its URL and the seconds taken."""
    import psycopg

    from mcp_server_escalation.store.postgres.database import PgDatabase

    schema = f"bench_{os.getpid()}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        admin.execute(f"CREATE SCHEMA {schema}")
    target = f"{url}{'&' if '?' in url else '?'}options=-csearch_path%3D{schema}"

    async def migrate() -> None:
        db = await PgDatabase.open(target)
        await db.close()

    anyio.run(migrate)
    start = time.perf_counter()
    source = sqlite3.connect(db_path)
    tokens = 0
    with psycopg.connect(target) as conn, conn.cursor() as cur:
        task_rows = source.execute(
            "SELECT task_id, title, project, agent_id, status, thresholds_json,"
            " created_at, updated_at FROM tasks"
        ).fetchall()
        with cur.copy(
            "COPY tasks (task_id, title, project, agent_id, status, thresholds_json,"
            " created_at, updated_at) FROM STDIN"
        ) as copy:
            for row in task_rows:
                copy.write_row(row)
        with cur.copy(f"COPY failures ({_COPIED}, search, search_terms, search_size) FROM STDIN") as copy:
            for row in source.execute(f"SELECT {_COPIED} FROM failures ORDER BY seq"):  # noqa: S608
                by_name = dict(zip([c.strip() for c in _COPIED.split(",")], row, strict=True))
                terms = search_tokens.record_terms([by_name[column] for column in fts.COLUMNS])
                tokens += terms.size
                copy.write_row((*row, _tsvector(list(terms.counts)), json.dumps(terms.counts), terms.size))
        cur.execute(
            "UPDATE failure_search_totals SET records = (SELECT count(*) FROM failures), tokens = %s",
            (tokens,),
        )
        cur.execute(
            "SELECT setval(pg_get_serial_sequence('failures', 'seq'), (SELECT max(seq) FROM failures))"
        )
        conn.commit()
        conn.autocommit = True
        conn.execute("VACUUM ANALYZE")
    source.close()
    return target, time.perf_counter() - start


def _drop_schema(url: str, target: str) -> None:
    import psycopg

    schema = target.rsplit("%3D", 1)[1]
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


async def _answers(db_path: str, queries: list[str]) -> list[list[tuple[str, float, bool]]]:
    async with open_runtime(Settings(db_path=db_path, project_root=PROJECT)) as rt:
        results = [
            await guidance.get_guidance(rt, task_id="probe", query=q, scope="project") for q in queries
        ]
    return [[(i.failure_id, i.score, i.exact_match) for i in r.items] for r in results]


def _postgres_figures(db_path: str, url: str, queries: list[str], novel: list[str]) -> dict[str, float]:
    """The in-process figures on PostgreSQL, after checking its answers against SQLite's."""
    target, seconds = _copy_to_postgres(db_path, url)
    try:
        checked = queries[:100] + novel[:100]
        # The probe task starts on both (the SQLite store has it from the runs before).
        pg_times = anyio.run(_in_process, target, queries)
        if anyio.run(_answers, db_path, checked) != anyio.run(_answers, target, checked):
            raise SystemExit("PostgreSQL's guidance differs from SQLite's on the same store")
        pg_novel = anyio.run(_in_process, target, novel)
    finally:
        _drop_schema(url, target)
    return {
        "pg_copy_s": round(seconds, 2),
        "pg_in_process_p50_ms": round(_pct(pg_times, 0.5), 2),
        "pg_in_process_p99_ms": round(_pct(pg_times, 0.99), 2),
        "pg_novel_in_process_p50_ms": round(_pct(pg_novel, 0.5), 2),
        "pg_novel_in_process_p99_ms": round(_pct(pg_novel, 0.99), 2),
    }


def _pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))] * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--stdio-calls", type=int, default=300)
    parser.add_argument("--json", help="write the figures to this file ('-' for stdout)")
    parser.add_argument("--pg", help="also measure on PostgreSQL: a database URL to create a schema in")
    args = parser.parse_args()
    rng = random.Random(20261121)  # noqa: S311 (reproducible data, not security)
    with tempfile.TemporaryDirectory() as tmp:
        db_path = str(Path(tmp) / "guidance.db")
        seeding = _seed(db_path, args.records, rng)
        queries = _queries(rng, args.queries)
        novel = _novel(rng, args.queries)
        times = anyio.run(_in_process, db_path, queries)
        novel_times = anyio.run(_in_process, db_path, novel)
        g_times, n_times = anyio.run(_stdio, db_path, queries, args.stdio_calls)
        novel_g, novel_n = anyio.run(_stdio, db_path, novel, args.stdio_calls)
        postgres = _postgres_figures(db_path, args.pg, queries, novel) if args.pg else {}
    figures: dict[str, float] = {
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
    print(f"records {int(figures['records']):,}  seeded in {figures['seeding_s']} s")
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
    if postgres:
        figures.update(postgres)
        pg = {key: figures[key] for key in postgres}
        print(
            f"PostgreSQL (same answers as SQLite): in process p50 {pg['pg_in_process_p50_ms']} ms"
            f"  p99 {pg['pg_in_process_p99_ms']} ms; novel p50 {pg['pg_novel_in_process_p50_ms']} ms"
            f"  p99 {pg['pg_novel_in_process_p99_ms']} ms  (copied in {pg['pg_copy_s']} s)"
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
