"""The operator CLI's watching and measuring commands, as real processes on a shared store.

``escalations watch`` follows changes committed by other processes; ``stats`` reports on a
store with known resolution times; ``db backup`` copies a store that is being written to.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import Process

from conftest import FakeClock, connect
from mcp_server_escalation.services import escalation_answers, escalation_raising, tasks
from mcp_server_escalation.services.runtime import open_runtime
from mcp_server_escalation.settings import Settings
from mcp_server_escalation.store.migrations import MIGRATIONS
from operator_support import SCRIPT, cli_env, flat, run_cli

pytestmark = pytest.mark.both_backends

# Runs the command (argv[1:]) as a terminal runs it in the foreground: with Ctrl-C's default
# action. A suite started in the background (``pytest &``) has SIGINT ignored, every process it
# starts inherits that, and the watch then rightly ignores the Ctrl-C the test sends it.
AT_A_TERMINAL = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.argv[1], sys.argv[1:])"
)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """An XDG data folder of the test's own."""
    path = tmp_path / "xdg-data"
    path.mkdir()
    return path


class Watcher:
    """``escalations watch`` as a running process, read line by line."""

    def __init__(self, process: Process) -> None:
        self.process = process
        self._out = b""
        self._err = b""

    async def ready(self) -> None:
        """Wait for the line that says the watch has started (its starting point is fixed)."""
        assert self.process.stderr is not None
        while b"watching " not in self._err:
            self._err += await self.process.stderr.receive()

    async def line(self) -> str:
        """The next line on stdout."""
        assert self.process.stdout is not None
        while b"\n" not in self._out:
            self._out += await self.process.stdout.receive()
        line, self._out = self._out.split(b"\n", 1)
        return line.decode()


async def _watch(db_path: str, home: Path, *args: str) -> Watcher:
    # Operator commands open only an existing store: the watch starts before any agent.
    code, _, err = await run_cli("--db", db_path, "db", "init", home=home)
    assert code == 0, err
    process = await anyio.open_process(
        [sys.executable, "-c", AT_A_TERMINAL, str(SCRIPT), "--db", db_path, "escalations", "watch", *args],
        env=cli_env(home, COLUMNS="80"),
    )
    watcher = Watcher(process)
    with anyio.fail_after(30):
        await watcher.ready()
    return watcher


async def test_watch_prints_an_escalation_created_by_another_process(db_path: str, home: Path) -> None:
    watcher = await _watch(db_path, home, "--json", "--once", "--timeout", "30")
    async with connect(db_path) as agent:  # this test process is "another process"
        await agent.call("start_task", title="Wire the API", task_id="w-json")
        raised = await agent.call("raise_escalation", task_id="w-json", reason="Which auth scheme?")
        with anyio.fail_after(60):  # a hang guard; the line comes when the watch sees it
            line = await watcher.line()
    with anyio.fail_after(60):  # --once: it ends after that line (a hang guard)
        code = await watcher.process.wait()

    printed = json.loads(line)
    assert code == 0
    assert printed["event"] == "created"
    assert printed["escalation"]["escalation_id"] == raised["escalation"]["escalation_id"]
    assert printed["escalation"]["task_id"] == "w-json"
    assert printed["escalation"]["status"] == "pending"
    assert printed["escalation"]["headline"] == "The agent asks a human: Which auth scheme?"


async def test_watch_follows_one_task_until_interrupted_and_shows_a_cli_answer(
    db_path: str, home: Path
) -> None:
    watcher = await _watch(db_path, home, "--task", "w-mine", "--timeout", "60")
    lines: list[str] = []
    async with connect(db_path) as agent:
        await agent.call("start_task", title="Other work", task_id="w-other")
        await agent.call("raise_escalation", task_id="w-other", reason="Not watched")
        await agent.call("start_task", title="Fix the adder", task_id="w-mine")
        raised = await agent.call("raise_escalation", task_id="w-mine", reason="Which operand type?")
        escalation_id = raised["escalation"]["escalation_id"]
        with anyio.fail_after(60):
            lines.append(await watcher.line())
            headline = await watcher.line()  # under each change: its headline
        code, _, err = await run_cli(
            "--db", db_path, "escalations", "respond", str(escalation_id), "--guidance", "Use int", home=home
        )
        with anyio.fail_after(60):
            lines.append(await watcher.line())
    watcher.process.send_signal(signal.SIGINT)  # Ctrl-C
    with anyio.fail_after(60):
        stopped = await watcher.process.wait()

    assert code == 0, err
    created, answered = (line.split() for line in lines)
    assert created[1:5] == ["created", f"#{escalation_id}", "pending", "ask_human"]
    assert created[6] == "w-mine"
    assert headline == "  The agent asks a human: Which operand type?"
    assert max(len(line) for line in [*lines, headline]) <= 80
    assert answered[1:5] == ["answered", f"#{escalation_id}", "resolved", "ask_human"]
    assert stopped == 130


async def test_watch_once_without_any_change_ends_after_the_timeout_with_status_1(
    db_path: str, home: Path
) -> None:
    await run_cli("--db", db_path, "db", "init", home=home)
    code, out, err = await run_cli(
        "--db", db_path, "escalations", "watch", "--once", "--timeout", "0.5", home=home
    )
    assert code == 1
    assert out == ""
    assert "no escalation changed within 0.5 s" in err


async def _store_with_known_resolution_times(db_path: str) -> None:
    """Seven escalations whose answers took 1, 5, 10 and 30 minutes and 2 hours; one withdrawn;
    one pending for 3 hours; one pending for 10 minutes (its hour is not over)."""
    now = datetime.now(UTC)
    clock = FakeClock(now - timedelta(hours=3))
    settings = Settings(db_path=db_path, project_root="/work/project")
    async with open_runtime(settings, clock) as rt:
        for n, minutes in enumerate([1, 5, 10, 30, 120]):
            clock.now = now - timedelta(hours=3)
            await tasks.start_task(rt, title=f"Task {n}", task_id=f"s-{n}")
            raised = await escalation_raising.raise_escalation(rt, task_id=f"s-{n}", reason="Which way?")
            clock.advance(minutes=minutes)
            await escalation_answers.resolve_escalation(
                rt,
                escalation_id=raised.escalation.escalation_id,
                response_type="guidance",
                content="This way.",
                role="operator",
            )
        clock.now = now - timedelta(hours=3)
        started = await tasks.start_task(rt, title="Withdrawn", task_id="s-withdrawn")
        asked = await escalation_raising.raise_escalation(rt, task_id="s-withdrawn", reason="Never mind")
        await escalation_answers.resolve_escalation(
            rt,
            escalation_id=asked.escalation.escalation_id,
            response_type="withdraw",
            role="agent",
            held={started.task_id: started.task.generation},
        )
        await tasks.start_task(rt, title="Forgotten", task_id="s-old")
        await escalation_raising.raise_escalation(rt, task_id="s-old", reason="Anyone?")
        clock.now = now - timedelta(minutes=10)
        await tasks.start_task(rt, title="Fresh", task_id="s-new")
        await escalation_raising.raise_escalation(rt, task_id="s-new", reason="Just asked")


async def test_stats_reports_counts_median_p95_and_the_share_resolved_within_an_hour(
    db_path: str, home: Path
) -> None:
    await _store_with_known_resolution_times(db_path)
    code, out, err = await run_cli("--db", db_path, "stats", "--json", home=home)
    table_code, table, _ = await run_cli("--db", db_path, "stats", home=home)

    assert code == table_code == 0, err
    report = json.loads(out)
    assert report["total"] == 8
    assert report["by_type"] == {"ask_human": 8}
    assert report["by_status"] == {"pending": 2, "resolved": 5, "withdrawn": 1}
    assert report["by_type_and_status"] == {"ask_human": {"pending": 2, "resolved": 5, "withdrawn": 1}}
    resolution = report["resolution"]
    assert resolution["answered"] == 5
    assert resolution["median_seconds"] == 600.0
    assert resolution["p95_seconds"] == 7200.0
    assert resolution["within_hour"] == 4
    assert resolution["counted"] == 6  # five answers and the one pending for three hours
    assert resolution["within_hour_share"] == pytest.approx(0.6667)
    assert resolution["sc010_met"] is False
    assert "median 10 min, 95th percentile 2 h" in table
    assert "Resolved within 1 hour (target 95%): 4 of 6 (66.7%): not met" in table
    # The kind in words, as everywhere a person reads it.
    counts = ["question", "from", "the", "agent", "2", "5", "1", "8"]
    assert any(line.split() == counts for line in table.splitlines())
    assert "ask_human" not in table


async def _keep_writing(db_path: str, stop: anyio.Event, busy: anyio.Event, written: list[int]) -> None:
    async with connect(db_path) as agent:
        await agent.call(
            "start_task", title="Busy", task_id="b-busy", thresholds={"same_error_repeated": 1000}
        )
        n = 0
        while not stop.is_set():
            n += 1
            await agent.call("record_failure", task_id="b-busy", message=f"Error {n % 7}: boom", line=n)
            await agent.call("report_progress", task_id="b-busy", files_modified=[f"src/f{n % 50}.py"])
            written.append(n)
            if n == 5:
                busy.set()


def _check_copy(path: Path) -> dict[str, Any]:
    with sqlite3.connect(path) as conn:
        return {
            "integrity": conn.execute("PRAGMA integrity_check").fetchone()[0],
            "version": conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0],
            "journal": conn.execute("PRAGMA journal_mode").fetchone()[0],
            # One consistent snapshot: every record's count matches its occurrence rows.
            "mismatched": conn.execute(
                "SELECT COUNT(*) FROM failures f WHERE f.occurrence_count !="
                " (SELECT COUNT(*) FROM failure_occurrences o WHERE o.failure_seq = f.seq)"
            ).fetchone()[0],
            "occurrences": conn.execute("SELECT COUNT(*) FROM failure_occurrences").fetchone()[0],
        }


@pytest.mark.sqlite_only  # opens each copy as a SQLite file
async def test_db_backup_while_a_writer_is_active_yields_a_valid_consistent_store(
    db_path: str, tmp_path: Path, home: Path
) -> None:
    stop, busy = anyio.Event(), anyio.Event()
    written: list[int] = []
    runs = []
    with anyio.fail_after(90):
        async with anyio.create_task_group() as tg:
            tg.start_soon(_keep_writing, db_path, stop, busy, written)
            await busy.wait()
            for n in range(3):
                runs.append(
                    await run_cli("--db", db_path, "db", "backup", str(tmp_path / f"copy-{n}.db"), home=home)
                )
            stop.set()
    copies = [_check_copy(tmp_path / f"copy-{n}.db") for n in range(3)]
    listed = await run_cli("--db", str(tmp_path / "copy-2.db"), "tasks", "list", "--json", home=home)

    for code, out, err in runs:
        assert code == 0, err
        assert "(integrity ok)" in flat(out)  # wrapped where the copy's path falls
    latest = max(m.version for m in MIGRATIONS)
    for copy in copies:
        assert copy["integrity"] == "ok"
        assert copy["version"] == latest
        assert copy["journal"] == "delete"  # a standalone file, no WAL beside it
        assert copy["mismatched"] == 0
    # Taken one after another while the writer went on: each copy holds at least as much.
    assert 0 < copies[0]["occurrences"] <= copies[1]["occurrences"] <= copies[2]["occurrences"]
    assert copies[2]["occurrences"] <= len(written)
    assert listed[0] == 0
    assert [t["task_id"] for t in json.loads(listed[1])] == ["b-busy"]


async def test_db_backup_refuses_to_overwrite_without_force_and_explains_memory_stores(
    db_path: str, tmp_path: Path, home: Path
) -> None:
    async with connect(db_path) as agent:
        await agent.call("start_task", title="Anything", task_id="b-one")
    target = tmp_path / "copy.db"
    first = await run_cli("--db", db_path, "db", "backup", str(target), "--json", home=home)
    again = await run_cli("--db", db_path, "db", "backup", str(target), home=home)
    forced = await run_cli("--db", db_path, "db", "backup", str(target), "--force", home=home)
    memory = await run_cli("--db", ":memory:", "db", "backup", str(tmp_path / "m.db"), home=home)
    no_folder = await run_cli("--db", db_path, "db", "backup", str(tmp_path / "nope" / "c.db"), home=home)

    assert first[0] == 0, first[2]
    assert json.loads(first[1])["tasks"] == 1
    assert again[0] == 1
    assert again[1] == ""
    assert f"{target} already exists; pass --force to replace it" in flat(again[2])
    assert forced[0] == 0, forced[2]
    assert memory[0] == 1
    assert "in memory" in flat(memory[2])
    assert no_folder[0] == 1
    assert "does not exist" in flat(no_folder[2])
    assert "Traceback" not in again[2] + memory[2] + no_folder[2]


async def test_tasks_list_and_show_give_counters_limits_tests_and_escalations(
    db_path: str, home: Path
) -> None:
    async with connect(db_path) as agent:
        await agent.call("start_task", title="Fix the adder", task_id="t-full", scope=["src/**"])
        await agent.call(
            "report_progress", task_id="t-full", files_modified=["src/a.py"], tests_passed=3, tests_failed=2
        )
        await agent.call(
            "report_progress", task_id="t-full", files_modified=["src/b.py"], tests_passed=5, tests_failed=0
        )
        raised = await agent.call("raise_escalation", task_id="t-full", reason="Ship it?")
        await agent.call(
            "start_task", title="Quiet", task_id="t-quiet", thresholds={"spec_deviation_detected": False}
        )
    escalation_id = raised["escalation"]["escalation_id"]
    code, listed, err = await run_cli("--db", db_path, "tasks", "list", home=home)
    show_code, shown, show_err = await run_cli("--db", db_path, "tasks", "show", "t-full", home=home)
    quiet = await run_cli("--db", db_path, "tasks", "show", "t-quiet", home=home, COLUMNS="200")

    assert code == 0, err
    header, *rows = listed.splitlines()
    assert header.split()[:8] == [
        "TASK",
        "STATUS",
        "AGENT",
        "FILES",
        "SAME-ERR",
        "VERIFY",
        "PENDING",
        "TITLE",
    ]
    by_task = {row.split()[0]: row.split() for row in rows}
    # Only the run with failures is a verification attempt (a passing run verified).
    assert by_task["t-full"][1:7] == ["paused", "agent", "2/20", "0/3", "1/10", f"#{escalation_id}"]
    assert by_task["t-quiet"][6] == "none"
    assert show_code == 0, show_err
    lines = shown.splitlines()
    assert "files modified                     2     20  files modified exceeds" in lines
    assert "  src/a.py" in lines
    assert "  src/b.py" in lines
    assert any(line.split()[4:8] == ["3", "2", "60%", "yes"] for line in lines)
    assert any(line.split()[4:8] == ["5", "0", "100%", "yes"] for line in lines)
    assert any(f"#{escalation_id}  question from the agent  normal  pending" in line for line in lines)
    assert any(line.startswith("Directive: pause: ") for line in lines)
    # The scope check is said as the rule it is, as the escalation page says it, either way.
    assert "Other thresholds: edits outside the task's scope escalate; " in " ".join(shown.split())
    [others] = [line for line in quiet[1].splitlines() if line.startswith("Other thresholds: ")]
    assert others.startswith("Other thresholds: edits outside the task's scope do not escalate; blocker")
    assert "checks its scope" not in shown + quiet[1]
