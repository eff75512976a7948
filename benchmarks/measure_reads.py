"""Not a timing: the SELECTs one hot call runs, counted on a real SQLite store.

``record_failure``, ``report_progress`` and ``check_edit`` read the task row once and pass
it down (``task_is_current``, ``Fired.task``); a failure that fires reads the open
escalation once, the escalation it wrote once and what holds the task once; a repeat that
refreshes the open escalation builds its new revision from the one it read. ``get_escalation``
reads the escalation it names once (``by id``), whether the answer is new, delivered by the
call, or a poll that finds nothing new. Each call's statements are traced on the store's
connections (``sqlite3``'s trace callback; the writer's, and the reader's of each read the
call runs) and every SELECT is counted by the table it reads and by its text. The script prints the counts
of each call beside its budget and exits with status 1 when a call reads more than its
budget or runs a statement twice that it should run once.

    python benchmarks/measure_reads.py
    python benchmarks/measure_reads.py --json reads.json
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
import sys
import tempfile
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from mcp_server_escalation.models.failures import FailureReport
from mcp_server_escalation.models.thresholds import ThresholdOverrides
from mcp_server_escalation.services.escalation_answers import resolve_escalation
from mcp_server_escalation.services.escalation_delivery import get_escalation
from mcp_server_escalation.services.escalation_raising import raise_escalation
from mcp_server_escalation.services.failures import record_failure
from mcp_server_escalation.services.progress import check_edit, report_progress
from mcp_server_escalation.services.runtime import Runtime, open_runtime
from mcp_server_escalation.services.tasks import start_task
from mcp_server_escalation.settings import Settings

TABLES = ("tasks", "escalations")
SAME_ERROR = FailureReport(
    task_id="t-1", message="AssertionError: expected 3, got 4", file="/p/calc.py", line=7
)


@dataclass
class Shape:
    """One measured call: what comes before it, the call, and what it may read."""

    name: str
    before: Callable[[Runtime], Awaitable[None]]
    call: Callable[[Runtime], Awaitable[Any]]
    fires: bool
    tasks: int
    escalations: int | None  # None: not budgeted
    # Tables whose statements may run twice: what holds the task is read before an edit
    # check (a held task refuses every path) and again after its writes.
    may_repeat: tuple[str, ...] = ()
    # How often it may read the escalation it names by its id (None: not budgeted).
    by_id: int | None = None


async def failures(rt: Runtime, count: int) -> None:
    for _ in range(count):
        await record_failure(rt, SAME_ERROR)


async def nothing(_rt: Runtime) -> None:
    return None


async def one_progress_report(rt: Runtime) -> None:
    await report_progress(rt, task_id="t-1", tests_passed=1, tests_failed=1)


async def two_edits(rt: Runtime) -> None:
    await check_edit(rt, task_id="t-1", paths=["/p/src/a.py", "/p/src/b.py"])


async def a_question(rt: Runtime) -> None:
    await raise_escalation(rt, task_id="t-1", reason="Which database?")


async def an_answer(rt: Runtime) -> None:
    await a_question(rt)
    await resolve_escalation(rt, escalation_id=1, response_type="guidance", content="SQLite", role="operator")


def poll(known_revision: int | None = None) -> Callable[[Runtime], Awaitable[Any]]:
    return lambda rt: get_escalation(rt, escalation_id=1, known_revision=known_revision)


SHAPES = (
    Shape("record_failure, the third in a row (fires)", lambda rt: failures(rt, 2),
          lambda rt: record_failure(rt, SAME_ERROR), fires=True, tasks=1, escalations=3),
    Shape("record_failure, the first (fires nothing)", nothing,
          lambda rt: record_failure(rt, SAME_ERROR), fires=False, tasks=1, escalations=1),
    Shape("record_failure, the fourth (refreshes)", lambda rt: failures(rt, 3),
          lambda rt: record_failure(rt, SAME_ERROR), fires=False, tasks=1, escalations=2),
    Shape("report_progress, no changed file (fires)", one_progress_report,
          lambda rt: report_progress(rt, task_id="t-1", tests_passed=1, tests_failed=1),
          fires=True, tasks=1, escalations=None),
    Shape("check_edit, a third file (fires)", two_edits,
          lambda rt: check_edit(rt, task_id="t-1", paths=["/p/src/c.py"]),
          fires=True, tasks=1, escalations=None, may_repeat=("escalations",)),
    Shape("check_edit, allowed", nothing,
          lambda rt: check_edit(rt, task_id="t-1", paths=["/p/src/a.py"]),
          fires=False, tasks=1, escalations=None, may_repeat=("escalations",)),
    Shape("get_escalation, the answer (delivers it)", an_answer, poll(), fires=True,
          tasks=1, escalations=None, by_id=1),
    Shape("get_escalation, pending", a_question, poll(), fires=True,
          tasks=1, escalations=None, by_id=1),
    Shape("get_escalation, unchanged (known revision)", a_question, poll(known_revision=1),
          fires=False, tasks=1, escalations=None, by_id=1),
)  # fmt: skip


async def traced_reads(rt: Runtime, call: Callable[[], Awaitable[Any]]) -> tuple[list[str], Any]:
    """The SELECTs ``call`` ran on the writer and in its reads, whitespace collapsed, and its
    result."""
    statements: list[str] = []

    def trace(conn: sqlite3.Connection) -> None:
        conn.set_trace_callback(statements.append)

    def untrace(conn: sqlite3.Connection) -> None:
        conn.set_trace_callback(None)

    def traced(fn: Callable[[sqlite3.Connection], Any]) -> Callable[[sqlite3.Connection], Any]:
        def run(conn: sqlite3.Connection) -> Any:
            trace(conn)
            try:
                return fn(conn)
            finally:
                untrace(conn)

        return run

    read = rt.db.read
    await rt.db.write(trace)
    rt.db.read = lambda fn: read(traced(fn))  # type: ignore[method-assign]
    try:
        result = await call()
    finally:
        rt.db.read = read  # type: ignore[method-assign]
        await rt.db.write(untrace)
    # The store's own statements (BEGIN, COMMIT) and nested ones ("-- ...") are left out.
    selects = [" ".join(sql.split()) for sql in statements]
    return [sql for sql in selects if sql.upper().startswith("SELECT")], result


_BY_ID = re.compile(r"\bFROM escalations WHERE escalation_id = (\?|\d+)\b")


def table_of(sql: str) -> str | None:
    return next((table for table in TABLES if f" FROM {table} " in f"{sql} "), None)


async def measure(shape: Shape, folder: Path) -> dict[str, Any]:
    settings = Settings(db_path=str(folder / "escalations.db"), project_root="/p")
    async with open_runtime(settings) as rt:
        await start_task(
            rt,
            title="t",
            task_id="t-1",
            scope=["src/**"],
            thresholds=ThresholdOverrides(no_file_changes_after_attempts=2, files_modified_exceeds=2),
        )
        await shape.before(rt)
        selects, result = await traced_reads(rt, lambda: shape.call(rt))
    fired = getattr(result, "escalation", None) is not None
    by_table = Counter(table_of(sql) for sql in selects)
    by_id = sum(1 for sql in selects if _BY_ID.search(sql))
    repeated = sorted({table_of(sql) or sql for sql, n in Counter(selects).items() if n > 1})
    problems = []
    if fired != shape.fires:
        problems.append("fired" if fired else "did not fire")
    if by_table["tasks"] > shape.tasks:
        problems.append(f"read the task {by_table['tasks']} times")
    if shape.escalations is not None and by_table["escalations"] > shape.escalations:
        problems.append(f"read escalations {by_table['escalations']} times")
    if shape.by_id is not None and by_id > shape.by_id:
        problems.append(f"read the escalation by its id {by_id} times")
    problems.extend(f"ran a statement on {what} twice" for what in repeated if what not in shape.may_repeat)
    return {
        "call": shape.name,
        "tasks": by_table["tasks"],
        "escalations": by_table["escalations"],
        "by_id": by_id,
        "budget": f"{shape.tasks} / {'-' if shape.escalations is None else shape.escalations}"
        + ("" if shape.by_id is None else f" / {shape.by_id}"),
        "problems": problems,
    }


async def measure_all() -> list[dict[str, Any]]:
    rows = []
    for shape in SHAPES:
        with tempfile.TemporaryDirectory(prefix="esc-reads-") as folder:
            rows.append(await measure(shape, Path(folder)))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON ('-' for stdout)")
    args = parser.parse_args()
    rows = anyio.run(measure_all)
    print(f"{'call':<45} {'tasks':>5} {'escalations':>11} {'by id':>5}  budget     verdict")
    for row in rows:
        verdict = "; ".join(row["problems"]) or "ok"
        counts = f"{row['tasks']:>5} {row['escalations']:>11} {row['by_id']:>5}"
        print(f"{row['call']:<45} {counts}  {row['budget']:<9}  {verdict}")
    if args.json:
        text = json.dumps(rows, indent=2)
        if args.json == "-":
            print(text)
        else:
            Path(args.json).write_text(text + "\n", encoding="utf-8")
    return 1 if any(row["problems"] for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
