"""The benchmarks' PostgreSQL (benchmarks/postgres_support.py) and the concurrency
benchmark's store reader, which checks the writes on either backend with the same SQL."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import psycopg

import pg_local as pg

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from bench_concurrency import StoreReader  # benchmarks/ is not a package: the path entry above
from postgres_support import postgres_database, postgres_figures

# Whole numbers are BIGINT on PostgreSQL, and the sum of BIGINTs is NUMERIC (a Decimal).
TABLE = "CREATE TABLE failures (task_id text, occurrence_count bigint)"


def test_a_benchmark_database_runs_on_its_own_server_and_is_gone_afterwards(tmp_path: Path) -> None:
    log = tmp_path / "postgresql.log"
    with postgres_database("bench", keep_log=log) as (url, server):
        assert url == server.url("bench")
        with psycopg.connect(url) as conn:
            conn.execute(TABLE)
            conn.execute("INSERT INTO failures VALUES ('t', 1)")
        figures = postgres_figures(server, url)
        pid = server.postmaster_pid()
        root = server.root
    assert figures["database"] == "bench"
    assert figures["deadlocks"] == 0
    assert figures["commits"] > 0
    assert figures["size_bytes"] > 0
    assert "database system is ready to accept connections" in log.read_text(encoding="utf-8")
    assert pid is not None
    assert not pg.running_pid(pid)
    assert not root.exists()


def test_the_store_reader_asks_both_backends_the_same_question(tmp_path: Path, pg_url: str) -> None:
    rows = [("a", 2), ("a", 3), ("b", 7)]
    with psycopg.connect(pg_url) as conn:
        conn.execute(TABLE)
        for row in rows:
            conn.execute("INSERT INTO failures VALUES (%s, %s)", row)
    path = tmp_path / "store.db"
    with sqlite3.connect(path) as lite:
        lite.execute(TABLE)
        lite.executemany("INSERT INTO failures VALUES (?, ?)", rows)
    lite.close()
    for db in (pg_url, str(path)):
        reader = StoreReader(db)
        try:
            total = reader.value(
                "SELECT COALESCE(SUM(occurrence_count), 0) FROM failures WHERE task_id = ?", ("a",)
            )
            assert (total, type(total)) == (5, int), db
            assert reader.rows("SELECT task_id FROM failures WHERE occurrence_count > ?", (4,)) == [("b",)]
            assert reader.integrity_problems() == []
        finally:
            reader.close()
