"""``mcp-server-escalation demo`` as a newcomer runs it: the installed console script.

The demo starts the real server (a stdio subprocess) and the operator CLI (another process)
itself; these tests run it as a subprocess of the interpreter's own ``bin`` folder (or its
command in this process), read what it printed, and then open the store it names with a
real server (conftest ``connect``) and the operator CLI to check that exactly the records
it claims are there.
"""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import anyio

from bounds import DEMO_HUNG_AFTER
from conftest import connect, evidence_of
from in_process import run_main
from mcp_server_escalation.cli.demo import GUIDANCE, IN_SCOPE, OUT_OF_SCOPE, SCOPE
from operator_support import flat

SCRIPT = Path(sys.executable).parent / "mcp-server-escalation"
STORE_ENV = ("ESCALATION_DB", "ESCALATION_CONFIG", "ESCALATION_PROMPTS", "XDG_DATA_HOME", "TMPDIR")

# The numbered lines, in order: the tool (or actor) each step names first.
STEP_HEADS = [
    "server",
    "start_task",
    "check_edit",
    "record_failure",
    "report_progress",
    "record_failure",
    "report_progress",
    "record_failure",
    "report_progress",
    "operator",
    "operator",
    "get_escalation",
    "acknowledge",
    "check_edit",
    "get_feedback",
]
# A step's text may start on the next line: a path longer than the line goes on its own.
STEP_LINE = re.compile(r"^\s?(\d+)\. (\S+)(?:\s+(.*))?$")
# Where a step's text starts, and its wrapped lines continue.
STEP_TEXT_COLUMN = 20


# An absolute path: as long as where the store and the clone (and its venv) happen to be.
ABSOLUTE_PATH = re.compile(r"(?<![\w.])/[^\s\"',;()]+")


def fits_a_pipe(line: str) -> bool:
    """The line fits 80 columns once each absolute path in it is shortened to ``/p``, or it is
    one word (an id) longer than a line."""
    return len(ABSOLUTE_PATH.sub("/p", line)) <= 80 or " " not in line.strip()


@dataclass
class Run:
    """One finished demo process."""

    returncode: int
    stdout: str
    stderr: str

    def steps(self) -> list[tuple[int, str, str]]:
        """(number, head, rest) of every numbered step, its wrapped lines joined."""
        found: list[tuple[int, str, str]] = []
        for line in self.stdout.splitlines():
            match = STEP_LINE.match(line)
            if match:
                found.append((int(match[1]), match[2], match[3] or ""))
            elif found and line.startswith(" " * STEP_TEXT_COLUMN) and line.strip():
                number, head, rest = found[-1]
                found[-1] = (number, head, f"{rest} {line.strip()}".lstrip())
        return found

    def step(self, number: int) -> str:
        """The text of step ``number`` after its head."""
        return next(rest for n, _, rest in self.steps() if n == number)


def _environment(tmp: Path, home: Path | None) -> dict[str, str]:
    environment = {k: v for k, v in os.environ.items() if k not in STORE_ENV}
    environment["XDG_DATA_HOME"] = str(tmp / "xdg-data")
    environment["TMPDIR"] = str(tmp)
    if home is not None:
        environment.pop("XDG_CONFIG_HOME", None)
        environment["HOME"] = str(home)
    return environment


async def demo(*args: str, tmp: Path, home: Path | None = None) -> Run:
    """Run ``mcp-server-escalation [args]`` with a private temp and data folder (and, when
    given, ``home`` as the user's home, where the per-user config is looked for)."""
    with anyio.fail_after(DEMO_HUNG_AFTER):
        done = await anyio.run_process(
            [str(SCRIPT), *args], check=False, env=_environment(tmp, home), cwd=tmp
        )
    return Run(done.returncode, done.stdout.decode(), done.stderr.decode())


async def demo_in_process(*args: str, tmp: Path) -> Run:
    """The same run with the command in this process (``in_process.py``); its server is still
    the installed script, started by the demo. The installed demo itself runs in the tests of
    the throw-away store and of a reader that leaves early."""
    code, out, err = await run_main(list(args), env=_environment(tmp, None), cwd=tmp)
    return Run(code, out.decode(), err.decode())


async def test_demo_plays_the_whole_loop_and_leaves_the_records_it_claims(tmp_path: Path) -> None:
    db = tmp_path / "kept" / "demo.db"
    db.parent.mkdir()
    run = await demo_in_process("demo", "--keep", "--db", str(db), tmp=tmp_path)

    assert run.returncode == 0, run.stderr
    steps = run.steps()
    assert [n for n, _, _ in steps] == list(range(1, len(STEP_HEADS) + 1))
    assert [head for _, head, _ in steps] == STEP_HEADS
    task_id = re.search(r"task (demo-[0-9a-f]{6}), scope", run.stdout)[1]  # type: ignore[index]
    assert run.step(1).startswith(f"{SCRIPT} --db {db}")
    assert f"scope {SCOPE}; 80% of the tests passed before" in run.step(2)
    assert run.step(3) == f"{IN_SCOPE}: inside the scope, allowed"
    assert run.step(4) == f"TypeError at {IN_SCOPE}:12 (1 in a row; escalates at 3)"
    assert run.step(5) == "tests 8/10 = 80%, not above 80% (1 of 3 runs without improvement)"
    assert run.step(7) == "tests 7/10 = 70%, not above 80% (2 of 3 runs without improvement)"
    assert run.step(8).endswith("3 in a row -> escalation 1 (repeated error), task paused")
    assert run.step(9).endswith("-> test stall joins escalation 1 (triggers: repeated error and test stall)")
    assert run.step(10) == "$ mcp-server-escalation escalations show 1   (another process)"
    view = [line for line in run.stdout.splitlines() if line.startswith("    | ")]
    assert any(all(w in line for w in ("Escalation 1", "repeated error", "pending")) for line in view)
    assert run.step(11).endswith(f"-> escalation 1 is now resolved; task {task_id} is paused")
    assert re.fullmatch(
        r"waited \d+\.\d s in get_escalation\(1, wait_seconds=30\): guidance from cli\S*", run.step(12)
    )
    assert run.step(13) == "escalation 1 is resolved; task active again"
    assert run.step(14).startswith(f"{OUT_OF_SCOPE}: refused (")
    assert run.step(14).endswith("-> escalation 2 (scope deviation), task paused")
    # Every agent-facing step prints the directive the agent got, verbatim from the server.
    directives = re.findall(r"^    agent <- (proceed|pause|stop): ", run.stdout, flags=re.MULTILINE)
    assert directives == ["proceed"] * 6 + ["pause"] * 3 + ["proceed", "pause"]
    assert "    | - Escalation 1 (repeated error): guidance by cli" in run.stdout
    assert f"The store is kept at {db}." in flat(run.stdout)
    assert "escalations respond 2 --approve" in flat(run.stdout)
    assert f"claude mcp add escalation -- {SCRIPT}" in flat(run.stdout)
    pasted = run.stdout.split("or in .mcp.json:\n")[1].split("\n\n")[0]
    assert json.loads(pasted) == {"mcpServers": {"escalation": {"command": str(SCRIPT), "args": []}}}
    assert "every step got the answer it expected" in run.stdout
    assert run.stderr == ""
    # A pipe is 80 columns wide: every line fits, but a path or an id longer than a line.
    assert [line for line in run.stdout.splitlines() if not fits_a_pipe(line)] == []

    # The store it names holds exactly what it printed.
    with anyio.fail_after(30):
        # Operator role: looking at an escalation must not count as delivering it.
        async with connect(str(db), role="operator") as reader:
            view = await reader.call("get_task", task_id=task_id)
            listed = await reader.call("list_escalations", status="all")
            first = (await reader.call("get_escalation", escalation_id=1))["escalation"]
            second = (await reader.call("get_escalation", escalation_id=2))["escalation"]
            guidance = await reader.call("get_guidance", task_id=task_id)
        code, tasks, _ = await run_main(["--db", str(db), "tasks", "list", "--json"], env=os.environ)

    assert code == 0
    assert [t["task_id"] for t in json.loads(tasks)] == [task_id]
    task = view["task"]
    assert task["status"] == "paused"
    assert task["agent_id"] == "demo-agent"
    assert task["scope"] == [SCOPE]
    assert view["modified_files"] == [IN_SCOPE]
    assert [(r["passed"], r["failed"], r["pass_rate"]) for r in view["test_history"]] == [
        (8, 2, 0.8),
        (7, 3, 0.7),
        (8, 2, 0.8),
    ]
    assert not any(r["improved"] for r in view["test_history"])
    assert view["failure_records"] == 1
    assert view["failure_occurrences"] == 3
    assert view["escalation_ids"] == [1, 2]
    assert view["pending_escalation"]["escalation_id"] == 2

    assert listed["total"] == 2
    assert first["task_id"] == second["task_id"] == task_id
    assert first["type"] == "repeated_error"
    assert [t["type"] for t in first["triggers"]] == ["repeated_error", "test_stall"]
    assert first["status"] == "resolved"
    assert first["response"]["response_type"] == "guidance"
    assert first["response"]["content"] == GUIDANCE
    assert first["response"]["responder"].startswith("cli")
    assert first["delivered_at"] is not None
    assert first["acknowledged_at"] is not None
    occurrences = evidence_of(first, "repeated_error")["occurrences"]["at_firing"]
    assert [(o["file"], o["line"]) for o in occurrences] == [(IN_SCOPE, 12), (IN_SCOPE, 19), (IN_SCOPE, 27)]
    assert second["type"] == "scope_deviation"
    assert second["status"] == "pending"
    assert second["response"] is None
    assert OUT_OF_SCOPE in json.dumps(second["triggers"])

    # The one failure record, as the guidance surface reports it.
    [record] = guidance["items"]
    assert record["failure_id"] == evidence_of(first, "repeated_error")["failure_id"]
    assert record["occurrence_count"] == 3


async def test_demo_without_keep_removes_its_throw_away_store_and_ignores_the_per_user_config(
    tmp_path: Path,
) -> None:
    # One run for both: a per-user config that would move the repeated-error threshold and
    # notify by a command must change nothing the demo does.
    home = tmp_path / "home"
    config = home / ".config" / "mcp-server-escalation" / "config.toml"
    config.parent.mkdir(parents=True)
    marker = tmp_path / "notified"
    config.write_text(
        f"[thresholds]\nsame_error_repeated = 5\n[notify]\ncommand = 'touch {marker}'\n", encoding="utf-8"
    )

    run = await demo("demo", tmp=tmp_path, home=home)

    assert run.returncode == 0, run.stderr
    assert not marker.exists()
    server = re.fullmatch(
        r"\S+ --db (\S+) +\(stdio subprocess; a temp store, removed at the end\)", run.step(1)
    )
    assert server is not None, run.step(1)
    store = Path(server[1])
    assert store.parent.parent == tmp_path  # a temp folder under TMPDIR (this test's folder)
    assert store.parent.name.startswith("mcp-escalation-demo-")
    assert not store.parent.exists()
    assert "The throw-away store was removed" in run.stdout
    assert "every step got the answer it expected" in run.stdout


async def test_demo_on_a_file_that_is_not_a_store_fails_naming_the_server_step(tmp_path: Path) -> None:
    not_a_store = tmp_path / "notes.db"
    content = b"these are my notes, not an SQLite database\n" * 100
    not_a_store.write_bytes(content)

    run = await demo_in_process("demo", "--db", str(not_a_store), tmp=tmp_path)

    assert run.returncode == 1
    assert "error: demo step 1 (start the server) failed:" in run.stderr
    # The server's own words, from its stderr (wrapped, each line behind "server: ").
    assert "file is not a database" in flat(run.stderr.replace("server: ", ""))
    assert run.steps() == []
    assert not_a_store.read_bytes() == content


async def test_demo_stops_at_the_step_whose_answer_differs_from_the_script(tmp_path: Path) -> None:
    # A real configuration that moves the repeated-error threshold: the third identical
    # error no longer escalates, and the demo names that step instead of carrying on.
    config = tmp_path / "config.toml"
    config.write_text("[thresholds]\nsame_error_repeated = 4\n", encoding="utf-8")

    run = await demo_in_process(
        "--config", str(config), "demo", "--db", str(tmp_path / "demo.db"), tmp=tmp_path
    )

    assert run.returncode == 1
    assert [n for n, _, _ in run.steps()] == list(range(1, 8))
    assert (
        "error: demo step 8 (record_failure escalates) failed: expected a repeated_error escalation, got None"
        in flat(run.stderr)
    )


async def test_demo_refuses_an_in_memory_store(tmp_path: Path) -> None:
    run = await demo_in_process("demo", "--db", ":memory:", tmp=tmp_path)

    assert run.returncode == 2
    assert "needs a store file" in run.stderr
    assert run.stdout == ""


async def test_a_reader_that_leaves_early_ends_the_demo_quietly(tmp_path: Path) -> None:
    # ``| head -3``: the reader goes once it has its lines; the demo must not report a failed step.
    errors = tmp_path / "stderr.txt"
    environment = {k: v for k, v in os.environ.items() if k not in STORE_ENV}
    environment.update(XDG_DATA_HOME=str(tmp_path / "xdg-data"), TMPDIR=str(tmp_path), ERRORS=str(errors))
    script = '"$@" 2>"$ERRORS" | head -3 >/dev/null; echo "${PIPESTATUS[0]}"'
    with anyio.fail_after(DEMO_HUNG_AFTER):
        done = await anyio.run_process(
            ["bash", "-c", script, "bash", str(SCRIPT), "demo"], check=False, env=environment, cwd=tmp_path
        )

    said = errors.read_text()
    assert "Broken pipe" not in said, said
    assert "BrokenPipeError" not in said, said
    assert "demo step" not in said, said
    assert done.stdout.decode().strip() == "0"
    assert not list(tmp_path.glob("mcp-escalation-demo-*"))  # the throw-away store is still removed


def test_a_line_fits_a_pipe_when_only_its_paths_make_it_longer() -> None:
    deep = "/home/someone/" + "a-long-folder-name/" * 6 + ".ci-venv/bin/mcp-server-escalation"
    assert fits_a_pipe(f'        "command": "{deep}",')
    assert fits_a_pipe(f"    --db {deep}.db escalations show 1")
    assert fits_a_pipe("x" * 120)  # one word: an id longer than a line
    assert not fits_a_pipe("word " * 17)
    assert not fits_a_pipe(f"{'word ' * 16} {deep}")
