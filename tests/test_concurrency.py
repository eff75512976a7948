"""Four server processes write to one store at once: no error, no lost write (a SQLite
file, and a PostgreSQL database: there each process is what a server on another machine is).

Each worker is the installed console script as a real stdio subprocess (its own OS
process, its own connection). All four connect first, then start together; each records
failures and progress on a task of its own and, at the same time, on one shared task.
Every counter a call returns is the value that call committed, so on the shared task the
returned values must be exactly 1..N: a lost increment would show up as a repeated value.
Then the same four race on one more task, each repeating one error until the threshold is
crossed (by several of them at once): one escalation holds the task, and every process that
names one names it.
"""

from __future__ import annotations

import itertools
import select
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from conftest import connect

pytestmark = pytest.mark.both_backends

SCRIPT = Path(sys.executable).parent / "mcp-server-escalation"
WORKERS = 4
CALLS = 25  # record_failure calls and report_progress calls, per worker and task
SHARED = "shared-task"
RACED = "raced"
# High enough that no trigger fires: this test is about writes, not escalations.
NO_TRIGGERS = {
    "same_error_repeated": 1000,
    "total_verification_attempts": 1000,
    "no_file_changes_after_attempts": 1000,
    "no_test_improvement_after": 1000,
    "files_modified_exceeds": 1000,
}
COMMON = "AssertionError: the shared flaky check failed"


def _own_message(worker: int) -> str:
    # Words, not numbers: the fingerprint replaces numbers, and each worker needs its own.
    return f"KeyError in the {['alpha', 'beta', 'gamma', 'delta'][worker]} loader"


class Worker:
    """One server process and everything its calls returned."""

    def __init__(self, number: int) -> None:
        self.number = number
        self.task_id = f"own-{number}"
        self.results: list[tuple[str, str, dict[str, Any]]] = []  # (tool, task_id, result)
        self.errors: list[str] = []
        self.named: list[int] = []  # the escalations its repeats on the raced task named

    async def call(self, client: Client, tool: str, **arguments: Any) -> None:
        result = await client.call_tool(tool, arguments)
        if result.is_error or result.structured_content is None:
            self.errors.append(f"worker {self.number} {tool}: {result.content}")
            return
        self.results.append((tool, arguments["task_id"], result.structured_content))

    async def write(self, client: Client, task_id: str) -> None:
        """CALLS failures and CALLS progress reports on ``task_id``, interleaved."""
        for i in range(CALLS):
            await self.call(
                client,
                "record_failure",
                task_id=task_id,
                message=COMMON if i % 2 == 0 else _own_message(self.number),
                signal_type="test_failure",
                file=f"src/w{self.number}.py",
                line=i + 1,
                attempted_action=f"worker {self.number} attempt {i}",
            )
            await self.call(
                client,
                "report_progress",
                task_id=task_id,
                files_modified=[f"src/w{self.number}/f{i}.py"],
                tests_passed=i + 1,
                tests_failed=CALLS - i,
                note=f"worker {self.number} attempt {i}",
            )

    async def race(self, client: Client) -> None:
        """The same error three times on the raced task (whose threshold is three)."""
        for _ in range(3):
            result = await client.call_tool("record_failure", {"task_id": RACED, "message": COMMON})
            if result.is_error or result.structured_content is None:
                self.errors.append(f"worker {self.number} race: {result.content}")
                continue
            holding = result.structured_content.get("holding")
            if holding:
                self.named.append(holding["escalation_id"])


async def test_four_server_processes_lose_no_write_and_open_one_escalation_on_one_store(db_path: str) -> None:
    workers = [Worker(n) for n in range(WORKERS)]
    ready = 0
    written = 0
    go = anyio.Event()
    race = anyio.Event()

    async def run(worker: Worker) -> None:
        nonlocal ready, written
        params = StdioServerParameters(command=str(SCRIPT), args=["--db", db_path])
        mode = "legacy" if worker.number % 2 else "auto"
        async with Client(params, mode=mode) as client:  # type: ignore[arg-type]
            await worker.call(
                client,
                "start_task",
                title=f"Worker {worker.number}",
                task_id=worker.task_id,
                agent_id=f"worker-{worker.number}",
                thresholds=NO_TRIGGERS,
            )
            ready += 1
            if ready == WORKERS:
                go.set()
            await go.wait()
            # Own task and shared task at the same time, from the same process.
            async with anyio.create_task_group() as tg:
                tg.start_soon(worker.write, client, worker.task_id)
                tg.start_soon(worker.write, client, SHARED)
            written += 1
            if written == WORKERS:
                race.set()
            await race.wait()
            await worker.race(client)

    with anyio.fail_after(60):
        async with connect(db_path) as setup:
            await setup.call("start_task", title="Shared", task_id=SHARED, thresholds=NO_TRIGGERS)
            await setup.call("start_task", title="Raced", task_id=RACED)
        async with anyio.create_task_group() as tg:
            for worker in workers:
                tg.start_soon(run, worker)
        async with connect(db_path) as reader:
            views = {
                task_id: await reader.call("get_task", task_id=task_id)
                for task_id in [SHARED, *(w.task_id for w in workers)]
            }
            escalations = await reader.call("list_escalations", status="all")

    assert [e for w in workers for e in w.errors] == []
    assert sum(len(w.results) for w in workers) == WORKERS * (1 + 4 * CALLS)
    assert {r["directive"] for w in workers for _, _, r in w.results} == {"proceed"}
    # The race: one escalation for the raced task, the one every process that named one named.
    assert escalations["total"] == 1
    [held] = escalations["escalations"]
    assert held["task_id"] == RACED
    named = [n for w in workers for n in w.named]
    assert named
    assert set(named) == {held["escalation_id"]}

    # Per task: what each call committed, in the order of the commits.
    failures: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    verifications: dict[str, list[int]] = defaultdict(list)
    files: dict[str, list[int]] = defaultdict(list)
    for worker in workers:
        for tool, task_id, result in worker.results:
            if tool == "record_failure":
                failure = result["failure"]
                failures[task_id][failure["fingerprint"]].append(failure["occurrence_count"])
            elif tool == "report_progress":
                verifications[task_id].append(result["counters"]["verification_attempts"])
                files[task_id].append(result["counters"]["files_modified"])

    total = WORKERS * CALLS
    # The writers really interleaved on the shared task (run one after another, the commit
    # order would switch worker only WORKERS - 1 times), so the checks below mean something.
    commits = sorted(
        (result["counters"]["verification_attempts"], worker.number)
        for worker in workers
        for tool, task_id, result in worker.results
        if tool == "report_progress" and task_id == SHARED
    )
    switches = sum(1 for a, b in itertools.pairwise(commits) if a[1] != b[1])
    assert switches >= WORKERS, f"the workers barely overlapped ({switches} switches)"

    shared = views[SHARED]
    assert shared["failure_occurrences"] == total
    assert shared["failure_records"] == 1 + WORKERS
    counts = sorted(len(c) for c in failures[SHARED].values())
    assert counts == sorted([WORKERS * ((CALLS + 1) // 2)] + [CALLS // 2] * WORKERS)
    for returned in failures[SHARED].values():
        assert sorted(returned) == list(range(1, len(returned) + 1))
    assert sorted(verifications[SHARED]) == list(range(1, total + 1))
    assert sorted(files[SHARED]) == list(range(1, total + 1))
    assert shared["counters"]["verification_attempts"] == total
    assert shared["counters"]["files_modified"] == total
    assert shared["counters"]["attempts_without_file_change"] == 0
    # Every path is kept (the view lists the latest 50 of them and counts them all).
    everything = {f"src/w{w}/f{i}.py" for w in range(WORKERS) for i in range(CALLS)}
    assert shared["modified_count"] == len(everything)
    assert set(shared["modified_files"]) <= everything
    assert len(shared["modified_files"]) == min(50, len(everything))

    for worker in workers:
        own = views[worker.task_id]
        assert own["task"]["agent_id"] == f"worker-{worker.number}"
        assert own["failure_occurrences"] == CALLS
        assert own["failure_records"] == 2
        for returned in failures[worker.task_id].values():
            assert returned == list(range(1, len(returned) + 1))  # one writer: in order
        assert verifications[worker.task_id] == list(range(1, CALLS + 1))
        assert own["counters"]["verification_attempts"] == CALLS
        assert own["counters"]["files_modified"] == CALLS
        assert [(r["passed"], r["failed"]) for r in own["test_history"]] == [
            (i + 1, CALLS - i) for i in range(CALLS)
        ]


# Says it is ready once its imports are done; then opens each store it is told (a path on
# a line of stdin) and says when it has.
_OPEN_WHEN_TOLD = """
import sys, anyio
from mcp_server_escalation.store.db import Database
async def main(path):
    db = await Database.open(path)
    await db.close()
print("ready", flush=True)
for line in sys.stdin:
    anyio.run(main, line.strip())
    print("opened", flush=True)
"""
# Thirty rounds of eight: with fewer, a store that gives up at the first "database is
# locked" passed as often as not.
ROUNDS = 30
OPENERS = 8


def _lines_within(procs: list[subprocess.Popen[str]], seconds: float = 60) -> list[str]:
    """The next line each process prints, "" for one that printed none within ``seconds`` of
    the call (a store that blocks fails the test instead of holding it up)."""
    deadline = time.monotonic() + seconds
    lines = []
    for process in procs:
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], max(0.0, deadline - time.monotonic()))
        lines.append(process.stdout.readline() if ready else "")
    return lines


def test_many_processes_creating_one_new_store_at_once_all_succeed(tmp_path: Path) -> None:
    # SQLite refuses the switch to WAL at once (no busy timeout) while another process
    # writes a store not yet in WAL mode; the store must wait and retry, never fail.
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _OPEN_WHEN_TOLD],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(OPENERS)
    ]
    try:
        # Every process started and imported before any opens: then all are told at once, in
        # each round a new store (the same processes: a round is a race, not a start-up).
        assert _lines_within(procs) == ["ready\n"] * OPENERS
        for round_ in range(ROUNDS):
            for p in procs:
                assert p.stdin is not None
                p.stdin.write(f"{tmp_path / f'new-{round_}.db'}\n")
                p.stdin.flush()
            assert _lines_within(procs) == ["opened\n"] * OPENERS, f"round {round_}"
        outputs = [p.communicate(timeout=60) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.communicate()
    codes = [p.returncode for p in procs]
    assert codes == [0] * OPENERS, [err for _, err in outputs if err]
    assert {path.name for path in tmp_path.glob("new-*.db")} == {f"new-{n}.db" for n in range(ROUNDS)}
