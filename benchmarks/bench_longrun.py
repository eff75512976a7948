"""The long run: what a stuck agent and a big store do to each call, over stdio.

A benchmark of a short run hides what grows with history. This one drives the installed
console script with the real SDK client, as a host does, through a whole stuck session:

1. **stuck loop**: 1,000 ``record_failure`` of one error on a task with the default
   thresholds: the third opens a ``repeated_error`` escalation and pauses the task; the
   agent keeps calling, as stuck agents do;
2. 300 ``check_edit`` while paused;
3. 300 unanswered ``get_escalation`` polls (``wait_seconds=0``, each with the ``known_revision``
   of the last answer, as the agent is told) of the escalation holding it;
4. **big store**: 3,000 distinct failures recorded one by one (another task, no trigger),
   then ``db check`` (``PRAGMA integrity_check`` and the FTS5 ``integrity-check``, run by
   the console script on the same store) and one ``get_guidance``.

For each phase it reports the largest result a model reads (its text content: the result as
compact JSON, or the rendered text; a host receives it twice, with the structured content,
and that size is reported too) and the median time of early calls (10-110) against
the last 100. Targets: every result under 16 KB; an unanswered poll after the first under
4 KB; late median within 1.5x of early; both integrity checks ok. Exit status 1 when one
is missed.

    python benchmarks/bench_longrun.py
    python benchmarks/bench_longrun.py --repeats 1000 --distinct 3000 --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

SCRIPT = Path(sys.executable).parent / "mcp-server-escalation"
RESULT_LIMIT = 16 * 1024
POLL_LIMIT = 4 * 1024
GROWTH_LIMIT = 1.5
# The error a stuck agent keeps hitting: a pytest failure with its traceback tail.
ERROR = (
    "FAILED tests/test_checkout.py::test_total_includes_tax - AssertionError: assert 107.0 == 107.5\n"
    "    def test_total_includes_tax():\n"
    "        cart = Cart(items=[Item('book', 100.0)], region='DE')\n"
    ">       assert cart.total() == 107.5\n"
    "E       AssertionError: assert 107.0 == 107.5\n"
    "E        +  where 107.0 = <bound method Cart.total of Cart(items=1)>()\n"
    "tests/test_checkout.py:42: AssertionError"
)
NO_ESCALATION = {
    "same_error_repeated": 1_000_000,
    "total_verification_attempts": 1_000_000,
    "no_file_changes_after_attempts": 1_000_000,
    "no_test_improvement_after": 1_000_000,
    "files_modified_exceeds": 1_000_000,
}


class Phase:
    """The time and size of every call of one phase."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.times: list[float] = []
        self.sizes: list[int] = []
        self.wire: list[int] = []
        self.last: dict[str, Any] = {}

    async def call(self, client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        start = time.perf_counter()
        result = await client.call_tool(tool, arguments)
        self.times.append(time.perf_counter() - start)
        # What a model reads: the text content (the result as compact JSON, or the rendered
        # text); a host receives it twice over, as text and as structured content.
        self.sizes.append(sum(len(getattr(part, "text", "").encode()) for part in result.content))
        self.wire.append(len(result.model_dump_json(by_alias=True, exclude_none=True).encode()))
        if result.is_error:
            raise SystemExit(f"{self.name}: {tool} failed: {str(result.content)[:500]}")
        self.last = result.structured_content or {}
        return self.last

    def figures(self) -> dict[str, float]:
        early = statistics.median(self.times[10:110]) * 1000
        late = statistics.median(self.times[-100:]) * 1000
        return {
            "calls": len(self.times),
            "early_median_ms": round(early, 2),
            "late_median_ms": round(late, 2),
            "growth": round(late / early, 2),
            "largest_result_bytes": max(self.sizes),
            "first_result_bytes": self.sizes[0],
            "largest_after_first_bytes": max(self.sizes[1:]),
            "largest_on_the_wire_bytes": max(self.wire),
        }


async def _repeat(n: int, call: Callable[[int], Awaitable[Any]]) -> None:
    for i in range(n):
        await call(i)


async def _run(db_path: str, repeats: int, polls: int, distinct: int) -> dict[str, Any]:
    server = StdioServerParameters(command=str(SCRIPT), args=["--db", db_path])
    stuck, edits, waits, store = Phase("stuck loop"), Phase("check_edit"), Phase("polls"), Phase("big store")
    async with Client(server, mode="legacy") as client:  # type: ignore[arg-type]
        await client.call_tool("start_task", {"title": "stuck", "task_id": "stuck", "scope": ["src/calc/**"]})
        failure = {"task_id": "stuck", "message": ERROR, "file": "tests/test_checkout.py"}
        await _repeat(
            repeats, lambda i: stuck.call(client, "record_failure", {**failure, "line": 10 + i % 50})
        )
        if stuck.last.get("directive") != "pause":
            raise SystemExit(f"the stuck loop did not end paused: {str(stuck.last)[:500]}")
        named = (stuck.last.get("holding") or {}).get("escalation_id")
        pending = await client.call_tool("list_escalations", {"task_id": "stuck", "status": "pending"})
        escalation_id = (pending.structured_content or {})["escalations"][0]["escalation_id"]
        await _repeat(
            polls,
            lambda i: edits.call(
                client, "check_edit", {"task_id": "stuck", "paths": [f"src/calc/m{i % 9}.py"]}
            ),
        )
        # As the agent is told: each poll passes the revision of the record it last read,
        # so a poll that finds nothing new is answered in a few hundred bytes.
        known: dict[str, int] = {}

        async def poll(_i: int) -> None:
            seen = await waits.call(
                client, "get_escalation", {"escalation_id": escalation_id, "wait_seconds": 0, **known}
            )
            known["known_revision"] = seen["revision"]

        await _repeat(polls, poll)
        status = waits.last.get("status") or (waits.last.get("escalation") or {}).get("status")
        if status != "pending":
            raise SystemExit(f"the last poll did not find the escalation pending: {str(waits.last)[:500]}")

        await client.call_tool("start_task", {"title": "big", "task_id": "big", "thresholds": NO_ESCALATION})
        await _repeat(
            distinct,
            lambda i: store.call(
                client,
                "record_failure",
                {
                    "task_id": "big",
                    "message": f"ImportError: module {_word(i)} failed to import {_word(i + 7)}",
                },
            ),
        )
        start = time.perf_counter()
        found = await client.call_tool(
            "get_guidance", {"task_id": "big", "query": f"module {_word(distinct - 1)} import"}
        )
        guidance_ms = (time.perf_counter() - start) * 1000
        guidance_bytes = sum(len(getattr(part, "text", "").encode()) for part in found.content)
        if found.is_error or not (found.structured_content or {}).get("items"):
            raise SystemExit(f"get_guidance found nothing on the big store: {found.content}")
    # The console script's own check, after the server has exited.
    check = await anyio.run_process([str(SCRIPT), "db", "check", "--db", db_path, "--json"], check=False)
    report = json.loads(check.stdout.decode())
    return {
        "stuck_loop": stuck.figures(),
        "check_edit_paused": edits.figures(),
        "unanswered_polls": waits.figures(),
        "distinct_failures": store.figures(),
        "paused_result_names_escalation": named == escalation_id,
        "get_guidance_ms": round(guidance_ms, 2),
        "get_guidance_bytes": guidance_bytes,
        "integrity_check": report["integrity"],
        "search_index": report["search_index"],
        "failure_records": report["failure_records"],
    }


def _word(n: int) -> str:
    letters = "abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, rest = divmod(n, 26)
        out += letters[rest]
        if n == 0:
            return out


def _verdicts(figures: dict[str, Any]) -> list[tuple[str, bool]]:
    phases = ("stuck_loop", "check_edit_paused", "unanswered_polls", "distinct_failures")
    checks = [
        (
            f"{name}: largest result {figures[name]['largest_result_bytes']:,} B < 16 KB",
            figures[name]["largest_result_bytes"] < RESULT_LIMIT,
        )
        for name in phases
    ]
    checks += [
        (
            f"{name}: late/early median {figures[name]['growth']}x <= {GROWTH_LIMIT}x",
            figures[name]["growth"] <= GROWTH_LIMIT,
        )
        for name in phases
    ]
    checks.append(
        (
            "a paused record_failure names the escalation holding the task",
            figures["paused_result_names_escalation"],
        )
    )
    polls = figures["unanswered_polls"]["largest_after_first_bytes"]
    checks.append((f"unanswered poll after the first {polls:,} B < 4 KB", polls < POLL_LIMIT))
    checks.append(
        (
            f"get_guidance result {figures['get_guidance_bytes']:,} B < 16 KB",
            figures["get_guidance_bytes"] < RESULT_LIMIT,
        )
    )
    checks.append(
        (f"PRAGMA integrity_check {figures['integrity_check']}", figures["integrity_check"] == ["ok"])
    )
    checks.append((f"FTS5 integrity-check {figures['search_index']}", figures["search_index"] == "ok"))
    return checks


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=1000, help="record_failure calls of the stuck loop")
    parser.add_argument("--polls", type=int, default=300, help="check_edit calls and get_escalation polls")
    parser.add_argument("--distinct", type=int, default=3000, help="distinct failures of the big store")
    parser.add_argument("--json", help="write the figures to this file ('-' for stdout)")
    args = parser.parse_args()
    if min(args.repeats, args.polls, args.distinct) < 210:
        parser.error("each phase needs at least 210 calls (early = calls 10-110, late = the last 100)")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        figures = anyio.run(_run, str(Path(tmp) / "longrun.db"), args.repeats, args.polls, args.distinct)
    figures["seconds"] = round(time.perf_counter() - started, 1)
    figures["load_average"] = round(os.getloadavg()[0], 2)
    for name in ("stuck_loop", "check_edit_paused", "unanswered_polls", "distinct_failures"):
        f = figures[name]
        print(
            f"{name:<18} {f['calls']:>5} calls  early {f['early_median_ms']:>6} ms"
            f"  late {f['late_median_ms']:>6} ms  ({f['growth']}x)"
            f"  largest {f['largest_result_bytes']:>6,} B  first {f['first_result_bytes']:>6,} B"
            f"  (wire {f['largest_on_the_wire_bytes']:,} B)"
        )
    print(
        f"get_guidance on {figures['failure_records']:,} records: {figures['get_guidance_ms']} ms,"
        f" {figures['get_guidance_bytes']:,} B"
    )
    verdicts = _verdicts(figures)
    for text, ok in verdicts:
        print(f"  {'ok  ' if ok else 'MISS'} {text}")
    print(f"{figures['seconds']} s, load average {figures['load_average']}")
    if args.json:
        text = json.dumps(figures, indent=2)
        if args.json == "-":
            print(text)
        else:
            Path(args.json).write_text(text + "\n", encoding="utf-8")
    return 0 if all(ok for _, ok in verdicts) else 1


if __name__ == "__main__":
    raise SystemExit(main())
