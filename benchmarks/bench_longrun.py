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
   the console script on the same store) and one ``get_guidance``;
5. **at the limits** (a store of its own): every tool and every resource, each text at its
   input limit in 4-byte characters, after ``--reviews`` failing reviews of 1 Mi characters
   (``every_call_at_its_limits``; ``tests/test_stuck_agent.py`` runs it in memory). Every
   tool's largest result must stay under 16 KB; the resources, which hold the texts whole,
   are reported.

For each phase it reports the largest result a model reads (its text content: the result as
compact JSON, or the rendered text; a host receives it twice, with the structured content,
and that size is reported too) and the median time of early calls (10-110) against
the last 100. Targets: every result under 16 KB; an unanswered poll after the first under
4 KB; late median within 1.5x of early; both integrity checks ok. Exit status 1 when one
is missed.

    python benchmarks/bench_longrun.py
    python benchmarks/bench_longrun.py --repeats 1000 --distinct 3000 --reviews 20 --json out.json
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


# -- every tool and resource, with inputs at their limits --------------------------------

WIDE = "\U0001f600"  # four bytes in UTF-8: a text at its limit in characters at its costliest
TEXT = 64 * 1024  # models/limits.py: TEXT_MAX, LARGE_TEXT_MAX, LIST_MAX and LIST_TEXT_MAX
LARGE = 1024 * 1024
LIST_ITEMS = 500
LIST_TEXT = 64 * 1024
NAME = 256
TOOLS = (
    "start_task", "end_task", "get_task", "record_failure", "report_progress", "check_edit",
    "record_attempt", "report_review", "get_feedback", "get_guidance", "update_failure",
    "raise_escalation", "get_escalation", "acknowledge_response", "list_escalations",
    "resolve_escalation",
)  # fmt: skip
RESOURCES = (
    "escalation://pending", "escalation://{escalation_id}", "task://{task_id}",
    "task://{task_id}/feedback/{step}", "failure://{failure_id}",
)  # fmt: skip


def wide(n: int, tag: str = "") -> str:
    """``n`` characters, ``tag`` first, the rest 4-byte characters."""
    return (tag + WIDE * n)[:n]


def at_the_list_limit(tag: str, root: str = "src", suffix: str = "") -> list[str]:
    """500 paths (or globs) whose characters add up to just under the limit of all items."""
    each = LIST_TEXT // LIST_ITEMS - len(suffix)
    return [f"{root}/{tag}/{n:03d}/".ljust(each - 1, "p") + WIDE + suffix for n in range(LIST_ITEMS)]


class Sizes:
    """The largest result of each tool and resource (the text a model reads), and refusals."""

    def __init__(self) -> None:
        self.largest: dict[str, int] = {}
        self.refused: list[str] = []

    def note(self, name: str, size: int) -> None:
        self.largest[name] = max(self.largest.get(name, 0), size)

    async def call(self, client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = await client.call_tool(tool, arguments)
        self.note(tool, sum(len(getattr(part, "text", "").encode()) for part in result.content))
        if result.is_error:
            self.refused.append(f"{tool}: {getattr(result.content[0], 'text', '')[:300]}")
            return {}
        return result.structured_content or {}

    async def read(self, client: Client, uri: str, template: str) -> None:
        read = await client.read_resource(uri)
        self.note(template, sum(len(getattr(part, "text", "").encode()) for part in read.contents))


async def every_call_at_its_limits(agent: Client, operator: Client, reviews: int) -> Sizes:
    """Every tool (the agent's, and the operator's answers) and every resource, each text at
    its limit in 4-byte characters, after ``reviews`` failing reviews of 1 Mi characters."""
    sizes = Sizes()
    task = "limits"
    quiet = {name: 1_000_000 for name in NO_ESCALATION if name != "same_error_repeated"}
    step = wide(NAME, "step")
    await sizes.call(
        agent,
        "start_task",
        {
            "title": wide(1024), "task_id": task, "specification": wide(TEXT), "agent_id": wide(NAME),
            "scope": at_the_list_limit("scope", suffix="/**"), "project": "/" + "p" * 4000,
            "thresholds": quiet,
        },
    )  # fmt: skip
    for i in range(reviews):
        review = {
            "stage": wide(NAME, f"s{i % 3}"),
            "failure_reason": wide(TEXT, str(i)),
            "response": wide(LARGE, str(i)),
        }
        await sizes.call(agent, "report_review", {"task_id": task, "status": "fail", **review})
    upstream = [wide(LIST_TEXT // LIST_ITEMS, f"u{n}") for n in range(LIST_ITEMS)]
    for i in range(3):
        attempt = {"feedback": wide(TEXT, str(i)), "artifact": wide(LARGE, str(i)), "guard": wide(NAME)}
        await sizes.call(
            agent,
            "record_attempt",
            {"task_id": task, "step": step, "status": "rejected", "upstream": upstream, **attempt},
        )
    await sizes.call(agent, "get_feedback", {"task_id": task, "step": step, "max_chars": 1_000_000})
    for i in range(3):
        progress = {"files_modified": at_the_list_limit(f"f{i}"), "note": wide(TEXT), "step": wide(NAME)}
        await sizes.call(agent, "report_progress", {"task_id": task, **progress})
    failure = {
        "message": wide(TEXT, "E"), "file": "src/" + "f" * 4000, "attempted_action": wide(TEXT),
        "observed_outcome": wide(TEXT), "error_code": wide(NAME), "error_type": wide(NAME),
        "phase": wide(NAME), "context_refs": [{"kind": f"r{n:02d}", "ref": "x" * 500} for n in range(32)],
    }  # fmt: skip
    for i in range(4):  # the third opens a repeated_error escalation
        await sizes.call(agent, "record_failure", {"task_id": task, "line": i, **failure})
    await sizes.call(agent, "check_edit", {"task_id": task, "paths": at_the_list_limit("edit", "docs")})
    question = {
        "reason": wide(TEXT),
        "question": wide(TEXT),
        "options": [wide(200, str(n)) for n in range(20)],
    }
    await sizes.call(agent, "raise_escalation", {"task_id": task, "blocking": True, **question})
    await sizes.call(
        agent, "get_guidance", {"task_id": task, "query": wide(TEXT, "E"), "k": 20, "scope": "project"}
    )
    await sizes.call(agent, "update_failure", {"failure_id": "F-1", "note": wide(TEXT)})
    listed = await sizes.call(agent, "list_escalations", {"task_id": task, "status": "all", "limit": 100})
    for escalation_id in [e["escalation_id"] for e in listed.get("escalations", [])]:
        answer = {"response_type": "guidance", "content": wide(TEXT, "G"), "responder": wide(NAME)}
        await sizes.call(operator, "resolve_escalation", {"escalation_id": escalation_id, **answer})
        await sizes.call(agent, "get_escalation", {"escalation_id": escalation_id, "wait_seconds": 0})
        await sizes.call(agent, "acknowledge_response", {"escalation_id": escalation_id, "note": wide(TEXT)})
        await sizes.read(agent, f"escalation://{escalation_id}", "escalation://{escalation_id}")
    await sizes.call(agent, "get_task", {"task_id": task})
    await sizes.read(agent, "escalation://pending", "escalation://pending")
    await sizes.read(agent, f"task://{task}", "task://{task_id}")
    await sizes.read(agent, f"task://{task}/feedback/{step}", "task://{task_id}/feedback/{step}")
    await sizes.read(agent, "failure://F-1", "failure://{failure_id}")
    await sizes.call(agent, "end_task", {"task_id": task, "outcome": "abandoned", "note": wide(TEXT)})
    return sizes


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


async def _at_the_limits(db_path: str, reviews: int) -> Sizes:
    """``every_call_at_its_limits`` over stdio, on a store of its own: an agent's server and an operator's."""
    agent = StdioServerParameters(command=str(SCRIPT), args=["--db", db_path])
    operator = StdioServerParameters(
        command=str(SCRIPT), args=["--db", db_path, "serve", "--role", "operator"]
    )
    async with Client(agent, mode="legacy") as as_agent, Client(operator, mode="legacy") as as_operator:  # type: ignore[arg-type]
        return await every_call_at_its_limits(as_agent, as_operator, reviews)


async def _run(db_path: str, repeats: int, polls: int, distinct: int, reviews: int) -> dict[str, Any]:
    limits = await _at_the_limits(db_path + ".limits", reviews)
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
        "at_the_limits": {"reviews": reviews, "largest_bytes": limits.largest, "refused": limits.refused},
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
    limits = figures["at_the_limits"]
    for tool in TOOLS:
        largest = limits["largest_bytes"].get(tool)
        checks.append(
            (
                f"{tool} at the limits: largest result {largest or 0:,} B < 16 KB",
                largest is not None and largest < RESULT_LIMIT,
            )
        )
    checks.append(
        (f"every resource read ({', '.join(RESOURCES)})", set(RESOURCES) <= set(limits["largest_bytes"]))
    )
    checks.append((f"no call at the limits refused {limits['refused'][:3]}", not limits["refused"]))
    return checks


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=1000, help="record_failure calls of the stuck loop")
    parser.add_argument("--polls", type=int, default=300, help="check_edit calls and get_escalation polls")
    parser.add_argument("--distinct", type=int, default=3000, help="distinct failures of the big store")
    parser.add_argument("--reviews", type=int, default=20, help="failing reviews of 1 Mi characters each")
    parser.add_argument("--json", help="write the figures to this file ('-' for stdout)")
    args = parser.parse_args()
    if min(args.repeats, args.polls, args.distinct) < 210:
        parser.error("each phase needs at least 210 calls (early = calls 10-110, late = the last 100)")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        figures = anyio.run(
            _run, str(Path(tmp) / "longrun.db"), args.repeats, args.polls, args.distinct, args.reviews
        )
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
    for name, largest in sorted(figures["at_the_limits"]["largest_bytes"].items(), key=lambda kv: -kv[1]):
        kind = "resource" if "://" in name else "tool"
        print(f"at the limits: {kind:<8} {name:<36} largest {largest:>10,} B")
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
