"""Where a tool call's time goes, in process (a diagnostic for ``bench_stdio.py``).

Serves ``mcp-server-escalation`` and the no-op server in this process through the SDK's
in-memory ``Client`` and splits each tool call into:

- the service call (``services.*``), and within it the time spent awaiting ``aiosqlite``,
  how many round trips to its worker thread that took, and how much of it SQLite itself
  spent executing statements (the rest is the thread hand-off);
- everything outside the service: argument validation, result validation and
  serialisation, dispatch, and the client's validation of the structured result.

It patches internals (``aiosqlite.Connection._execute`` and the service functions the
adapters call), so it is a diagnostic, not a benchmark of record; ``--cprofile DIR`` also
writes one cProfile file per tool (``python -m pstats DIR/record_failure.prof``).

    python benchmarks/profile_tools.py
    python benchmarks/profile_tools.py --mode legacy --calls 500 --cprofile /tmp/prof
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiosqlite
import anyio
from mcp import Client

import noop_server
from bench_stdio import ARGS, NO_ESCALATION
from mcp_server_escalation.adapters.app import build_server
from mcp_server_escalation.services import failures, progress
from mcp_server_escalation.settings import Settings

TOOLS = ("record_failure", "report_progress", "check_edit")
SERVICES = ((failures, "record_failure"), (progress, "report_progress"), (progress, "check_edit"))


class Meter:
    """Accumulators for one call, reset before it."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.service = 0.0
        self.awaiting_db = 0.0
        self.sqlite = 0.0
        self.hops = 0


METER = Meter()


def instrument() -> None:
    original_execute = aiosqlite.Connection._execute

    async def _execute(self: aiosqlite.Connection, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        def timed(*a: Any, **k: Any) -> Any:  # runs in aiosqlite's worker thread
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                METER.sqlite += time.perf_counter() - t0

        t0 = time.perf_counter()
        try:
            return await original_execute(self, timed, *args, **kwargs)
        finally:
            METER.awaiting_db += time.perf_counter() - t0
            METER.hops += 1

    aiosqlite.Connection._execute = _execute  # type: ignore[method-assign]

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


def median_ms(values: list[float]) -> float:
    return statistics.median(values) * 1000


async def run(mode: str, calls: int, warmup: int, profile_dir: Path | None) -> None:
    with tempfile.TemporaryDirectory(prefix="esc-prof-") as tmp:
        settings = Settings.from_sources(
            db=str(Path(tmp) / "prof.db"), config=None, role="agent", prompts=None
        )
        server = build_server(settings)
        async with Client(server, mode=mode) as esc, Client(noop_server.mcp, mode=mode) as noop:  # type: ignore[arg-type]
            started = await esc.call_tool(
                "start_task", {"title": "profile", "project": tmp, "thresholds": NO_ESCALATION}
            )
            assert started.structured_content is not None
            task_id = started.structured_content["task_id"]

            noop_times = []
            for i in range(warmup + calls):
                t0 = time.perf_counter()
                await noop.call_tool("noop", {"text": f"call {i}"})
                if i >= warmup:
                    noop_times.append(time.perf_counter() - t0)
            base = median_ms(noop_times)
            print(f"\nin-process, mode={mode}, {calls} calls/tool; noop median {base:.2f} ms")
            print(
                f"{'tool':<16} {'call':>7} {'service':>8} {'await db':>9} {'hops':>5} {'sqlite':>7} "
                f"{'py in svc':>10} {'outside svc':>12}  (ms, medians)"
            )
            for tool in TOOLS:
                make = ARGS[tool]
                for i in range(warmup):
                    await esc.call_tool(tool, make(task_id, i))
                rows: dict[str, list[float]] = {
                    k: [] for k in ("call", "svc", "db", "hops", "sql", "py", "out")
                }
                profiler = cProfile.Profile() if profile_dir else None
                for i in range(warmup, warmup + calls):
                    args = make(task_id, i)
                    METER.reset()
                    if profiler:
                        profiler.enable()
                    t0 = time.perf_counter()
                    result = await esc.call_tool(tool, args)
                    elapsed = time.perf_counter() - t0
                    if profiler:
                        profiler.disable()
                    if result.is_error:
                        raise RuntimeError(f"{tool} failed: {result.content}")
                    rows["call"].append(elapsed)
                    rows["svc"].append(METER.service)
                    rows["db"].append(METER.awaiting_db)
                    rows["hops"].append(METER.hops)
                    rows["sql"].append(METER.sqlite)
                    rows["py"].append(METER.service - METER.awaiting_db)
                    rows["out"].append(elapsed - METER.service)
                m = {k: median_ms(v) for k, v in rows.items() if k != "hops"}
                m["hops"] = statistics.median(rows["hops"])
                print(
                    f"{tool:<16} {m['call']:>7.2f} {m['svc']:>8.2f} {m['db']:>9.2f} {m['hops']:>5.0f} "
                    f"{m['sql']:>7.2f} {m['py']:>10.2f} {m['out']:>12.2f}  ({m['call'] / base:.1f}x noop)"
                )
                if profiler and profile_dir:
                    profiler.dump_stats(profile_dir / f"{tool}.prof")
            if profile_dir:
                print(f"cProfile files in {profile_dir} (timings above are inflated by the profiler)")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--mode", choices=["legacy", "auto"], default="legacy")
    parser.add_argument("--cprofile", metavar="DIR", type=Path, help="also write cProfile files here")
    args = parser.parse_args()
    if args.cprofile:
        args.cprofile.mkdir(parents=True, exist_ok=True)
    instrument()
    anyio.run(run, args.mode, args.calls, args.warmup, args.cprofile)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
