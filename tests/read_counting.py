"""The SELECTs one service call runs, counted on the store's own writer connection.

Every statement the call runs is traced (``sqlite3``'s trace callback on the writer), and
each SELECT is counted by the table it reads and by its text, so a test can say how often
a call reads the task row and whether any one statement runs twice.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import TypeVar

from mcp_server_escalation.services.runtime import Runtime

T = TypeVar("T")

TABLES = ("tasks", "escalations")


async def traced_reads(rt: Runtime, call: Callable[[], Awaitable[T]]) -> tuple[Counter[str], T]:
    """The SELECTs ``call`` ran, by the table they read and by their text, and its result."""
    statements: list[str] = []

    def trace(conn: sqlite3.Connection) -> None:
        conn.set_trace_callback(statements.append)

    def untrace(conn: sqlite3.Connection) -> None:
        conn.set_trace_callback(None)

    await rt.db.write(trace)
    try:
        result = await call()
    finally:
        await rt.db.write(untrace)
    return _counted(statements), result


def _counted(statements: list[str]) -> Counter[str]:
    reads: Counter[str] = Counter()
    for sql in statements:
        words = " ".join(sql.split())
        if not words.upper().startswith("SELECT"):
            continue  # the store's own statements (BEGIN, COMMIT) and nested ones ("-- ...")
        for table in TABLES:
            if f" FROM {table} " in f"{words} ":
                reads[table] += 1
                reads[words] += 1
    return reads


def repeated(reads: Counter[str]) -> list[str]:
    """The statements run more than once."""
    return [sql for sql, count in reads.items() if sql not in TABLES and count > 1]
