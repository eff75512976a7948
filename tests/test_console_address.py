"""``console`` says where it serves: the line an operator opens in a browser, right even when
the port was left to the system (``--port 0``)."""

from __future__ import annotations

import os
import re
import select
import subprocess
import time
from pathlib import Path

import httpx2

from console_support import create_store
from http_support import AGENT_TOKEN, OPERATOR_TOKEN, SCRIPT


def test_the_console_prints_the_address_it_serves_and_that_address_answers(tmp_path: Path) -> None:
    db_path = str(tmp_path / "console.db")
    create_store(db_path)
    env = {**os.environ, "ESCALATION_AGENT_TOKEN": AGENT_TOKEN, "ESCALATION_OPERATOR_TOKEN": OPERATOR_TOKEN}
    with subprocess.Popen(
        [SCRIPT, "console", "--db", db_path, "--port", "0"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    ) as process:
        try:
            assert process.stdout is not None
            deadline = time.monotonic() + 20
            ready: list[object] = []
            while not ready and process.poll() is None and time.monotonic() < deadline:
                ready, _, _ = select.select([process.stdout], [], [], 0.2)
            assert ready, f"console printed nothing within 20 s (exit {process.poll()})"
            line = process.stdout.readline()
            found = re.match(r"Console: (http://127\.0\.0\.1:(\d+)/) ", line)
            assert found, line
            assert int(found[2]) > 0  # the bound port, not the 0 asked for
            with httpx2.Client(base_url=found[1]) as browser:
                login = browser.get("/login")
            assert login.status_code == 200
            assert 'name="token"' in login.text
        finally:
            process.terminate()
            process.wait(timeout=10)
