"""get_feedback over stdio for a heavy step (issue 3): 200 attempts, 3 cycles, 20 findings.

The state is written through the services (the same code the tools run), then the real SDK
client calls ``get_feedback`` on the installed console script, interleaved with a no-op tool
of a minimal MCPServer; the figure is the ratio of medians (target within 1.5x).

    python benchmarks/bench_feedback.py [--calls 300]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

from mcp_server_escalation.models.thresholds import ThresholdOverrides
from mcp_server_escalation.services import attempts, reviews, tasks
from mcp_server_escalation.services.runtime import open_runtime
from mcp_server_escalation.settings import Settings

HERE = Path(__file__).resolve().parent
SCRIPT = Path(sys.executable).parent / "mcp-server-escalation"
TASK = "heavy"
STEP = "gen_patch"


async def seed(db_path: str) -> dict[str, int]:
    settings = Settings(db_path=db_path, project_root="/bench")
    limits = ThresholdOverrides(
        total_verification_attempts=1_000_000, max_escalation_cycles=1000, stagnation_patience=3
    )
    async with open_runtime(settings) as rt:
        await tasks.start_task(rt, title="heavy step", task_id=TASK, thresholds=limits)
        n = 0
        # Three stagnation cycles (3 similar rejections each) ...
        for cycle in range(3):
            for _ in range(3):
                n += 1
                await attempts.record_attempt(
                    rt,
                    task_id=TASK,
                    step=STEP,
                    status="rejected",
                    feedback=f"cycle {cycle}: test_login failed with KeyError 'next_url'",
                    guard="pytest",
                    artifact=f"approach {n}",
                    upstream=["localise_issue"],
                )
        # ... then distinct rejections up to 200 attempts (no further stagnation).
        # Distinct wording (pairwise Jaccard well below 0.7), so no further cycle starts.
        words = [
            "parser",
            "cache",
            "router",
            "schema",
            "client",
            "session",
            "auth",
            "index",
            "token",
            "queue",
            "worker",
            "lock",
            "retry",
            "timeout",
            "encoder",
            "decoder",
            "buffer",
            "socket",
            "stream",
            "fixture",
            "mock",
            "patch",
            "config",
            "loader",
            "plugin",
            "handler",
            "migration",
            "query",
            "cursor",
            "batch",
        ]
        while n < 200:
            n += 1
            picked = random.Random(n).sample(words, 6)  # noqa: S311 (reproducible data)
            await attempts.record_attempt(
                rt,
                task_id=TASK,
                step=STEP,
                status="rejected",
                feedback=f"{' '.join(picked)} rejected",
                guard="review",
            )
        for f in range(20):
            await reviews.report_review(
                rt,
                task_id=TASK,
                stage=f"review_{f % 5}",
                status="fail",
                failure_reason=f"finding {f}",
                response="\n".join(f"src/m{f}.py:{line}: issue {line}" for line in range(12)),
            )
        from mcp_server_escalation.services.feedback import get_feedback

        state = await get_feedback(rt, task_id=TASK, step=STEP, max_chars=1_000_000)
    return {
        "attempts": n,
        "cycles": len(state.escalation_history),
        "retry_entries": len(state.retry_history),
        "findings": len(state.review_findings),
    }


async def _measure(db_path: str, calls: int) -> tuple[list[float], list[float], int]:
    ours = StdioServerParameters(command=str(SCRIPT), args=["--db", db_path])
    noop = StdioServerParameters(command=sys.executable, args=[str(HERE / "noop_server.py")])
    g: list[float] = []
    n: list[float] = []
    size = 0
    async with Client(ours, mode="legacy") as c, Client(noop, mode="legacy") as o:  # type: ignore[arg-type]
        arguments = {"task_id": TASK, "step": STEP}
        for _ in range(20):
            await c.call_tool("get_feedback", arguments)
            await o.call_tool("noop", {})
        for _ in range(calls):
            t = time.perf_counter()
            r = await c.call_tool("get_feedback", arguments)
            g.append(time.perf_counter() - t)
            if r.is_error or r.structured_content is None:
                raise SystemExit(f"get_feedback failed: {r.content}")
            size = len(r.structured_content["rendered"])
            t = time.perf_counter()
            await o.call_tool("noop", {})
            n.append(time.perf_counter() - t)
    return g, n, size


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db_path = str(Path(tmp) / "feedback.db")
        state = anyio.run(seed, db_path)
        g, n, size = anyio.run(_measure, db_path, args.calls)
    ratio = statistics.median(g) / statistics.median(n)
    print(f"state: {state}; rendered feedback {size} chars (max_chars 12000)")
    print(
        f"get_feedback median {statistics.median(g) * 1000:.2f} ms vs no-op "
        f"{statistics.median(n) * 1000:.2f} ms = {ratio:.2f}x (target <= 1.5x)"
    )
    return 0 if ratio <= 1.5 else 1


if __name__ == "__main__":
    raise SystemExit(main())
