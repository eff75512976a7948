"""A/B: a stdio server's whole life in CPU, with and without its start-up frozen (``process.py``).

Each run spawns a server, sends ``initialize`` and ``tools/list``, reads both answers and
closes stdin; the server shuts down and exits. The CPU it used from spawn to exit comes from
``wait4``. Two sides, alternating run by run so that load which comes and goes hits both:

- **B, frozen**: the console script, which freezes what the server built once it is ready;
- **A, as Python leaves it**: the same ``main`` started without the script's entry point, so
  the collector walks the ~90,000 start-up objects at every full pass and at exit.

    python benchmarks/bench_process_life.py
    python benchmarks/bench_process_life.py --runs 30
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_cold_start import INITIALIZE

SERVER_SCRIPT = Path(sys.executable).parent / "mcp-server-escalation"
UNFROZEN = "import sys\nfrom mcp_server_escalation.launch import main\nsys.exit(main())\n"

# What a host sends first, then the tool list: the server answers both, then reads EOF.
REQUESTS = INITIALIZE + b"".join(
    json.dumps(message).encode() + b"\n"
    for message in (
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    )
)


def life(command: list[str]) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one server from spawn to exit."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None
    assert proc.stdout is not None
    proc.stdin.write(REQUESTS)
    proc.stdin.flush()
    answers = [proc.stdout.readline(), proc.stdout.readline()]
    proc.stdin.close()
    proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    if proc.returncode != 0 or not all(b'"result"' in answer for answer in answers):
        raise SystemExit(f"{command} failed (exit {proc.returncode}): {answers}")
    return usage.ru_utime + usage.ru_stime, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="runs of each side (default 20)")
    args = parser.parse_args()
    if not SERVER_SCRIPT.exists():
        parser.error(f"{SERVER_SCRIPT} not found: install the package into this interpreter's environment")
    with tempfile.TemporaryDirectory(prefix="esc-life-") as tmp:
        store = ["--db", str(Path(tmp) / "life.db"), "serve"]
        sides = {
            "A unfrozen": [sys.executable, "-c", UNFROZEN, *store],
            "B frozen": [str(SERVER_SCRIPT), *store],
        }
        for command in sides.values():
            life(command)  # warm-up: the store is migrated, the files are cached
        cpu: dict[str, list[float]] = {side: [] for side in sides}
        wall: dict[str, list[float]] = {side: [] for side in sides}
        for run in range(args.runs):
            order = list(sides.items())
            if run % 2:
                order.reverse()
            for side, command in order:
                cpu_s, wall_s = life(command)
                cpu[side].append(cpu_s * 1000)
                wall[side].append(wall_s * 1000)
    print(f"a stdio server from spawn to exit (initialize, tools/list, EOF), {args.runs} runs each")
    print(f"{'side':<12} {'CPU ms (med)':>13} {'min':>7} {'max':>7} {'wall ms (med)':>14}")
    for side in sides:
        print(
            f"{side:<12} {statistics.median(cpu[side]):>13.0f} {min(cpu[side]):>7.0f} "
            f"{max(cpu[side]):>7.0f} {statistics.median(wall[side]):>14.0f}"
        )
    paired = statistics.median(b / a for a, b in zip(cpu["A unfrozen"], cpu["B frozen"], strict=True))
    print(f"median of paired CPU ratios B/A: {paired:.3f}x; load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
