"""What tests/test_hooks_stop_failure.py and benchmarks/bench_stop_failure.py share: a command
hook started as the host starts one (a shell in a process group of its own, the event on its
stdin) and its whole group killed soon after, as a host that exits at once does."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path


def killed_after(shell_command: str, payload: bytes, cwd: Path, env: dict[str, str], after: float) -> None:
    """Run ``shell_command`` with ``payload`` on its stdin, then kill its process group
    ``after`` seconds after the event is written."""
    hook = subprocess.Popen(
        ["/bin/sh", "-c", shell_command],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=cwd,
        env=env,
        start_new_session=True,
    )
    assert hook.stdin is not None
    hook.stdin.write(payload)
    hook.stdin.close()
    time.sleep(after)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(hook.pid, signal.SIGKILL)
    hook.wait(timeout=10)
