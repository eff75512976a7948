"""Small edges the attack run found (issue 16, item 9): a wait with no bound, notifier
commands that outlive their attempt or hold up the CLI, stdin lines nobody answered, and
text limits that count characters where bytes are what things cost."""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import sys
import uuid
from pathlib import Path

import anyio
import pytest

from bounds import HUNG_AFTER
from conftest import INITIALIZE, INITIALIZED, connect
from mcp_server_escalation.models.limits import TEXT_MAX, WAIT_MAX_SECONDS
from mcp_server_escalation.services.background import CLI_AFTER_WORK_SECONDS, CUT_SHORT
from mcp_server_escalation.services.notifiers import DeliveryFailed, Notifier, send
from operator_support import SCRIPT, deliveries, eventually, receiver, run_cli, write_config

pytestmark = pytest.mark.both_backends

# -- wait_seconds -------------------------------------------------------------------------


@pytest.mark.parametrize("wait", [-1, math.nan, math.inf, WAIT_MAX_SECONDS + 1, 1e308])
async def test_get_escalation_refuses_a_wait_outside_its_bounds_and_names_it(
    db_path: str, wait: float
) -> None:
    async with connect(db_path) as agent:
        await agent.call("start_task", title="wait", task_id="wait")
        asked = await agent.call("raise_escalation", task_id="wait", reason="Which?")
        error = await agent.error(
            "get_escalation", escalation_id=asked["escalation"]["escalation_id"], wait_seconds=wait
        )
    assert "wait_seconds" in error
    if math.isfinite(wait):
        bound = "must be at least 0" if wait < 0 else f"must be at most {WAIT_MAX_SECONDS:g}"
        assert bound in error
    else:  # JSON has no NaN or infinity: a client sends null, or the literal that Python writes
        assert (
            "wait_seconds: must be a number" in error or "wait_seconds: must be a finite number" in error
        ), error


# -- notifier commands --------------------------------------------------------------------


def _running(pid: int) -> bool:
    """Is ``pid`` a live process (a zombie nobody reaped yet is not)?"""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.parametrize("status", [0, 1])
async def test_a_notifier_command_that_backgrounds_a_child_leaves_nothing_running(
    tmp_path: Path, status: int
) -> None:
    # The child keeps the command's stderr open: the attempt once waited for it until its
    # timeout, failed, left the child running and was retried, one orphan per retry.
    pid_file = tmp_path / "child.pid"
    command = Notifier("command", f'sleep 120 & echo $! > "{pid_file}"; exit {status}')
    payload = {"escalation_id": 1, "event": "created", "text": "t"}
    with anyio.fail_after(60):  # the send's own bound (20 s), then the child's end
        if status == 0:
            await send(command, payload, limit_seconds=20)
        else:
            with pytest.raises(DeliveryFailed) as failed:
                await send(command, payload, limit_seconds=20)
            assert str(failed.value) == "command exited with status 1"
        child = int(pid_file.read_text())
        await eventually(lambda: not _running(child), 60, "the backgrounded child was stopped")


# A daemon: forks, leaves the session (and so the process group), forks again, and writes
# the pid of the process that stays.
DAEMON = (
    "import os, sys, time\n"
    "if os.fork(): sys.exit(0)\n"
    "os.setsid()\n"
    "if os.fork(): sys.exit(0)\n"
    "open(sys.argv[1], 'w').write(str(os.getpid()))\n"
    "time.sleep(120)\n"
)


@pytest.mark.parametrize("ends", ["exits 0", "exits 1", "times out"])
async def test_a_notifier_command_that_daemonises_twice_leaves_nothing_running(
    tmp_path: Path, ends: str
) -> None:
    # Killing the process group missed whatever left it: one orphan per attempt. Marking the
    # attempt's environment missed a daemon started with an emptied one (env -i).
    script = tmp_path / "daemon.py"
    script.write_text(DAEMON)
    pids = [tmp_path / "daemon.pid", tmp_path / "setsid.pid", tmp_path / "bare.pid"]
    starts = (
        f'"{sys.executable}" "{script}" "{pids[0]}"; '
        f"setsid sh -c 'sleep 120 & echo $! > \"{pids[1]}\"; wait' < /dev/null > /dev/null 2>&1 & "
        f'env -i "{sys.executable}" "{script}" "{pids[2]}"; '
        f'while [ ! -s "{pids[0]}" ] || [ ! -s "{pids[1]}" ] || [ ! -s "{pids[2]}" ]; do sleep 0.05; done; '
    )
    command = Notifier(
        "command", starts + {"exits 0": "exit 0", "exits 1": "exit 1", "times out": "sleep 120"}[ends]
    )
    payload = {"escalation_id": 1, "event": "created", "text": "t"}
    with anyio.fail_after(60):  # the send's own bound (20 s), then the daemons' end
        if ends == "exits 0":
            await send(command, payload, limit_seconds=20)
        else:
            with pytest.raises(DeliveryFailed):
                await send(command, payload, limit_seconds=2 if ends == "times out" else 20)
        for pid_file in pids:
            daemon = int(pid_file.read_text())
            await eventually(lambda daemon=daemon: not _running(daemon), 30, "the daemon was stopped")


async def test_a_hanging_webhook_does_not_hold_up_cli_commands(db_path: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    async with connect(db_path) as agent:  # an agent's server with no [notify] table
        await agent.call("start_task", title="hang", task_id="hang")
        asked = await agent.call("raise_escalation", task_id="hang", reason="Which?")
    escalation_id = asked["escalation"]["escalation_id"]
    with receiver(hold=True) as hook:
        config = write_config(
            tmp_path / "notify.toml", webhook_url=hook.url, timeout_seconds=600, retry_seconds=600
        )
        cli = ("--db", db_path, "--config", str(config), "escalations", "list")
        code, _, err = await run_cli(*cli, home=home)  # its hang guard is far below 600 s
        [cut] = await deliveries(db_path, escalation_id)
        again, _, _ = await run_cli(*cli, home=home)
        [after] = await deliveries(db_path, escalation_id)
        requests = len(hook.requests)
    assert code == 0, err
    assert again == 0
    # The command returned (it did not wait out the notifier's 600 s: the webhook never
    # answers) and ended the delivery pass itself, shortly after its own work; the attempt
    # it cut short counts as failed, so the next command does not wait on it again.
    assert CUT_SHORT.format(seconds=CLI_AFTER_WORK_SECONDS) in (cut.last_error or "")
    assert (cut.delivered_at, cut.attempts) == (None, 1)
    assert "cut short" in (cut.last_error or "")
    assert after.attempts == 1
    assert requests == 1


# -- malformed stdin lines ----------------------------------------------------------------

DEEP = "[" * 1000 + "]" * 1000
MALFORMED = [
    # (line, the id the answer must carry, its error code)
    (
        r'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_task","arguments":{"task_id":"a\ud800"}}}',
        2,
        -32700,
    ),
    (r'{"jsonrpc":"2.0","method":"ping","params":{"x":"\udfff"},"id":"s-3"}', "s-3", -32700),
    (
        '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"get_task","arguments":{"x":'
        + DEEP
        + "}}}",
        4,
        -32700,
    ),
    ('{"jsonrpc":"2.0","method":"ping","params":' + DEEP + ',"id":5}', 5, -32700),
    ('{"jsonrpc":"2.0","id":6,"method":', 6, -32700),
    ('{"jsonrpc":"2.0","id":7,"method":7}', 7, -32600),
    (r'{"jsonrpc":"2.0","id":"x\ud800","method":"ping"}', None, -32700),
    ("this is not json", None, -32700),
]
SILENT = [
    # A notification and a response are never answered, however malformed.
    r'{"jsonrpc":"2.0","method":"notifications/progress","params":{"x":"\ud800"}}',
    r'{"jsonrpc":"2.0","id":99,"result":{"x":"\ud800"}}',
]


@pytest.mark.sqlite_only  # the stdio transport's answers: no line here reaches the store
async def test_malformed_stdin_lines_are_answered_with_a_json_rpc_error(db_path: str) -> None:
    ping = {"jsonrpc": "2.0", "id": 100, "method": "ping"}
    raw = "\n".join(
        [
            json.dumps(INITIALIZE),
            json.dumps(INITIALIZED),
            *SILENT,
            *(m[0] for m in MALFORMED),
            json.dumps(ping),
        ]
    )
    with anyio.fail_after(HUNG_AFTER):
        async with await anyio.open_process([str(SCRIPT), "--db", db_path], stderr=None) as process:
            assert process.stdin is not None
            assert process.stdout is not None
            await process.stdin.send(raw.encode() + b"\n")
            await process.stdin.aclose()
            output = b"".join([chunk async for chunk in process.stdout])
            assert await process.wait() == 0
    answers = [json.loads(line) for line in output.splitlines() if line.strip()]
    errors = [(a["id"], a["error"]["code"]) for a in answers if "error" in a]
    assert errors == [(request_id, code) for _, request_id, code in MALFORMED]
    assert answers[-1] == {"jsonrpc": "2.0", "id": 100, "result": {}}
    assert all(len(a["error"]["message"]) <= 300 for a in answers if "error" in a)


ODD_IDS = ["null", "1.5", "2.0", "1e3", "true", "false", '{"a":1}', "[1]"]


@pytest.mark.sqlite_only  # the stdio transport's answers: no line here reaches the store
@pytest.mark.parametrize("transport", ["loop", "threads"])
async def test_requests_with_ids_json_rpc_refuses_and_two_messages_on_a_line_are_answered_as_it_says(
    db_path: str, transport: str
) -> None:
    """A request's id is a string or an integer: any other is an Invalid Request answered
    with the id null (the SDK read such a request as a notification and answered nothing).
    Two messages on one line are one parse error, id null (it was addressed to the second).
    Both transports alike: the SDK's threaded one (ESCALATION_STDIO=threads, a file or a
    terminal on stdin) answered none of the odd ids."""
    odd = [f'{{"jsonrpc":"2.0","id":{value},"method":"ping"}}' for value in ODD_IDS]
    lines = [
        json.dumps(INITIALIZE),
        json.dumps(INITIALIZED),
        *odd,
        '{"jsonrpc":"2.0","id":7,"method":"ping"}{"jsonrpc":"2.0","id":8,"method":"ping"}',
        '{"jsonrpc":"2.0","id":9,"method":"ping"} {"jsonrpc":"2.0","id":10,"method":"ping"}',
        # an "id" that is not the request's own is no reason to refuse; a notification stays unanswered
        '{"jsonrpc":"2.0","id":11,"method":"ping","params":{"_meta":{"id":null}}}',
        '{"jsonrpc":"2.0","method":"notifications/progress","params":{"id":null,"progress":1,"progressToken":1}}',
    ]
    with anyio.fail_after(HUNG_AFTER):
        env = {**os.environ, "ESCALATION_STDIO": transport}
        async with await anyio.open_process([str(SCRIPT), "--db", db_path], stderr=None, env=env) as process:
            assert process.stdin is not None
            assert process.stdout is not None
            await process.stdin.send("\n".join(lines).encode() + b"\n")
            await process.stdin.aclose()
            output = b"".join([chunk async for chunk in process.stdout])
            assert await process.wait() == 0
    answers = [json.loads(line) for line in output.splitlines() if line.strip()][1:]
    errors = sorted((a["error"]["code"], str(a["id"])) for a in answers if "error" in a)
    assert errors == [(-32700, "None")] * 2 + [(-32600, "None")] * len(ODD_IDS)
    assert [a for a in answers if "result" in a] == [{"jsonrpc": "2.0", "id": 11, "result": {}}]


# -- characters, not bytes ----------------------------------------------------------------


async def test_text_limits_say_they_count_characters_and_wide_characters_cost_bounded_bytes(
    db_path: str,
) -> None:
    wide = "\U0001f600"  # four bytes in UTF-8
    async with connect(db_path) as agent:
        instructions = agent.client.instructions
        await agent.call("start_task", title="wide", task_id="wide")
        stored = await agent.call("report_progress", task_id="wide", note=wide * TEXT_MAX)
        over = await agent.error("report_progress", task_id="wide", note=wide * (TEXT_MAX + 1))
    # Said once, in the server's instructions, not in every long text's description.
    assert instructions is not None
    assert "Text limits (maxLength) count characters, not bytes." in instructions
    assert stored["directive"] == "proceed"
    assert "note" in over
    assert f"{TEXT_MAX} characters" in over


def _left(marker: str) -> list[int]:
    """The live processes whose command line holds ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            words = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if entry.name.isdigit() and marker.encode() in words and _running(int(entry.name)):
            found.append(int(entry.name))
    return found


@pytest.mark.parametrize(
    "ending",
    ["kill -9 $PPID", "trap 'kill -KILL 0' EXIT; exit 0"],
    ids=["kills its parent", "kills its own group"],
)
async def test_a_notifier_command_that_kills_its_reaper_leaves_no_process_behind(
    tmp_path: Path, ending: str
) -> None:
    """A command that kills the process watching it (its parent, or its whole group on exit)
    left its children, in its group and out of it, to init: five or six per attempt."""
    marker = str(uuid.uuid4().int)[:6]  # digits: a part of each child's sleep, to find them by
    sleeps = " ".join(f"sleep 1{n}{marker}.5 &" for n in range(3))
    escaped = f"setsid sh -c 'sleep 2{marker}.5 & sleep 3{marker}.5' < /dev/null > /dev/null 2>&1 &"
    command = Notifier("command", f"{sleeps} {escaped} sleep 0.3; {ending}")
    payload = {"escalation_id": 1, "event": "created", "text": "t"}
    try:
        with anyio.fail_after(60), contextlib.suppress(DeliveryFailed):
            await send(command, payload, limit_seconds=20)
        await eventually(lambda: not _left(f"{marker}.5"), 30, "every child of the command ended")
    finally:
        left = _left(f"{marker}.5")
        for pid in left:  # what a failing run leaves, ended here (they are this test's)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    assert left == []
