"""Operator-side latencies: notifications within 5 s and answers within 2 s.

1. **Notification latency**: the installed console script runs over stdio (legacy
   handshake, as Claude Code launches it) with a ``[notify]`` table naming a real shell
   command and a webhook on a loopback HTTP server in this process. The agent raises
   ``--escalations`` escalations one after another (``--gap`` seconds apart). For each, the
   latency runs from the escalation's ``created_at`` (stamped by the server when it commits)
   to the moment the command ran (it writes ``date +%s.%N`` to a file) and the moment the
   webhook request arrived. Both clocks are this machine's wall clock.
2. **Answer latency**: the agent waits in ``get_escalation(id, wait_seconds=30)``
   while ``mcp-server-escalation escalations respond`` runs as a separate process; the
   latency runs from the answer's ``responded_at`` (stamped by the CLI process when it
   commits) to the moment the waiting call returned to the agent. The time from starting
   the CLI process to that moment is reported too (it includes the CLI's start-up).

    python benchmarks/bench_notify.py                    # 50 + 50
    python benchmarks/bench_notify.py --escalations 20 --answers 10 --json -
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

SERVER_SCRIPT = Path(sys.executable).parent / "mcp-server-escalation"


def _epoch(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def _summary(values_ms: list[float]) -> dict[str, float]:
    ordered = sorted(values_ms)
    p95 = ordered[max(0, -(-95 * len(ordered) // 100) - 1)]
    return {
        "n": len(ordered),
        "p50_ms": round(statistics.median(ordered), 1),
        "p95_ms": round(p95, 1),
        "max_ms": round(ordered[-1], 1),
        "min_ms": round(ordered[0], 1),
    }


class _Webhook:
    def __init__(self) -> None:
        self.arrivals: dict[int, float] = {}
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                arrived = time.time()
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.arrivals.setdefault(int(body["escalation_id"]), arrived)
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *_args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


async def _structured(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    if result.is_error:
        raise RuntimeError(f"{tool}: {result.content}")
    assert result.structured_content is not None
    return result.structured_content


async def notification_latency(workdir: Path, count: int, gap: float) -> dict[str, Any]:
    """Notification latency: creation to command run and to webhook arrival."""
    hook = _Webhook()
    receipts = workdir / "command-receipts.txt"
    config = workdir / "notify.toml"
    command = f'printf "%s %s\\n" "$ESCALATION_ID" "$(date +%s.%N)" >> "{receipts}"; cat > /dev/null'
    config.write_text(f"[notify]\ncommand = {json.dumps(command)}\nwebhook_url = {json.dumps(hook.url)}\n")
    db = workdir / "notify.db"
    params = StdioServerParameters(
        command=str(SERVER_SCRIPT), args=["--db", str(db), "--config", str(config)]
    )
    created: dict[int, float] = {}
    try:
        async with Client(params, mode="legacy") as client:  # type: ignore[arg-type]
            for i in range(count):
                task_id = f"bench-notify-{i}"
                await _structured(client, "start_task", {"title": f"Bench {i}", "task_id": task_id})
                raised = await _structured(
                    client, "raise_escalation", {"task_id": task_id, "reason": f"Question {i}"}
                )
                escalation = raised["escalation"]
                created[escalation["escalation_id"]] = _epoch(escalation["created_at"])
                await anyio.sleep(gap)
            with anyio.fail_after(30):
                # Written by another process and another thread: bounded polling is the way.
                while len(hook.arrivals) < count or _count_lines(receipts) < count:  # noqa: ASYNC110
                    await anyio.sleep(0.05)
    finally:
        hook.close()
    ran = {int(a): float(b) for a, b in (line.split() for line in receipts.read_text().splitlines())}
    return {
        "command": _summary([(ran[i] - at) * 1000 for i, at in created.items()]),
        "webhook": _summary([(hook.arrivals[i] - at) * 1000 for i, at in created.items()]),
        "gap_s": gap,
    }


def _count_lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


async def answer_latency(workdir: Path, count: int) -> dict[str, Any]:
    """Answer latency: a CLI answer reaching an agent waiting in get_escalation."""
    db = workdir / "answers.db"
    params = StdioServerParameters(command=str(SERVER_SCRIPT), args=["--db", str(db)])
    from_commit: list[float] = []
    from_cli_start: list[float] = []
    async with Client(params, mode="legacy") as client:  # type: ignore[arg-type]
        for i in range(count):
            task_id = f"bench-answer-{i}"
            await _structured(client, "start_task", {"title": f"Bench {i}", "task_id": task_id})
            raised = await _structured(client, "raise_escalation", {"task_id": task_id, "reason": "Go?"})
            escalation_id = raised["escalation"]["escalation_id"]
            received: dict[str, Any] = {}

            async def wait(escalation_id: int = escalation_id, received: dict[str, Any] = received) -> None:
                result = await _structured(
                    client, "get_escalation", {"escalation_id": escalation_id, "wait_seconds": 30}
                )
                received["at"] = time.time()
                received["escalation"] = result["escalation"]

            async with anyio.create_task_group() as tg:
                tg.start_soon(wait)
                await anyio.sleep(0.3)  # the agent is waiting now
                cli_started = time.time()
                done = await anyio.run_process(
                    [
                        str(SERVER_SCRIPT), "--db", str(db), "escalations", "respond",
                        str(escalation_id), "--guidance", "Go ahead.",
                    ],
                    check=True,
                )  # fmt: skip
                del done
            response = received["escalation"]["response"]
            from_commit.append((received["at"] - _epoch(response["responded_at"])) * 1000)
            from_cli_start.append((received["at"] - cli_started) * 1000)
    return {"from_commit": _summary(from_commit), "from_cli_start": _summary(from_cli_start)}


async def main(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-notify-") as tmp:
        workdir = Path(tmp)
        results: dict[str, Any] = {}
        if args.escalations:
            results["notification_latency"] = await notification_latency(workdir, args.escalations, args.gap)
        if args.answers:
            results["answer_latency"] = await answer_latency(workdir, args.answers)
    return results


def _print(results: dict[str, Any]) -> None:
    notify = results.get("notification_latency")
    if notify:
        print(f"Notification latency (creation -> receipt), gap {notify['gap_s']} s between escalations")
        for name in ("command", "webhook"):
            s = notify[name]
            print(f"  {name:<8} n={s['n']}  p50 {s['p50_ms']} ms  p95 {s['p95_ms']} ms  max {s['max_ms']} ms")
    answers = results.get("answer_latency")
    if answers:
        print("Answer latency (CLI respond -> waiting get_escalation returns)")
        for name, label in (("from_commit", "from the CLI's commit"), ("from_cli_start", "from CLI start")):
            s = answers[name]
            print(
                f"  {label:<22} n={s['n']}  p50 {s['p50_ms']} ms  p95 {s['p95_ms']} ms  max {s['max_ms']} ms"
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--escalations", type=int, default=50)
    parser.add_argument("--gap", type=float, default=0.1, help="seconds between two escalations")
    parser.add_argument("--answers", type=int, default=50)
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON ('-' for stdout)")
    arguments = parser.parse_args()
    outcome = anyio.run(main, arguments)
    _print(outcome)
    if arguments.json == "-":
        print(json.dumps(outcome, indent=2))
    elif arguments.json:
        Path(arguments.json).write_text(json.dumps(outcome, indent=2))
