"""The long run: a team's agents on one store for an hour, sampled window by window.

``bench_longrun.py`` drives the extremes in ~30 s (a stuck agent's 1,000 repeats, a big
store, every tool at its limits). This one runs the installed console script the way a team
uses it, for ``--minutes`` (default 60), and watches what a long life does to the servers:

- ``--agents`` (default 6) simulated agents, each with its own stdio server (as each host
  spawns one) on ONE SQLite store (WAL) in a temp folder, through the real SDK client. Each
  runs task after task: ``start_task``; a mix of ``record_failure`` (varied errors),
  ``report_progress`` (test counts, files), ``check_edit``, ``get_feedback`` and
  ``get_guidance``; now and then the same error three times, which pauses the task (and the
  default thresholds pause others: files, stalls, verification); while paused it waits with
  ``get_escalation(wait_seconds=4, known_revision=...)`` as the server tells it to, then
  ``acknowledge_response`` and goes on; a passing test run and ``end_task``.
- an operator who answers the pending escalations from the command line every
  ``--operator-every`` seconds (``escalations list --json``, ``escalations respond``);
- the no-op server (``noop_server.py``), called now and then in the same minutes, so load
  on the shared machine shows on both sides.

The calls of all agents together come at ``--rate`` per second (default 4: the driver, the
servers and the operator's commands used 10% of one core over 55 minutes). Every window
(``--window-minutes``, default a tenth or so of the run, 15 s to 5 min) records each
server's RSS, open file descriptors and threads (``/proc``), the store's and its ``-wal``
file's sizes, each tool's median and 95th percentile latency, the largest result per tool
in bytes, and the no-op's latency. At the end: a table per window and a verdict in words.
It exits 1 when a check fails: RSS, descriptors or threads growing, a tool slower against
the no-op in the last window than in the first, the WAL growing without bound, a result
of 16 KB or more, a failed call, or an integrity check (``PRAGMA integrity_check``, ``db
check``) that is not ok.

    python benchmarks/bench_soak.py --minutes 1           # a quick try
    nohup python benchmarks/bench_soak.py --minutes 55 > /tmp/soak.log 2>&1 &
    python benchmarks/bench_soak.py --minutes 60 --rate 4 --agents 6 --json soak.json

A benchmark, not a test: the suite never runs it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from bench_stdio import FILES, NAMES, NOOP_SERVER, SERVER_SCRIPT, record_failure_args

PROJECT = "/soak/team"
SCOPE = ["src/**", "tests/**"]
RESULT_LIMIT = 16 * 1024  # the product's RESULT_MAX_BYTES
WAIT = "get_escalation (wait)"  # polls that wait up to 4 s for a human: timed, never compared
LATENCY_TOOLS = (
    "start_task",
    "record_failure",
    "report_progress",
    "check_edit",
    "get_feedback",
    "get_guidance",
    "acknowledge_response",
    "end_task",
)
MIN_CALLS = 8  # fewer calls in a window than this: its percentiles say nothing
LATENCY_GROWTH = 1.5  # a tool's ratio to the no-op, last window over first
RSS_GROWTH = (1.25, 15.0)  # fails only past both: the ratio and the MB
HANDLES_GROWTH = 8  # more descriptors or threads at the end than at the first window
WAL_FLOOR = 8 * 1024 * 1024  # a WAL under this is bounded whatever its history


@dataclass
class Window:
    """What one window of the run saw; the sampler closes it and starts the next."""

    started: float
    latency: dict[str, list[float]] = field(default_factory=dict)
    largest: dict[str, int] = field(default_factory=dict)

    def note(self, tool: str, seconds: float, size: int) -> None:
        self.latency.setdefault(tool, []).append(seconds)
        self.largest[tool] = max(self.largest.get(tool, 0), size)


@dataclass
class Soak:
    """The run's state shared by the agents, the operator and the sampler."""

    ends_at: float
    rate: float
    agents: int
    rng: random.Random
    window: Window
    samples: list[dict[str, Any]] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    def over(self) -> bool:
        return time.monotonic() >= self.ends_at

    def count(self, what: str) -> None:
        self.counts[what] = self.counts.get(what, 0) + 1

    async def pace(self) -> None:
        """One agent's turn: all agents together make ``rate`` calls a second."""
        await anyio.sleep(self.agents / self.rate * self.rng.uniform(0.5, 1.5))


def _text_bytes(result: Any) -> int:
    return sum(len(getattr(part, "text", "").encode()) for part in result.content)


async def call(
    soak: Soak, client: Client, tool: str, arguments: dict[str, Any], label: str = ""
) -> dict[str, Any]:
    """One timed call; a failure is recorded and answered as an empty result."""
    started = time.perf_counter()
    try:
        result = await client.call_tool(tool, arguments)
    except Exception as exc:  # noqa: BLE001 (a broken call is a finding, not the end of the run)
        soak.failed.append(f"{tool}: {type(exc).__name__}: {exc}")
        return {}
    soak.window.note(label or tool, time.perf_counter() - started, _text_bytes(result))
    if result.is_error or result.structured_content is None:
        text = " ".join(getattr(part, "text", "") for part in result.content)
        soak.failed.append(f"{tool}: {text[:300]}")
        return {}
    return result.structured_content


class Agent:
    """One simulated agent: task after task until the run is over."""

    def __init__(self, soak: Soak, client: Client, n: int) -> None:
        self.soak, self.client, self.n = soak, client, n
        self.rng = random.Random(soak.rng.random())  # noqa: S311 (traffic, not security)
        self.i = n * 100_000  # varies every argument from call to call and agent to agent

    async def run(self) -> None:
        task = 0
        while not self.soak.over():
            task += 1
            await self.one_task(f"agent{self.n}-task{task}")

    async def do(self, tool: str, arguments: dict[str, Any]) -> str:
        """A paced call; waits out a pause as the agent is told to. Returns the directive."""
        await self.soak.pace()
        self.i += 1
        said = await call(self.soak, self.client, tool, arguments)
        directive = str(said.get("directive", ""))
        holding = said.get("holding") or {}
        if directive == "pause" and holding.get("status") == "pending":
            self.soak.count("pauses")
            return await self.wait_for_answer(int(holding["escalation_id"]), int(holding.get("revision", 0)))
        return directive

    async def wait_for_answer(self, escalation_id: int, revision: int) -> str:
        while not self.soak.over():
            arguments = {"escalation_id": escalation_id, "wait_seconds": 4, "known_revision": revision}
            said = await call(self.soak, self.client, "get_escalation", arguments, WAIT)
            if not said:
                return "stop"
            revision = int(said.get("revision", revision))
            if said.get("status") != "pending":
                acked = await call(
                    self.soak, self.client, "acknowledge_response", {"escalation_id": escalation_id}
                )
                return str(acked.get("directive", "stop"))
        return "stop"

    async def one_task(self, task_id: str) -> None:
        start = {"task_id": task_id, "title": f"fix the {NAMES[self.n % len(NAMES)]} bug", "project": PROJECT}
        start |= {
            "agent_id": f"agent-{self.n}",
            "scope": SCOPE,
            "specification": "make the failing tests pass",
        }
        if await self.do("start_task", start) == "stop":
            return
        stuck_at = self.rng.randint(3, 20) if self.rng.random() < 0.3 else -1
        for step in range(self.rng.randint(8, 40)):
            if self.soak.over():
                return
            steps = self.stuck(task_id) if step == stuck_at else [self.step(task_id)]
            for tool, arguments in steps:
                if await self.do(tool, arguments) == "stop":
                    return
        passing = {"task_id": task_id, "tests_passed": 150, "tests_failed": 0, "outcome": "success"}
        passing |= {"files_modified": [], "note": "all tests pass"}
        if await self.do("report_progress", passing) == "stop":
            return
        outcome = "completed" if self.rng.random() < 0.85 else "abandoned"
        await self.do(
            "end_task", {"task_id": task_id, "outcome": outcome, "note": f"{outcome} by the soak run"}
        )

    def stuck(self, task_id: str) -> list[tuple[str, dict[str, Any]]]:
        """The same error three times in a row: a human is paged and the task pauses."""
        same = record_failure_args(task_id, self.i)
        same["message"] = f"AssertionError: assert {self.i} == {self.i + 1} in test_stuck_{self.n}"
        return [("record_failure", same)] * 3

    def step(self, task_id: str) -> tuple[str, dict[str, Any]]:
        i, rng = self.i, self.rng
        roll = rng.random()
        if roll < 0.32:
            return "record_failure", record_failure_args(task_id, i)
        if roll < 0.60:
            files = [FILES[(i + j) % len(FILES)] for j in range(rng.randint(0, 3))]
            progress: dict[str, Any] = {"task_id": task_id, "files_modified": files}
            progress |= {"outcome": rng.choice(("neutral", "failure", "success")), "note": f"attempt {i}"}
            if rng.random() < 0.6:
                progress |= {"tests_passed": 100 + (i * 13) % 50, "tests_failed": rng.randint(0, 8)}
            return "report_progress", progress
        if roll < 0.78:
            paths = [FILES[(i * 5 + j) % len(FILES)] for j in range(rng.randint(1, 3))]
            if rng.random() < 0.02:
                paths.append("docs/notes.md")  # outside the scope: a human decides
            return "check_edit", {"task_id": task_id, "paths": paths}
        if roll < 0.89:
            query = record_failure_args(task_id, i - rng.randint(0, 5))["message"]
            return "get_guidance", {
                "task_id": task_id,
                "scope": rng.choice(("task", "project")),
                "query": query,
            }
        return "get_feedback", {"task_id": task_id, "step": "main"}


async def cli(soak: Soak, script: str, db: str, *arguments: str) -> subprocess.CompletedProcess[bytes]:
    started = time.perf_counter()
    done = await anyio.run_process([script, "--db", db, *arguments], check=False)
    soak.window.note(f"cli {arguments[0]} {arguments[1]}", time.perf_counter() - started, len(done.stdout))
    if done.returncode != 0:
        soak.failed.append(f"cli {' '.join(arguments[:3])}: {done.stderr.decode()[-300:]}")
    return done


def _answer(rng: random.Random, kind: str) -> list[str]:
    if kind in ("file_limit", "scope_deviation") and rng.random() < 0.7:
        return ["--approve"]
    roll = rng.random()
    if roll < 0.05:
        return ["--terminate", "stop here, a human takes over"]
    if roll < 0.12:
        return ["--override", "skip that test for now and go on"]
    return ["--guidance", rng.choice(("check the fixture's data first", "revert the last change and retry"))]


async def operator(soak: Soak, script: str, db: str, every: float) -> None:
    """A human at a terminal who answers what is pending now and then."""
    rng = random.Random(soak.rng.random())  # noqa: S311 (traffic, not security)
    while not soak.over():
        await anyio.sleep(every * rng.uniform(0.5, 1.5))
        listed = await cli(
            soak, script, db, "escalations", "list", "--status", "pending", "--json", "--limit", "20"
        )
        if listed.returncode != 0:
            continue
        for escalation in json.loads(listed.stdout).get("escalations", [])[:6]:
            answer = _answer(rng, str(escalation.get("type", "")))
            await cli(soak, script, db, "escalations", "respond", str(escalation["escalation_id"]), *answer)
            soak.count("answers")


async def noop_caller(soak: Soak, client: Client, per_second: float) -> None:
    rng = random.Random(soak.rng.random())  # noqa: S311 (timing, not security)
    while not soak.over():
        await anyio.sleep(rng.uniform(0.5, 1.5) / per_second)
        await call(soak, client, "noop", {"text": "soak"})


def _proc_status(pid: int) -> dict[str, int]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM", "Threads"):
            fields[name] = int(value.split()[0])
    stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return {
        "rss_kb": fields["VmRSS"],
        "hwm_kb": fields["VmHWM"],
        "threads": fields["Threads"],
        "fds": sum(1 for _ in Path(f"/proc/{pid}/fd").iterdir()),
        "cpu_s": round((int(stat[11]) + int(stat[12])) / ticks, 2),
    }


def our_servers() -> list[int]:
    """This process's children that serve our store (not the no-op, not the operator's commands)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if (
            parent == os.getpid()
            and any(a.endswith(b"mcp-server-escalation") for a in argv)
            and b"serve" in argv
        ):
            found.append(int(entry.name))
    return sorted(found)


def _percentiles(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {
        "calls": len(values),
        "p50_ms": round(statistics.median(values) * 1000, 2),
        "p95_ms": round(p95 * 1000, 2),
    }


def _size(path: str) -> int:
    try:
        return Path(path).stat().st_size
    except OSError:
        return 0


def sample(soak: Soak, db: str, servers: list[int], began: float) -> None:
    window, soak.window = soak.window, Window(started=time.monotonic())
    procs = {}
    for pid in servers:
        try:
            procs[str(pid)] = _proc_status(pid)
        except OSError:
            soak.failed.append(f"server {pid} is gone")
    soak.samples.append(
        {
            "minute": round((time.monotonic() - began) / 60, 2),
            "load_average": round(os.getloadavg()[0], 2),
            "servers": procs,
            "db_bytes": _size(db),
            "wal_bytes": _size(db + "-wal"),
            "latency": {tool: _percentiles(values) for tool, values in sorted(window.latency.items())},
            "largest_bytes": dict(sorted(window.largest.items())),
            "failed_so_far": len(soak.failed),
        }
    )
    print(_progress(soak.samples[-1]), flush=True)  # so that a long run can be watched


def _progress(s: dict[str, Any]) -> str:
    rss = max((p["rss_kb"] for p in s["servers"].values()), default=0) / 1024
    medians = ", ".join(
        f"{tool} {p['p50_ms']}" for tool, p in s["latency"].items() if p and tool in LATENCY_TOOLS
    )
    noop = (s["latency"].get("noop") or {}).get("p50_ms")
    return (
        f"minute {s['minute']}: load {s['load_average']}, largest RSS {rss:.1f} MB,"
        f" WAL {s['wal_bytes'] / 2**20:.2f} MB, store {s['db_bytes'] / 2**20:.2f} MB,"
        f" failed {s['failed_so_far']}; medians ms: noop {noop}, {medians}"
    )


async def sampler(soak: Soak, db: str, servers: list[int], every: float, began: float) -> None:
    while not soak.over():
        await anyio.sleep(min(every, max(0.0, soak.ends_at - time.monotonic())))
        sample(soak, db, servers, began)


async def drive(
    soak: Soak, script: str, db: str, errlog: TextIO, options: argparse.Namespace
) -> dict[str, Any]:
    began = time.monotonic()
    async with AsyncExitStack() as stack:
        clients = []
        for _ in range(options.agents):
            params = StdioServerParameters(command=script, args=["--db", db, "serve"])
            transport = stdio_client(params, errlog=errlog)
            clients.append(await stack.enter_async_context(Client(transport, mode="legacy")))  # type: ignore[arg-type]
        noop_params = StdioServerParameters(command=sys.executable, args=[str(NOOP_SERVER)])
        noop = await stack.enter_async_context(
            Client(stdio_client(noop_params, errlog=errlog), mode="legacy")
        )  # type: ignore[arg-type]
        servers = our_servers()
        soak.window = Window(started=time.monotonic())
        soak.ends_at = time.monotonic() + options.minutes * 60
        async with anyio.create_task_group() as tg:
            for n, client in enumerate(clients):
                tg.start_soon(Agent(soak, client, n).run)
            tg.start_soon(operator, soak, script, db, options.operator_every)
            tg.start_soon(noop_caller, soak, noop, max(0.5, options.rate / 8))
            tg.start_soon(sampler, soak, db, servers, options.window_minutes * 60, began)
        cpu = {str(pid): _proc_status(pid)["cpu_s"] for pid in servers}
    return {"servers_cpu_s": cpu, "wall_s": round(time.monotonic() - began, 1)}


def integrity(script: str, db: str) -> dict[str, Any]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        pragma = [row[0] for row in conn.execute("PRAGMA integrity_check")]
        tables = ("tasks", "failures", "escalations")
        counts = {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables}  # noqa: S608
    checked = subprocess.run([script, "--db", db, "db", "check"], capture_output=True, text=True, check=False)
    return {
        "pragma": "; ".join(pragma),
        "db_check_status": checked.returncode,
        "db_check": checked.stdout.strip() + checked.stderr.strip()[-500:] * (checked.returncode != 0),
        "rows": counts,
    }


def _tools_table(samples: list[dict[str, Any]]) -> list[str]:
    tools = [*LATENCY_TOOLS, "noop", WAIT]
    lines = ["window  " + "  ".join(f"{t[:16]:>16}" for t in tools), "(median/p95 ms, calls)"]
    for s in samples:
        cells = []
        for tool in tools:
            p = s["latency"].get(tool)
            cells.append(f"{p['p50_ms']:.1f}/{p['p95_ms']:.1f} {p['calls']}" if p else "-")
        lines.append(f"{s['minute']:>6.1f}  " + "  ".join(f"{c:>16}" for c in cells))
    return lines


def _resources_table(samples: list[dict[str, Any]]) -> list[str]:
    lines = [
        "window  load  calls  RSS MB (min-max over servers)  fds  threads"
        "  store MB  WAL MB  largest B  failed"
    ]
    for s in samples:
        procs = list(s["servers"].values()) or [{"rss_kb": 0, "fds": 0, "threads": 0}]
        rss = [p["rss_kb"] / 1024 for p in procs]
        calls = sum(p["calls"] for p in s["latency"].values() if p)
        largest = max((v for k, v in s["largest_bytes"].items() if not k.startswith("cli")), default=0)
        lines.append(
            f"{s['minute']:>6.1f}  {s['load_average']:>4.1f}  {calls:>5}  {min(rss):>14.1f}-{max(rss):<14.1f}"
            f"  {max(p['fds'] for p in procs):>3}  {max(p['threads'] for p in procs):>7}"
            f"  {s['db_bytes'] / 2**20:>8.2f}  {s['wal_bytes'] / 2**20:>6.2f}"
            f"  {largest:>9,}  {s['failed_so_far']:>6}"
        )
    return lines


def _ratio(sample: dict[str, Any], tool: str) -> float | None:
    p, noop = sample["latency"].get(tool), sample["latency"].get("noop")
    if not p or not noop or p["calls"] < MIN_CALLS or noop["calls"] < MIN_CALLS // 2:
        return None
    return float(p["p50_ms"]) / float(noop["p50_ms"])


def _second_half_mb(samples: list[dict[str, Any]], pid: str) -> float:
    """RSS growth over the second half of the windows: a leak keeps going after the warm-up."""
    middle, end = samples[len(samples) // 2]["servers"].get(pid), samples[-1]["servers"].get(pid)
    return (end["rss_kb"] - middle["rss_kb"]) / 1024 if middle and end else 0.0


def _server_growth(samples: list[dict[str, Any]]) -> list[tuple[str, bool]]:
    verdicts = []
    first, last = samples[0], samples[-1]
    for pid, start in first["servers"].items():
        end = last["servers"].get(pid)
        if end is None:
            verdicts.append((f"server {pid} ended before the run did", False))
            continue
        grew_mb = (end["rss_kb"] - start["rss_kb"]) / 1024
        ratio = end["rss_kb"] / start["rss_kb"]
        ok = ratio <= RSS_GROWTH[0] or grew_mb <= RSS_GROWTH[1]
        verdicts.append(
            (
                f"server {pid}: RSS {start['rss_kb'] / 1024:.1f} -> {end['rss_kb'] / 1024:.1f} MB"
                f" ({grew_mb:+.1f} MB, {ratio:.2f}x; second half {_second_half_mb(samples, pid):+.1f} MB;"
                f" peak {end['hwm_kb'] / 1024:.1f} MB),"
                f" descriptors {start['fds']} -> {end['fds']},"
                f" threads {start['threads']} -> {end['threads']}",
                ok
                and end["fds"] <= start["fds"] + HANDLES_GROWTH
                and end["threads"] <= start["threads"] + HANDLES_GROWTH,
            )
        )
    return verdicts


def _latency_verdicts(first: dict[str, Any], last: dict[str, Any]) -> list[tuple[str, bool]]:
    verdicts = []
    noop_first, noop_last = first["latency"].get("noop"), last["latency"].get("noop")
    if noop_first and noop_last:
        change = noop_last["p50_ms"] / noop_first["p50_ms"]
        verdicts.append(
            (f"no-op median {noop_first['p50_ms']} -> {noop_last['p50_ms']} ms ({change:.2f}x)", True)
        )
    for tool in LATENCY_TOOLS:
        a, b = first["latency"].get(tool), last["latency"].get(tool)
        ra, rb = _ratio(first, tool), _ratio(last, tool)
        if not a or not b or ra is None or rb is None:
            verdicts.append((f"{tool}: too few calls in the first or last window to compare", True))
            continue
        verdicts.append(
            (
                f"{tool}: median {a['p50_ms']} -> {b['p50_ms']} ms ({b['p50_ms'] / a['p50_ms']:.2f}x),"
                f" p95 {a['p95_ms']} -> {b['p95_ms']} ms; against the no-op {ra:.2f}x -> {rb:.2f}x",
                rb <= ra * LATENCY_GROWTH,
            )
        )
    return verdicts


def _wal_verdict(samples: list[dict[str, Any]]) -> tuple[str, bool]:
    half = max(1, len(samples) // 2)
    early = max(s["wal_bytes"] for s in samples[:half])
    late = max(s["wal_bytes"] for s in samples[half:]) if samples[half:] else early
    ok = late <= max(early * 1.25, WAL_FLOOR)
    return (
        f"WAL largest {early / 2**20:.2f} MB in the first half of the windows,"
        f" {late / 2**20:.2f} MB in the second:"
        f" {'bounded' if ok else 'still growing'}; store {samples[0]['db_bytes'] / 2**20:.2f} ->"
        f" {samples[-1]['db_bytes'] / 2**20:.2f} MB",
        ok,
    )


def _largest_verdict(samples: list[dict[str, Any]]) -> tuple[str, bool]:
    largest: dict[str, int] = {}
    for s in samples:
        for tool, size in s["largest_bytes"].items():
            if not tool.startswith("cli"):
                largest[tool] = max(largest.get(tool, 0), size)
    tool, size = max(largest.items(), key=lambda item: item[1], default=("none", 0))
    listed = ", ".join(f"{t} {b:,}" for t, b in sorted(largest.items(), key=lambda item: -item[1]))
    return f"largest result {size:,} B ({tool}; limit {RESULT_LIMIT:,}): {listed}", size < RESULT_LIMIT


def verdicts(figures: dict[str, Any]) -> list[tuple[str, bool]]:
    samples = figures["samples"]
    first, last = samples[0], samples[-1]
    found = [*_server_growth(samples), *_latency_verdicts(first, last), _wal_verdict(samples)]
    found.append(_largest_verdict(samples))
    checks = figures["integrity"]
    found.append((f"PRAGMA integrity_check: {checks['pragma']}", checks["pragma"] == "ok"))
    found.append((f"db check: exit {checks['db_check_status']}", checks["db_check_status"] == 0))
    failed = figures["failed"]
    found.append((f"failed calls: {len(failed)}" + "".join(f"\n    {f}" for f in failed[:10]), not failed))
    return found


def _cpu_share(figures: dict[str, Any]) -> str:
    mine = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    driver = mine.ru_utime + mine.ru_stime
    others = (
        children.ru_utime + children.ru_stime
    )  # servers, the no-op and the operator's commands, once reaped
    wall = figures["run"]["wall_s"]
    share = (driver + others) / wall
    return f"CPU {driver + others:.0f} s over {wall:.0f} s = {share:.0%} of one core (driver {driver:.0f} s)"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--minutes", type=float, default=60.0, help="how long the traffic runs")
    parser.add_argument("--rate", type=float, default=4.0, help="tool calls per second, all agents together")
    parser.add_argument(
        "--agents", type=int, default=6, help="simulated agents, each with its own stdio server"
    )
    parser.add_argument(
        "--operator-every", type=float, default=20.0, help="seconds between the operator's rounds"
    )
    parser.add_argument(
        "--window-minutes", type=float, help="sample every so many minutes (default: ~a tenth)"
    )
    parser.add_argument("--script", default=str(SERVER_SCRIPT), help="the console script to run")
    parser.add_argument("--seed", type=int, default=20261128)
    parser.add_argument("--keep", help="a folder to keep the store and the servers' stderr in")
    parser.add_argument("--json", help="write the figures to this file ('-' for stdout)")
    options = parser.parse_args()
    if options.window_minutes is None:
        options.window_minutes = min(5.0, max(0.25, options.minutes / 11))
    with tempfile.TemporaryDirectory(prefix="esc-soak-") as tmp:
        folder = Path(options.keep or tmp)
        folder.mkdir(parents=True, exist_ok=True)
        db = str(folder / "soak.db")
        soak = Soak(0.0, options.rate, options.agents, random.Random(options.seed), Window(0.0))  # noqa: S311
        started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
        with (folder / "servers.stderr").open("w", encoding="utf-8") as errlog:
            run = anyio.run(drive, soak, options.script, db, errlog, options)
        stderr = (folder / "servers.stderr").read_text(encoding="utf-8", errors="replace")
        figures = {
            "command": " ".join(sys.argv),
            "started": started,
            "ended": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
            "options": vars(options),
            "run": run,
            "counts": soak.counts,
            "samples": soak.samples,
            "failed": soak.failed,
            "integrity": integrity(options.script, db),
            "server_stderr": {w: stderr.count(w) for w in ("Traceback", "ERROR", "WARNING")},
        }
    report(figures, options.json)
    return 0 if all(ok for _, ok in verdicts(figures)) else 1


def report(figures: dict[str, Any], json_to: str | None) -> None:
    samples = figures["samples"]
    print(f"{figures['command']}\n{figures['started']} -> {figures['ended']}; {_cpu_share(figures)}")
    loads = [s["load_average"] for s in samples]
    cpu = ", ".join(f"{c:.0f}" for c in figures["run"]["servers_cpu_s"].values())
    print(f"load average (1 min) {min(loads)}-{max(loads)} at the samples; servers' CPU s: {cpu}")
    counted = ", ".join(f"{number:,} {name}" for name, number in figures["counts"].items())
    rows = ", ".join(f"{number:,} {table}" for table, number in figures["integrity"]["rows"].items())
    print(f"counted: {counted or 'nothing'}; rows in the store: {rows}")
    print(f"servers' stderr: {figures['server_stderr']}\n")
    print("\n".join(_resources_table(samples)) + "\n")
    print("\n".join(_tools_table(samples)) + "\n")
    results = verdicts(figures)
    for text, ok in results:
        print(f"[{'ok' if ok else 'FAILED'}] {text}")
    failing = [text.split("\n")[0] for text, ok in results if not ok]
    print(f"\nverdict: {'every check passed' if not failing else 'failed: ' + '; '.join(failing)}")
    if json_to:
        text = json.dumps(figures, indent=2)
        print(text) if json_to == "-" else Path(json_to).write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    raise SystemExit(main())
