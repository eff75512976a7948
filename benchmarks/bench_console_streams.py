"""The console's live streams (``/events``): the console process's CPU while streams are open.

Every page of the console holds an ``/events`` stream. The console reads the change feed once
for the whole process and hands each batch to every stream (``adapters/console/live.py``); a
reader per stream polled the store four times a second each (1,000 streams took 58% of a
core). This starts the installed ``console`` on a fresh store, opens 1, then ``--streams``
streams (8 per session, the most a session may hold) and reports the process's CPU (user +
system, from /proc) over ``--seconds`` each, and the ratio of the two: one reader makes it
close to 1. It exits with status 1 past ``RATIO_LIMIT``: a reader per stream made it 27x
at 400 streams, one reader 6.3x (benchmarks/README.md) and 2.0x at 200 streams over 3 s.
This check was a test counting the console's reads of the feed until 2026-11-28.

    python benchmarks/bench_console_streams.py --streams 800 --seconds 10
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import httpx2

SCRIPT = Path(sys.executable).parent / "mcp-server-escalation"
TOKEN = "operator-" + "o" * 40
PER_SESSION = 8
RATIO_LIMIT = 15.0


def cpu_seconds(pid: int) -> float:
    """User + system CPU of ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def open_streams(stack: ExitStack, url: str, count: int) -> None:
    """``count`` streams, ``PER_SESSION`` per logged-in session, held until ``stack`` closes."""
    for start in range(0, count, PER_SESSION):
        client = stack.enter_context(httpx2.Client(base_url=url, headers={"Origin": url}, timeout=30))
        assert client.post("/login", data={"token": TOKEN}).status_code == 303
        for _ in range(min(PER_SESSION, count - start)):
            stream = stack.enter_context(client.stream("GET", "/events"))
            assert stream.status_code == 200


def window(pid: int, seconds: float) -> float:
    """The process's share of one core over ``seconds``."""
    before, started = cpu_seconds(pid), time.monotonic()
    time.sleep(seconds)
    return (cpu_seconds(pid) - before) / (time.monotonic() - started)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--streams", type=int, default=400)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--json", help="write the results here ('-' for stdout)")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-streams-"))
    db = folder / "console.db"
    subprocess.run([SCRIPT, "--db", str(db), "db", "init"], check=True, capture_output=True)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "ESCALATION_OPERATOR_TOKEN": TOKEN}
    console = subprocess.Popen(
        [SCRIPT, "--db", str(db), "console", "--port", str(port)], env=env, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the console did not start"
                time.sleep(0.05)
        results = {}
        with ExitStack() as one:
            open_streams(one, url, 1)
            results["one_stream_core_share"] = window(console.pid, args.seconds)
        with ExitStack() as many:
            open_streams(many, url, args.streams)
            results[f"{args.streams}_streams_core_share"] = window(console.pid, args.seconds)
        results["ratio"] = results[f"{args.streams}_streams_core_share"] / max(
            results["one_stream_core_share"], 1e-6
        )
    finally:
        console.terminate()
        console.wait(timeout=10)
    for name, value in results.items():
        print(f"{name:28} {value:.4f}")
    if args.json:
        text = json.dumps(results, indent=2)
        if args.json == "-":
            print(text)
        else:
            Path(args.json).write_text(text)
    if results["ratio"] > RATIO_LIMIT:
        print(f"FAILED: {args.streams} streams cost {results['ratio']:.1f}x one (limit {RATIO_LIMIT:g}x)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
