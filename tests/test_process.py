"""A server started by the console script freezes what it built before serving out of the
collector's passes (``process.py``); ``main`` run by a caller leaves the caller's collector alone."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import INITIALIZE
from in_process import run_main

# The console script's entry point, with the frozen count printed once the process is ending
# (atexit: after the server has served and closed).
SCRIPT_THAT_TELLS = (
    "import atexit, gc, sys\n"
    "atexit.register(lambda: print('frozen', gc.get_freeze_count(), file=sys.stderr))\n"
    "from mcp_server_escalation.launch import script\n"
    "sys.argv[0] = 'mcp-server-escalation'\n"
    "sys.exit(script())\n"
)


def test_a_server_process_of_the_console_script_serves_with_its_start_up_frozen(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT_THAT_TELLS, "--db", str(tmp_path / "s.db"), "serve"],
        input=json.dumps(INITIALIZE).encode() + b"\n",
        capture_output=True,
        timeout=60,
        check=False,
    )

    assert done.returncode == 0, done.stderr.decode()
    assert json.loads(done.stdout.splitlines()[0])["result"]["serverInfo"]
    told = done.stderr.decode().split()
    # The SDK's and this package's modules, models and tools: tens of thousands of objects.
    assert int(told[told.index("frozen") + 1]) > 20_000


async def test_main_in_a_callers_process_freezes_nothing(tmp_path: Path) -> None:
    before = gc.get_freeze_count()

    code, out, _ = await run_main(
        ["--db", str(tmp_path / "s.db"), "serve"],
        stdin=json.dumps(INITIALIZE).encode() + b"\n",
        env=os.environ,
    )

    assert code == 0
    assert json.loads(out.splitlines()[0])["result"]["serverInfo"]
    # Frozen objects can still be freed (by reference counting), so the count may only fall.
    assert gc.get_freeze_count() <= before
