"""Where the test suite's time goes: CPU and wall time per test module, and the part the SDK
client spends checking our output schemas.

The README's test command runs under ``/usr/bin/time``-like accounting with a plugin of this
file's own (``suite_accounting``): each test's wall time, the CPU of its worker and of the
worker's finished child processes (server processes, CLIs, browsers), and the CPU the SDK
client spends compiling a validator for an output schema (``check_schema`` against the JSON
Schema metaschema, once per tool and session). A server PostgreSQL starts daemonised, so its
CPU is counted by no one.

    python benchmarks/measure_suite.py [--top 25] [--rows FILE] [pytest arguments...]

Not a test and not a timing the suite asserts: it says which modules to make cheaper.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PYTEST = (sys.executable, "-m", "pytest", "-q", "-p", "suite_accounting", "-p", "no:cacheprovider")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=25, help="modules listed, by CPU")
    parser.add_argument("--rows", type=Path, help="also write every test's row here (JSON)")
    options, pytest_args = parser.parse_known_args()
    with tempfile.TemporaryDirectory(prefix="suite-accounting-") as folder:
        env = {**os.environ, "SUITE_ACCOUNTING": folder, "PYTHONPATH": str(HERE / "suite_plugin")}
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        run = subprocess.run(
            [*PYTEST, *pytest_args],
            cwd=ROOT,
            env=env,
            check=False,
        )
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        rows, schema_cpu, schema_checks = _read(Path(folder))
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    _report(rows, wall, cpu, schema_cpu, schema_checks, options.top)
    if options.rows:
        options.rows.write_text(json.dumps(rows))
    return run.returncode


def _read(folder: Path) -> tuple[list[list], float, int]:
    rows: list[list] = []
    schema_cpu, schema_checks = 0.0, 0
    for path in folder.glob("*.json"):
        worker = json.loads(path.read_text())
        rows += worker["tests"]
        schema_cpu += worker["schema_cpu"]
        schema_checks += worker["schema_checks"]
    return rows, schema_cpu, schema_checks


def _report(rows: list[list], wall: float, cpu: float, schema_cpu: float, checks: int, top: int) -> None:
    modules: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0.0, 0.0, 0.0, 0])
    for nodeid, took, own, children, schema in rows:
        module = modules[nodeid.split("::")[0]]
        module[0] += took
        module[1] += own
        module[2] += children
        module[3] += schema
        module[4] += 1
    print(f"{len(rows)} tests in {wall:.0f} s wall, {cpu:.0f} s CPU (the run's processes that ended)")
    print(f"SDK client checking output schemas: {schema_cpu:.0f} s CPU in {checks} checks")
    print(f"{'CPU s':>7} {'own':>6} {'schemas':>7} {'children':>8} {'wall s':>7} {'tests':>5}  module")
    ranked = sorted(modules.items(), key=lambda item: -(item[1][1] + item[1][2]))
    for name, (took, own, children, schema, count) in ranked[:top]:
        figures = f"{own + children:7.1f} {own:6.1f} {schema:7.1f} {children:8.1f} {took:7.1f}"
        print(f"{figures} {int(count):5d}  {name}")


if __name__ == "__main__":
    raise SystemExit(main())
