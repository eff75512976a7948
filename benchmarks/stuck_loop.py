"""A stuck agent over stdio: the same error again and again, then edits and polls while paused.

SPEC 9 (bounded results): a task paused by a ``repeated_error`` escalation whose agent keeps
calling. This module drives that loop through the real SDK ``Client`` over the installed
console script and measures every call: its time and the size of the result the model reads
(the compact JSON of the structured result, as ``tool_result`` sends it).

``stuck_loop`` is the reusable part (a long-run benchmark can call it with its own client);
run as a script it spawns the server on a fresh store and prints the figures:

    python benchmarks/stuck_loop.py                         # 1,000 failures, 300 edits, 300 polls
    python benchmarks/stuck_loop.py --failures 600 --json -
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

SERVER_SCRIPT = Path(sys.executable).parent / "mcp-server-escalation"
COMPACT = (",", ":")
# A realistic error an agent keeps hitting: a pytest failure with its traceback tail.
MESSAGE = (
    "FAILED tests/test_checkout.py::test_total_includes_tax - AssertionError: assert 107.0 == 107.5\n"
    "    def test_total_includes_tax():\n"
    "        cart = Cart(items=[Item('book', 100.0)], region='DE')\n"
    ">       assert cart.total() == 107.5\n"
    "E       AssertionError: assert 107.0 == 107.5\n"
    "E        +  where 107.0 = <bound method Cart.total of Cart(items=1)>()\n"
    "tests/test_checkout.py:42: AssertionError"
)


def server_cpu_seconds() -> float | None:
    """CPU seconds used so far by the server this process spawned (Linux ``/proc``; else None).

    On a machine shared with other work the wall-clock medians move with its load; the
    server's own CPU time per call does not, so it is reported next to them.
    """
    me = str(os.getpid())
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes()
        except (OSError, IndexError):
            continue
        if fields[1] == me and b"mcp-server-escalation" in cmdline:
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return None


@dataclass
class Calls:
    """What one kind of call cost: seconds, result bytes and the server's CPU, in call order."""

    seconds: list[float] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    # The server's CPU seconds after each call (None where /proc is not there).
    cpu: list[float | None] = field(default_factory=list)

    def add(self, seconds: float, size: int, cpu: float | None) -> None:
        self.seconds.append(seconds)
        self.sizes.append(size)
        self.cpu.append(cpu)

    def _cpu_ms(self, window: slice) -> float | None:
        """The server's CPU per call over ``window`` (from the call before it to its last)."""
        start, stop, _ = window.indices(len(self.cpu))
        before, after = self.cpu[max(start - 1, 0)], self.cpu[stop - 1]
        if before is None or after is None or stop - start < 2:
            return None
        return (after - before) / (stop - max(start - 1, 0) - 1) * 1000

    def figures(self, early: slice) -> dict[str, float | None]:
        """Early vs late median (ms) and the server's CPU per call, ratios, the largest result."""
        late = slice(-min(100, len(self.seconds)), None)
        early_ms = statistics.median(self.seconds[early]) * 1000
        late_ms = statistics.median(self.seconds[late]) * 1000
        early_cpu, late_cpu = self._cpu_ms(early), self._cpu_ms(late)
        return {
            "calls": len(self.seconds),
            "early_median_ms": round(early_ms, 3),
            "late_median_ms": round(late_ms, 3),
            "late_over_early": round(late_ms / early_ms, 3),
            "early_server_cpu_ms": None if early_cpu is None else round(early_cpu, 3),
            "late_server_cpu_ms": None if late_cpu is None else round(late_cpu, 3),
            "cpu_late_over_early": round(late_cpu / early_cpu, 3) if early_cpu and late_cpu else None,
            "largest_result_bytes": max(self.sizes),
            "first_result_bytes": self.sizes[0],
            "last_result_bytes": self.sizes[-1],
        }


async def _call(client: Client, calls: Calls, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    started = time.perf_counter()
    result = await client.call_tool(tool, arguments)
    elapsed = time.perf_counter() - started
    if result.is_error or result.structured_content is None:
        raise RuntimeError(f"{tool} failed: {result.content}")
    structured = result.structured_content
    size = len(json.dumps(structured, ensure_ascii=False, separators=COMPACT).encode())
    calls.add(elapsed, size, server_cpu_seconds())
    return structured


async def stuck_loop(
    client: Client, task_id: str, *, failures: int = 1000, edits: int = 300, polls: int = 300
) -> dict[str, Calls]:
    """Start ``task_id``, record one error ``failures`` times, then ``edits`` check_edit and
    ``polls`` unanswered get_escalation polls (each passing the revision it last received)."""
    await client.call_tool("start_task", {"title": "stuck loop", "task_id": task_id})
    measured = {"record_failure": Calls(), "check_edit": Calls(), "get_escalation": Calls()}
    escalation_id: int | None = None
    for i in range(failures):
        result = await _call(
            client,
            measured["record_failure"],
            "record_failure",
            {
                "task_id": task_id,
                "message": MESSAGE,
                "file": "tests/test_checkout.py",
                "line": 42,
                "attempted_action": f"rerun pytest after tweak {i}",
            },
        )
        # ``holding`` names the escalation that pauses the task; a build without it (before
        # bounded results) is measured by the escalation it returned.
        holding = result.get("holding") or result.get("escalation")
        escalation_id = holding["escalation_id"] if holding else escalation_id
    if escalation_id is None:
        raise RuntimeError("the stuck loop never escalated")
    for _ in range(edits):
        await _call(
            client, measured["check_edit"], "check_edit", {"task_id": task_id, "paths": ["src/cart.py"]}
        )
    known: int | None = None
    for _ in range(polls):
        arguments: dict[str, Any] = {"escalation_id": escalation_id}
        if known is not None:
            arguments["known_revision"] = known
        result = await _call(client, measured["get_escalation"], "get_escalation", arguments)
        known = result.get("revision")
    return measured


def report(measured: dict[str, Calls]) -> dict[str, dict[str, float | None]]:
    """Figures per tool; record_failure's early window is calls 10-110 (SPEC 9)."""
    return {
        tool: calls.figures(slice(10, 110) if tool == "record_failure" else slice(1, 101))
        for tool, calls in measured.items()
    }


async def _main(args: argparse.Namespace) -> dict[str, dict[str, float | None]]:
    with tempfile.TemporaryDirectory() as folder:
        params = StdioServerParameters(
            command=str(SERVER_SCRIPT), args=["--db", str(Path(folder) / "stuck.db")], cwd=folder
        )
        async with Client(params) as client:  # type: ignore[arg-type]
            measured = await stuck_loop(
                client, "stuck", failures=args.failures, edits=args.edits, polls=args.polls
            )
    return report(measured)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--failures", type=int, default=1000)
    parser.add_argument("--edits", type=int, default=300)
    parser.add_argument("--polls", type=int, default=300)
    parser.add_argument("--json", help="write the figures as JSON to this file ('-': stdout)")
    args = parser.parse_args()
    figures = anyio.run(_main, args)
    for tool, numbers in figures.items():
        print(tool, " ".join(f"{k}={v}" for k, v in numbers.items()))
    if args.json:
        text = json.dumps(figures, indent=2)
        if args.json == "-":
            print(text)
        else:
            Path(args.json).write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
